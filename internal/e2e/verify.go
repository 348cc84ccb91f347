package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
)

// VerifyOptions says what a correct copy looks like beyond docs/TASKS.md's
// defaults.
type VerifyOptions struct {
	// SourceAlias, when set, requires every target record to carry one
	// kmirror.source header, after the source's headers, whose value is
	// SourceAlias (a task with "add source header" on). Empty means the
	// headers must match exactly.
	SourceAlias string
	// IgnoreSourceHeader accepts target records with or without a trailing
	// kmirror.source header, whatever its value. SourceAlias wins if both
	// are set.
	IgnoreSourceHeader bool
	// AllowDuplicates makes OK ignore duplicates: at-least-once delivery
	// may repeat records after a restart. They are still counted.
	AllowDuplicates bool
	// Examples is how many example problems to keep per kind, default 5.
	Examples int
	// ReadUncommitted reads the target as a read_uncommitted consumer does,
	// aborted records included: an exactly-once copy's aborted attempts
	// then count as duplicates (proof the transactions were real).
	ReadUncommitted bool
	// Idle ends reading a partition when no record arrived for this long
	// before its end offset (transaction markers hold no record), default
	// 5s.
	Idle time.Duration
}

// Kind classifies a problem.
type Kind string

// Problem kinds, in the order the report lists them.
const (
	Missing    Kind = "missing"    // a source record is not on the target
	Duplicated Kind = "duplicated" // a source record is on the target more than once
	Altered    Kind = "altered"    // on the target, but key aside something differs
	Reordered  Kind = "reordered"  // on the target, but out of source order
	Unexpected Kind = "unexpected" // a target record no source record matches
	Partitions Kind = "partitions" // the topics' partition counts differ
)

// Problem is one example of something wrong with the copy.
type Problem struct {
	Kind      Kind
	Partition int32  // the partition the record is in (source partition when Missing)
	Offset    int64  // target offset, or source offset when Missing; -1 if none
	Key       string // the record's key
	Detail    string // what is wrong, in words
}

func (p Problem) String() string {
	s := string(p.Kind)
	if p.Key != "" {
		s += fmt.Sprintf(" key=%s", p.Key)
	}
	if p.Offset >= 0 {
		s += fmt.Sprintf(" partition=%d offset=%d", p.Partition, p.Offset)
	}
	if p.Detail != "" {
		s += ": " + p.Detail
	}
	return s
}

// Report is the outcome of comparing a target topic with its source.
// Produced = Replicated + Altered + Missing: every source record is counted
// once by how it best arrived. Duplicated, Reordered and Unexpected count
// target records.
type Report struct {
	Source, Target                     string // "cluster/topic"
	SourcePartitions, TargetPartitions int
	Produced                           int // records on the source
	Replicated                         int // source records on the target, unchanged
	Missing                            int
	Duplicated                         int
	Altered                            int
	Reordered                          int // fewest target records that must move to restore source order
	Unexpected                         int
	Problems                           []Problem // a few examples per kind
	AllowDuplicates                    bool      // from VerifyOptions: OK ignores Duplicated
}

// OK reports whether the target is an exact copy of the source.
func (r Report) OK() bool {
	return r.SourcePartitions == r.TargetPartitions &&
		r.Replicated == r.Produced &&
		r.Missing == 0 && r.Altered == 0 && r.Reordered == 0 && r.Unexpected == 0 &&
		(r.AllowDuplicates || r.Duplicated == 0)
}

// String is a one-line summary.
func (r Report) String() string {
	verdict := "OK"
	if !r.OK() {
		verdict = "FAILED"
	}
	return fmt.Sprintf("%s -> %s: %s: produced %d, replicated %d, missing %d, duplicated %d, altered %d, reordered %d, unexpected %d",
		r.Source, r.Target, verdict, r.Produced, r.Replicated, r.Missing, r.Duplicated, r.Altered, r.Reordered, r.Unexpected)
}

// Print writes the summary and the example problems, one per line.
func (r Report) Print(w io.Writer) error {
	var b bytes.Buffer
	b.WriteString(r.String())
	b.WriteByte('\n')
	for _, p := range r.Problems {
		b.WriteString("  ")
		b.WriteString(p.String())
		b.WriteByte('\n')
	}
	_, err := w.Write(b.Bytes())
	return err
}

