package service

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/clustercheck"
	"github.com/kmirror/kmirror/internal/policy"
	"github.com/kmirror/kmirror/internal/task"
)

// MinTargetMaxMessageBytes is the original product's floor for target topics'
// max.message.bytes: below it the original product's product cannot replicate at all.
// kmirror still works below it (its batches fit the target), but records
// larger than the target accepts stop their partition, so it warns.
const MinTargetMaxMessageBytes = 524288

const (
	maxMessageBytes = "max.message.bytes"
	// maxCheckedTopics bounds the topics whose configs one flow's check
	// asks for: a regex may select thousands, and the user waits.
	maxCheckedTopics = 200
	// maxBytesWarnings bounds the per-topic warnings; the preview shows
	// every topic's values anyway.
	maxBytesWarnings = 5
	// configsTimeout bounds the config look-ups, on top of Describe's.
	configsTimeout = 10 * time.Second
	// maxTopicChoices bounds the form's list of topics to pick from.
	maxTopicChoices = 1000
)

// TopicPreview is one topic a flow would replicate, with what the dry run
// learnt about its target.
type TopicPreview struct {
	policy.Pair
	// NewTarget: the target topic does not exist yet; the flow creates it
	// with the source's partition count and topic-level configs.
	NewTarget bool `json:"new_target,omitempty"`
	// SourceMaxMessageBytes is the source topic's effective
	// max.message.bytes; TargetMaxMessageBytes the target's (for a new
	// target: the value it will be created with, when the source sets it on
	// the topic). 0 when not known.
	SourceMaxMessageBytes int `json:"source_max_message_bytes,omitempty"`
	TargetMaxMessageBytes int `json:"target_max_message_bytes,omitempty"`
	// TargetTooSmall: the target accepts less than the source topic, or
	// less than MinTargetMaxMessageBytes; a warning says what happens.
	TargetTooSmall bool `json:"target_too_small,omitempty"`
}

