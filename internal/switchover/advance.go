package switchover

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Position is a source partition of the flow and where its copy stands.
type Position struct {
	Topic       string
	Partition   int32
	TargetTopic string
	// Next is the next source offset whose copy is durable on the target
	// (acknowledged; for an exactly-once task, committed); -1 before the
	// first.
	Next int64
	// SeenEnd is the source's end when the copy last saw it (-1: never;
	// the embedded engine's fetches always have): what an emergency may
	// lose is SeenEnd-Next. Only the MirrorMaker 2 side reads it.
	SeenEnd int64
	// Failed says why the partition stopped copying ("" while it copies).
	Failed string
}

// Key is "topic/partition", the key of Switchover.Ends.
func (p Position) Key() string { return fmt.Sprintf("%s/%d", p.Topic, p.Partition) }

// Side is what a switchover needs of the running flow it moves and of its
// clusters. Every call asks the clusters afresh.
type Side interface {
	// Positions are the flow's source partitions and their copy.
	Positions(ctx context.Context) ([]Position, error)
	// SourceEnds are the last stable offsets of the partitions on the
	// source, by Position.Key.
	SourceEnds(ctx context.Context, ps []Position) (map[string]int64, error)
	// SourceGroups lists the source's consumer groups, kmirror's own left
	// out.
	SourceGroups(ctx context.Context) ([]string, error)
	// ActiveMembers counts a group's members on the source and the target.
	ActiveMembers(ctx context.Context, group string) (source, target int, err error)
	// TargetEnds are the target partitions' last stable offsets, by the
	// source Position.Key.
	TargetEnds(ctx context.Context, ps []Position) (map[string]int64, error)
	// TargetPartitions counts each target topic's partitions (0: missing).
	TargetPartitions(ctx context.Context, topics []string) (map[string]int, error)
	// Translate translates the group's committed source offsets onto the
	// target and commits them there (only forward, only to an empty
	// group).
	Translate(ctx context.Context, group string) (GroupReport, error)
	// TargetMembers counts a group's members on the target alone.
	TargetMembers(ctx context.Context, group string) (int, error)
	// EmergencyTranslate commits the group's last checkpoints on the
	// target, asking nothing of the source, with what may be read again
	// and what may be lost per partition.
	EmergencyTranslate(ctx context.Context, group string) (GroupReport, error)
	// Close ends the side's connections.
	Close() error
}

// GroupFilter is what a side whose translation leaves some groups out
// also says (MirrorMaker 2 checkpoints no group its groups.exclude names):
// such a group cannot be moved, and preflight fails naming it rather than
// waiting for a translation that never comes.
type GroupFilter interface {
	// Untranslatable says why group cannot be translated, "" when it can.
	Untranslatable(group string) string
}