// Verify reads sourceTopic and targetTopic completely (every partition, from
// the start offset to the end offset each has when Verify reads it) and
// reports how faithfully the target copies the source (docs/TASKS.md, Replication guarantees). Records are
// paired by key, so the source must have unique, non-null keys, as Produce
// writes; otherwise Verify returns an error. An error also means a topic
// could not be read; a bad copy is a Report whose OK is false.
func Verify(ctx context.Context, source cluster.Settings, sourceTopic string, target cluster.Settings, targetTopic string, opts VerifyOptions) (Report, error) {
	if opts.Idle <= 0 {
		opts.Idle = 5 * time.Second
	}
	src, err := readTopic(ctx, source, sourceTopic, opts.Idle, false)
	if err != nil {
		return Report{}, fmt.Errorf("verify: source: %w", err)
	}
	dst, err := readTopic(ctx, target, targetTopic, opts.Idle, opts.ReadUncommitted)
	if err != nil {
		return Report{}, fmt.Errorf("verify: target: %w", err)
	}
	r, err := compare(src, dst, opts)
	if err != nil {
		return Report{}, fmt.Errorf("verify %s/%s: %w", source.Name, sourceTopic, err)
	}
	r.Source = source.Name + "/" + sourceTopic
	r.Target = target.Name + "/" + targetTopic
	return r, nil
}

type loc struct {
	partition int32
	index     int
}

// compare pairs target records with source records by key and classifies
// every difference. It is pure so the rules can be tested without Kafka.
func compare(src, dst topicLog, opts VerifyOptions) (Report, error) {
	if opts.Examples <= 0 {
		opts.Examples = 5
	}
	r := Report{SourcePartitions: len(src), TargetPartitions: len(dst), AllowDuplicates: opts.AllowDuplicates}
	examples := map[Kind]int{}
	note := func(p Problem) {
		if examples[p.Kind] < opts.Examples {
			examples[p.Kind]++
			r.Problems = append(r.Problems, p)
		}
	}
	if len(src) != len(dst) {
		note(Problem{Kind: Partitions, Offset: -1, Detail: fmt.Sprintf("target has %d partitions, source %d", len(dst), len(src))})
	}

	index := map[string]loc{}
	seen := make([][]bool, len(src))
	for p, recs := range src {
		seen[p] = make([]bool, len(recs))
		r.Produced += len(recs)
		for i, rec := range recs {
			if rec.keyNull {
				return Report{}, fmt.Errorf("source record at partition %d offset %d has a null key: Verify pairs records by key; verify a topic written by demo.Produce", p, rec.offset)
			}
			if prev, dup := index[rec.key]; dup {
				return Report{}, fmt.Errorf("source key %q is at partition %d offset %d and partition %d offset %d: Verify pairs records by unique keys; verify a topic written by demo.Produce",
					rec.key, prev.partition, src[prev.partition][prev.index].offset, p, rec.offset)
			}
			index[rec.key] = loc{int32(p), i}
		}
	}

	for q, recs := range dst {
		// Source indexes, in target order, of records that stayed in their
		// partition: order is only defined within one partition.
		var order []int
		var orderAt []record
		for _, got := range recs {
			l, ok := index[got.key]
			if got.keyNull || !ok {
				r.Unexpected++
				note(Problem{Kind: Unexpected, Partition: got.partition, Offset: got.offset, Key: got.key, Detail: "no source record has this key"})
				continue
			}
			if seen[l.partition][l.index] {
				r.Duplicated++
				note(Problem{Kind: Duplicated, Partition: got.partition, Offset: got.offset, Key: got.key, Detail: "already copied earlier"})
				continue
			}
			seen[l.partition][l.index] = true
			want := src[l.partition][l.index]
			if diff := differences(want, got, opts); diff != "" {
				r.Altered++
				note(Problem{Kind: Altered, Partition: got.partition, Offset: got.offset, Key: got.key, Detail: diff})
			} else {
				r.Replicated++
			}
			if int(l.partition) == q {
				order = append(order, l.index)
				orderAt = append(orderAt, got)
			}
		}
		for _, i := range outOfOrder(order) {
			got := orderAt[i]
			r.Reordered++
			note(Problem{Kind: Reordered, Partition: got.partition, Offset: got.offset, Key: got.key,
				Detail: fmt.Sprintf("source offset %d, out of order with its neighbours", src[q][order[i]].offset)})
		}
	}

	for p := range src {
		for i, ok := range seen[p] {
			if !ok {
				rec := src[p][i]
				r.Missing++
				note(Problem{Kind: Missing, Partition: int32(p), Offset: rec.offset, Key: rec.key, Detail: "not on the target"})
			}
		}
	}
	kindOrder := map[Kind]int{Partitions: 0, Missing: 1, Duplicated: 2, Altered: 3, Reordered: 4, Unexpected: 5}
	sort.SliceStable(r.Problems, func(i, j int) bool { return kindOrder[r.Problems[i].Kind] < kindOrder[r.Problems[j].Kind] })
	return r, nil
}

