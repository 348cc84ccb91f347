package replicator

import "sort"

// Partition is one replicated partition: a source topic-partition and its
// target topic. The partition number is kept.
type Partition struct {
	Source    string
	Target    string
	Partition int32
	// MaxBytes is the largest record batch the target topic accepts
	// (its max.message.bytes).
	MaxBytes int
	// TopicID is the source topic's id ("" when the cluster does not say):
	// a topic deleted and created again under the same name has a new one,
	// and progress stored for the old topic does not apply to it.
	TopicID string
	// TargetTopicID is the target topic's id ("" unknown): a target topic
	// deleted and created again has a new one, and what was copied to the
	// old one is gone (worker.targetReplaced).
	TargetTopicID string
}

// Assignment is the share of a flow's partitions one worker runs.
type Assignment struct {
	ID         int
	Partitions []Partition
}

// Assign spreads partitions over at most n assignments, round-robin in
// (topic, partition) order, so each topic's partitions are spread evenly.
// Empty assignments are not returned.
func Assign(parts []Partition, n int) []Assignment {
	if n < 1 {
		n = 1
	}
	sorted := append([]Partition(nil), parts...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Source != sorted[j].Source {
			return sorted[i].Source < sorted[j].Source
		}
		return sorted[i].Partition < sorted[j].Partition
	})
	if n > len(sorted) {
		n = len(sorted)
	}
	out := make([]Assignment, n)
	for i := range out {
		out[i].ID = i
	}
	for i, p := range sorted {
		out[i%n].Partitions = append(out[i%n].Partitions, p)
	}
	return out
}