// untranslatable is the failure naming the selected groups side cannot
// translate, "" when there are none.
func untranslatable(s *Switchover, side Side) string {
	f, ok := side.(GroupFilter)
	if !ok {
		return ""
	}
	var out []string
	for _, g := range s.Selected {
		if why := f.Untranslatable(g); why != "" {
			out = append(out, g+": "+why)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "these groups cannot be moved by this task (start a switchover without them): " + strings.Join(out, "; ")
}

// Options tune Advance.
type Options struct {
	// Quiet is how long the source's end offsets must stand still before
	// producers count as stopped; 10 s when zero.
	Quiet time.Duration
}

func (o Options) quiet() time.Duration {
	if o.Quiet <= 0 {
		return 10 * time.Second
	}
	return o.Quiet
}

// Advance works the current step once, moving on when it is done, and
// says whether s changed (to be stored). A call that cannot reach a
// cluster leaves the step running with the reason: the next call tries
// again.
func Advance(ctx context.Context, s *Switchover, side Side, opts Options, now time.Time) bool {
	// What a step learns besides its state (the source's ends, the groups
	// listed, the report) must be stored too: compared whole.
	before, _ := json.Marshal(s)
	for !s.State.Ended() {
		i := s.current()
		name := s.Steps[i].Name
		st, msg := work(ctx, s, side, opts, name, now)
		if s.Current() != name {
			break // sent back to an earlier step
		}
		s.set(i, st, msg, now)
		if st != Done {
			break
		}
	}
	after, _ := json.Marshal(s)
	if string(before) == string(after) {
		return false
	}
	s.UpdatedAt = now
	return true
}

// work evaluates one step.
func work(ctx context.Context, s *Switchover, side Side, opts Options, step string, now time.Time) (State, string) {
	switch step {
	case StepPreflight:
		if s.Mode == Emergency {
			return emergencyPreflight(ctx, s, side)
		}
		return preflight(ctx, s, side)
	case StepProducersStopped:
		return producersStopped(ctx, s, side, opts, now)
	case StepDrain:
		return drain(ctx, s, side, now)
	case StepTranslate:
		if s.Mode == Emergency {
			return emergencyTranslate(ctx, s, side)
		}
		return translate(ctx, s, side, now)
	case StepSwitched:
		return Done, "consumers may start on the target from the committed offsets; producers may write to the target"
	}
	return Failed, "unknown step " + step
}

func retry(what string, err error) (State, string) {
	return Running, fmt.Sprintf("%s: %v; trying again", what, err)
}

func preflight(ctx context.Context, s *Switchover, side Side) (State, string) {
	ps, err := side.Positions(ctx)
	if err != nil {
		return retry("read the flow's partitions", err)
	}
	if len(ps) == 0 {
		return Running, "the flow has found no partition to copy yet (starting, or no source topic matches)"
	}
	sourceParts := map[string]int{}
	var targets []string
	for _, p := range ps {
		if p.Failed != "" {
			return Failed, fmt.Sprintf("partition %s-%d has stopped copying (%s): fix it and resume the task, then start the switchover again", p.Topic, p.Partition, p.Failed)
		}
		if sourceParts[p.TargetTopic]++; sourceParts[p.TargetTopic] == 1 {
			targets = append(targets, p.TargetTopic)
		}
	}
	have, err := side.TargetPartitions(ctx, targets)
	if err != nil {
		return retry("read the target topics", err)
	}
	for _, t := range targets {
		switch n := have[t]; {
		case n == 0:
			return Failed, fmt.Sprintf("target topic %s does not exist: the flow has not copied it yet", t)
		case n < sourceParts[t]:
			return Failed, fmt.Sprintf("target topic %s has %d partitions, fewer than the source's %d", t, n, sourceParts[t])
		}
	}
	ends, err := side.SourceEnds(ctx, ps)
	if err != nil {
		return retry("read the source's end offsets", err)
	}
	s.Report.Lag = s.Report.Lag[:0]
	var lag int64
	for _, p := range ps {
		l := max(0, ends[p.Key()]-max(p.Next, 0))
		lag += l
		s.Report.Lag = append(s.Report.Lag, PartitionLag{Topic: p.Topic, Partition: p.Partition, Lag: l})
	}
	if s.Groups.All && s.Selected == nil {
		gs, err := side.SourceGroups(ctx)
		if err != nil {
			return retry("list the source's consumer groups", err)
		}
		if len(gs) == 0 {
			return Failed, "the source has no consumer group to move"
		}
		s.Selected = gs
	}
	if why := untranslatable(s, side); why != "" {
		return Failed, why
	}
	if st, msg := idle(ctx, s, side); st != Done {
		return st, msg
	}
	return Done, fmt.Sprintf("%d groups without members on either side; %d target topics in place; lag %d records over %d partitions",
		len(s.Selected), len(targets), lag, len(ps))
}

// idle checks that no selected group has members on either side.
func idle(ctx context.Context, s *Switchover, side Side) (State, string) {
	var busy []string
	for _, g := range s.Selected {
		src, dst, err := side.ActiveMembers(ctx, g)
		if err != nil {
			return retry("describe group "+g, err)
		}
		if src > 0 {
			busy = append(busy, fmt.Sprintf("%s has %d members on the source", g, src))
		}
		if dst > 0 {
			busy = append(busy, fmt.Sprintf("%s has %d members on the target", g, dst))
		}
	}
	if len(busy) > 0 {
		return Waiting, "stop the consumers of every group to move: " + strings.Join(busy, "; ")
	}
	return Done, ""
}

func producersStopped(ctx context.Context, s *Switchover, side Side, opts Options, now time.Time) (State, string) {
	ps, err := side.Positions(ctx)
	if err != nil {
		return retry("read the flow's partitions", err)
	}
	ends, err := side.SourceEnds(ctx, ps)
	if err != nil {
		return retry("read the source's end offsets", err)
	}
	if s.Ends == nil || !maps.Equal(ends, s.Ends) {
		moving := movedSince(s.Ends, ends)
		s.Ends, s.EndsSince = ends, now
		if len(moving) == 0 {
			return Running, fmt.Sprintf("watching the source's end offsets for %s", opts.quiet())
		}
		return Waiting, "stop every producer of the source topics: still written to: " + strings.Join(moving, ", ")
	}
	if quiet := now.Sub(s.EndsSince); quiet < opts.quiet() {
		return Running, fmt.Sprintf("no record written to the source for %s of %s", quiet.Round(time.Second), opts.quiet())
	}
	return Done, fmt.Sprintf("no record written to the source's %d partitions for %s", len(ends), opts.quiet())
}

// movedSince lists the partitions whose end moved, with how far, at most
// ten.
func movedSince(before, now map[string]int64) []string {
	if before == nil {
		return nil
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(now)) {
		if d := now[k] - before[k]; d != 0 {
			out = append(out, fmt.Sprintf("%s (%+d)", k, d))
		}
	}
	if len(out) > 10 {
		out = append(out[:10], fmt.Sprintf("and %d more", len(out)-10))
	}
	return out
}

// unchanged reads the source's ends again: a producer that started again
// sends the switchover back to producers_stopped.
func unchanged(ctx context.Context, s *Switchover, side Side, ps []Position, now time.Time) (bool, State, string) {
	ends, err := side.SourceEnds(ctx, ps)
	if err != nil {
		st, msg := retry("read the source's end offsets", err)
		return false, st, msg
	}
	if moved := movedSince(s.Ends, ends); len(moved) > 0 {
		s.back(StepProducersStopped, "the source was written to again ("+strings.Join(moved, ", ")+"): stop every producer of the source topics", now)
		s.Ends, s.EndsSince = ends, now
		return false, Running, ""
	}
	return true, "", ""
}

func drain(ctx context.Context, s *Switchover, side Side, now time.Time) (State, string) {
	ps, err := side.Positions(ctx)
	if err != nil {
		return retry("read the flow's partitions", err)
	}
	if ok, st, msg := unchanged(ctx, s, side, ps, now); !ok {
		return st, msg
	}
	var left []string
	var total int64
	for _, p := range ps {
		if p.Failed != "" {
			return Failed, fmt.Sprintf("partition %s-%d has stopped copying (%s): fix it and resume the task, then start the switchover again", p.Topic, p.Partition, p.Failed)
		}
		if d := s.Ends[p.Key()] - max(p.Next, 0); d > 0 {
			total += d
			left = append(left, fmt.Sprintf("%s-%d (%d)", p.Topic, p.Partition, d))
		}
	}
	if len(left) > 0 {
		if len(left) > 10 {
			left = append(left[:10], fmt.Sprintf("and %d more", len(left)-10))
		}
		return Running, fmt.Sprintf("%d records still to copy: %s", total, strings.Join(left, ", "))
	}
	// The switchover's point: where each partition stands on both sides,
	// where a way back starts.
	tends, err := side.TargetEnds(ctx, ps)
	if err != nil {
		return retry("read the target's end offsets", err)
	}
	s.Report.Points = s.Report.Points[:0]
	for _, p := range ps {
		s.Report.Points = append(s.Report.Points, Point{Topic: p.Topic, Partition: p.Partition, TargetTopic: p.TargetTopic,
			SourceEnd: s.Ends[p.Key()], TargetEnd: tends[p.Key()]})
	}
	return Done, fmt.Sprintf("every partition copied to the source's end (%d partitions)", len(ps))
}

func translate(ctx context.Context, s *Switchover, side Side, now time.Time) (State, string) {
	ps, err := side.Positions(ctx)
	if err != nil {
		return retry("read the flow's partitions", err)
	}
	if ok, st, msg := unchanged(ctx, s, side, ps, now); !ok {
		return st, msg
	}
	if st, msg := idle(ctx, s, side); st != Done {
		return st, msg
	}
	reports := make([]GroupReport, 0, len(s.Selected))
	exact, parts := 0, 0
	var again int64
	unbounded := false
	for _, g := range s.Selected {
		rep, err := side.Translate(ctx, g)
		if err != nil {
			return retry("translate group "+g, err)
		}
		for _, p := range rep.Partitions {
			parts++
			if p.Exact {
				exact++
			}
			if p.MayReadAgain < 0 {
				unbounded = true
			} else {
				again += p.MayReadAgain
			}
		}
		reports = append(reports, rep)
	}
	s.Report.Groups = reports
	msg := fmt.Sprintf("%d groups committed on the target: %d of %d partitions translated exactly; at most %d records may be read again", len(reports), exact, parts, again)
	if unbounded {
		msg += " (and an unbounded number on partitions whose translation nothing bounds: see the report)"
	}
	return Done, msg
}

// emergencyPreflight checks what the target alone can say: the target
// topics are there and no selected group has members on the target.
func emergencyPreflight(ctx context.Context, s *Switchover, side Side) (State, string) {
	ps, err := side.Positions(ctx)
	if err != nil {
		return retry("read the flow's partitions", err)
	}
	if len(ps) == 0 {
		return Failed, "the flow knows no partition: nothing to switch over"
	}
	var targets []string
	seen := map[string]bool{}
	for _, p := range ps {
		if !seen[p.TargetTopic] {
			seen[p.TargetTopic] = true
			targets = append(targets, p.TargetTopic)
		}
	}
	have, err := side.TargetPartitions(ctx, targets)
	if err != nil {
		return retry("read the target topics", err)
	}
	for _, t := range targets {
		if have[t] == 0 {
			return Failed, fmt.Sprintf("target topic %s does not exist: the flow has not copied it yet", t)
		}
	}
	if why := untranslatable(s, side); why != "" {
		return Failed, why
	}
	var busy []string
	for _, g := range s.Selected {
		n, err := side.TargetMembers(ctx, g)
		if err != nil {
			return retry("describe group "+g, err)
		}
		if n > 0 {
			busy = append(busy, fmt.Sprintf("%s has %d members on the target", g, n))
		}
	}
	if len(busy) > 0 {
		return Waiting, "stop the consumers of every group to move: " + strings.Join(busy, "; ")
	}
	return Done, fmt.Sprintf("%d groups without members on the target; %d target topics in place; the source is not asked", len(s.Selected), len(targets))
}

// emergencyTranslate commits every group's last checkpoints and sums what
// the report says may be read again and may be lost.
func emergencyTranslate(ctx context.Context, s *Switchover, side Side) (State, string) {
	reports := make([]GroupReport, 0, len(s.Selected))
	var again, lost int64
	unbounded := false
	for _, g := range s.Selected {
		rep, err := side.EmergencyTranslate(ctx, g)
		if err != nil {
			return retry("translate group "+g, err)
		}
		for _, p := range rep.Partitions {
			if p.MayReadAgain < 0 || p.MayBeLost < 0 {
				unbounded = true
			}
			again += max(p.MayReadAgain, 0)
			lost += max(p.MayBeLost, 0)
		}
		reports = append(reports, rep)
	}
	s.Report.Groups = reports
	msg := fmt.Sprintf("%d groups committed on the target from their last checkpoints: at most %d records may be read again, at most %d may be lost", len(reports), again, lost)
	if unbounded {
		msg += " (and partitions where nothing bounds it: see the report)"
	}
	return Done, msg
}