// sourceTopicChoices are the topics of the direction's source side(s) that
// a task could replicate (internal ones left out), sorted.
func sourceTopicChoices(t task.Task, cur, per side, describe func(role string) (clustercheck.Description, bool)) []string {
	bySide := map[task.Side]side{task.SideCurrent: cur, task.SidePeer: per}
	out := []string{}
	for _, f := range t.Flows() {
		r := bySide[f.Source].role
		d, ok := describe(r)
		if !ok {
			continue
		}
		for _, tp := range d.Topics {
			if !policy.IsInternal(tp) {
				out = append(out, tp)
			}
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	return out[:min(len(out), maxTopicChoices)]
}

// checkMessageBytes compares, for every previewed topic, the source
// topic's max.message.bytes with what its target accepts (docs/TASKS.md, Replication guarantees, "Large
// messages"), filling in the previews and returning warnings.
// targetTopics are the topics of each described side (by role); a side
// missing from it could not be described, so its topics are not judged.
// The config look-ups of both sides run at once and are time-bounded: a
// failure is a warning, never a problem.
func (s *Service) checkMessageBytes(ctx context.Context, flows []FlowPreview, targetTopics map[string][]string, labels map[string]string, settings map[string]cluster.Settings) []string {
	var warnings []string
	need := map[string][]string{} // role -> topics whose configs are needed
	for _, f := range flows {
		if len(f.Topics) > maxCheckedTopics {
			warnings = append(warnings, fmt.Sprintf("flow %s: max.message.bytes is checked for the first %d of its %d topics only", f.Flow, maxCheckedTopics, len(f.Topics)))
		}
		existing, targetKnown := targetTopics[f.Target]
		for _, tp := range f.Topics[:min(len(f.Topics), maxCheckedTopics)] {
			need[f.Source] = append(need[f.Source], tp.Source)
			if targetKnown && slices.Contains(existing, tp.Target) {
				need[f.Target] = append(need[f.Target], tp.Target)
			}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, configsTimeout)
	defer cancel()
	type answer struct {
		configs map[string]map[string]clustercheck.ConfigValue
		err     error
	}
	answers := map[string]answer{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for role, topics := range need {
		slices.Sort(topics)
		topics = slices.Compact(topics)
		wg.Go(func() {
			c, err := s.kafka.TopicConfigs(ctx, settings[role], topics, []string{maxMessageBytes})
			mu.Lock()
			answers[role] = answer{c, err}
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, role := range []string{"current", "peer"} {
		if a, ok := answers[role]; ok && a.err != nil {
			warnings = append(warnings, "cannot read the topic configs of "+labels[role]+": "+a.err.Error()+": max.message.bytes was not checked there")
		}
	}
	value := func(role, topic string) (clustercheck.ConfigValue, int, bool) {
		a := answers[role]
		if a.err != nil {
			return clustercheck.ConfigValue{}, 0, false
		}
		cv, ok := a.configs[topic][maxMessageBytes]
		if !ok {
			return clustercheck.ConfigValue{}, 0, false
		}
		n, err := strconv.Atoi(cv.Value)
		return cv, n, err == nil && n > 0
	}

	var small []string
	for fi := range flows {
		f := &flows[fi]
		existing, targetKnown := targetTopics[f.Target]
		for i := range f.Topics[:min(len(f.Topics), maxCheckedTopics)] {
			tp := &f.Topics[i]
			srcCV, src, srcOK := value(f.Source, tp.Source)
			if srcOK {
				tp.SourceMaxMessageBytes = src
			}
			if !targetKnown {
				continue
			}
			if !slices.Contains(existing, tp.Target) {
				tp.NewTarget = true
				// Only values set on the source topic are copied; a
				// default stays behind and the target's default applies.
				if srcOK && srcCV.TopicLevel {
					tp.TargetMaxMessageBytes = src
					if src < MinTargetMaxMessageBytes {
						tp.TargetTooSmall = true
						small = append(small, fmt.Sprintf("flow %s: target topic %s does not exist yet and will be created with the source topic %s's configs, so with max.message.bytes %d, less than the %d bytes required: "+
							"a record larger than that stops its partition with the reason in the task status (it is never skipped); raise max.message.bytes on source topic %s, or create %s first with at least %d",
							f.Flow, tp.Target, tp.Source, src, MinTargetMaxMessageBytes, tp.Source, tp.Target, MinTargetMaxMessageBytes))
					}
				}
				continue
			}
			_, dst, dstOK := value(f.Target, tp.Target)
			if !dstOK {
				continue
			}
			tp.TargetMaxMessageBytes = dst
			belowSource := srcOK && dst < src
			if !belowSource && dst >= MinTargetMaxMessageBytes {
				continue
			}
			tp.TargetTooSmall = true
			var why string
			want := MinTargetMaxMessageBytes
			switch {
			case belowSource && dst < MinTargetMaxMessageBytes:
				why = fmt.Sprintf("less than source topic %s (%d) and less than the %d bytes required", tp.Source, src, MinTargetMaxMessageBytes)
				want = max(src, MinTargetMaxMessageBytes)
			case belowSource:
				why = fmt.Sprintf("less than source topic %s (%d)", tp.Source, src)
				want = src
			default:
				why = fmt.Sprintf("less than the %d bytes required", MinTargetMaxMessageBytes)
			}
			small = append(small, fmt.Sprintf("flow %s: target topic %s accepts records up to %d bytes (max.message.bytes), %s: "+
				"kmirror sizes its batches to %d bytes, and a record larger than that stops its partition with the reason in the task status (it is never skipped); raise max.message.bytes of %s to at least %d",
				f.Flow, tp.Target, dst, why, dst, tp.Target, want))
		}
	}
	if len(small) > maxBytesWarnings {
		more := len(small) - maxBytesWarnings
		small = append(small[:maxBytesWarnings], fmt.Sprintf("and %d more topic(s) whose target accepts smaller records: see the preview", more))
	}
	return append(warnings, small...)
}