// outOfOrder returns the positions in seq that are not part of one longest
// increasing subsequence: the fewest records that must move to restore order.
// A swap of two neighbours counts one, not every later record.
func outOfOrder(seq []int) []int {
	if len(seq) == 0 {
		return nil
	}
	// Patience sorting: tails[k] is the position in seq ending the best
	// increasing run of length k+1; prev links a run back to its start.
	tails := []int{}
	prev := make([]int, len(seq))
	for i, v := range seq {
		k := sort.Search(len(tails), func(k int) bool { return seq[tails[k]] >= v })
		if k > 0 {
			prev[i] = tails[k-1]
		} else {
			prev[i] = -1
		}
		if k == len(tails) {
			tails = append(tails, i)
		} else {
			tails[k] = i
		}
	}
	inRun := make([]bool, len(seq))
	for i := tails[len(tails)-1]; i >= 0; i = prev[i] {
		inRun[i] = true
	}
	var out []int
	for i, ok := range inRun {
		if !ok {
			out = append(out, i)
		}
	}
	return out
}

// differences describes how got differs from want, or "" when it is a
// faithful copy. The key is equal by construction (records are paired by it).
func differences(want, got record, opts VerifyOptions) string {
	var diffs []string
	if got.partition != want.partition {
		diffs = append(diffs, fmt.Sprintf("partition %d, want %d", got.partition, want.partition))
	}
	switch {
	case want.valueNull && !got.valueNull:
		diffs = append(diffs, fmt.Sprintf("value has %d bytes, want null (tombstone)", got.valueLen))
	case !want.valueNull && got.valueNull:
		diffs = append(diffs, fmt.Sprintf("value is null, want %d bytes", want.valueLen))
	case got.valueLen != want.valueLen || got.valueHash != want.valueHash:
		diffs = append(diffs, fmt.Sprintf("value differs (%d bytes, want %d)", got.valueLen, want.valueLen))
	}
	if !got.timestamp.Equal(want.timestamp) {
		diffs = append(diffs, fmt.Sprintf("timestamp %d, want %d (ms)", got.timestamp.UnixMilli(), want.timestamp.UnixMilli()))
	}
	if d := headerDifference(want.headers, got.headers, opts); d != "" {
		diffs = append(diffs, d)
	}
	if len(diffs) == 0 {
		return ""
	}
	s := diffs[0]
	for _, d := range diffs[1:] {
		s += "; " + d
	}
	return s
}

func headerDifference(want, got []header, opts VerifyOptions) string {
	if opts.SourceAlias != "" || opts.IgnoreSourceHeader {
		n := len(got)
		has := n > len(want) && got[n-1].key == sourceHeaderKey
		switch {
		case has && opts.SourceAlias != "" && string(got[n-1].value) != opts.SourceAlias:
			return fmt.Sprintf("%s header is %s, want %q", sourceHeaderKey, quote(got[n-1].value), opts.SourceAlias)
		case !has && opts.SourceAlias != "":
			return fmt.Sprintf("no trailing %s header, want %q", sourceHeaderKey, opts.SourceAlias)
		case has:
			got = got[:n-1]
		}
	}
	if len(got) != len(want) {
		return fmt.Sprintf("%d headers %s, want %d %s", len(got), headerList(got), len(want), headerList(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.key != w.key || (g.value == nil) != (w.value == nil) || !bytes.Equal(g.value, w.value) {
			return fmt.Sprintf("header %d is %s=%s, want %s=%s", i, g.key, quote(g.value), w.key, quote(w.value))
		}
	}
	return ""
}

func headerList(hs []header) string {
	s := "["
	for i, h := range hs {
		if i > 0 {
			s += " "
		}
		s += h.key + "=" + quote(h.value)
	}
	return s + "]"
}

// quote shows a header value, telling null from empty.
func quote(v []byte) string {
	if v == nil {
		return "null"
	}
	if len(v) > 40 {
		return strconv.Quote(string(v[:40])) + "..."
	}
	return strconv.Quote(string(v))
}
