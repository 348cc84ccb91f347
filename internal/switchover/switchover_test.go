package switchover

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRequestCheck(t *testing.T) {
	one := []string{"A->B"}
	two := []string{"A->B", "B->A"}
	cases := []struct {
		name  string
		req   Request
		flows []string
		field string // the field with a problem, "" for none
		says  string
	}{
		{"defaults", Request{Groups: Groups{Names: []string{"g"}}}, one, "", ""},
		{"all groups", Request{Mode: Planned, Groups: Groups{All: true}}, one, "", ""},
		{"emergency names its groups", Request{Mode: Emergency, Groups: Groups{All: true}}, one, "groups", "cannot be asked"},
		{"unknown mode", Request{Mode: "fast", Groups: Groups{All: true}}, one, "mode", "planned or emergency"},
		{"direction needed", Request{Groups: Groups{All: true}}, two, "direction", "A->B, B->A"},
		{"direction not a flow", Request{Direction: "B->C", Groups: Groups{All: true}}, two, "direction", "not a flow"},
		{"direction named", Request{Direction: "B->A", Groups: Groups{All: true}}, two, "", ""},
		{"no groups", Request{}, one, "groups", "required"},
		{"blank group", Request{Groups: Groups{Names: []string{" g"}}}, one, "groups", "spaces"},
		{"group twice", Request{Groups: Groups{Names: []string{"g", "g"}}}, one, "groups", "named twice"},
		{"group too long", Request{Groups: Groups{Names: []string{strings.Repeat("g", 250)}}}, one, "groups", "longer than 249"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ps := c.req.Check(c.flows)
			if c.field == "" {
				if len(ps) > 0 {
					t.Fatalf("problems %v", ps)
				}
				if got.Mode != Planned || got.Direction == "" {
					t.Errorf("defaults not filled in: %+v", got)
				}
				return
			}
			if len(ps) != 1 || ps[0].Field != c.field || !strings.Contains(ps[0].Message, c.says) {
				t.Fatalf("problems %v, want one on %s saying %q", ps, c.field, c.says)
			}
		})
	}
}

func TestGroupsJSON(t *testing.T) {
	for _, c := range []struct {
		in, out string
		err     bool
	}{
		{`"all"`, `"all"`, false},
		{`["a","b"]`, `["a","b"]`, false},
		{`[]`, `[]`, false},
		{`"some"`, ``, true},
		{`5`, ``, true},
	} {
		var g Groups
		err := json.Unmarshal([]byte(c.in), &g)
		if (err != nil) != c.err {
			t.Fatalf("%s: error %v", c.in, err)
		}
		if err != nil {
			continue
		}
		b, _ := json.Marshal(g)
		if string(b) != c.out {
			t.Errorf("%s round trip: %s", c.in, b)
		}
	}
}

// fakeSide is a flow whose state the test sets.
type fakeSide struct {
	positions  []Position
	ends       map[string]int64
	groups     []string
	members    map[string][2]int
	targets    map[string]int
	err        error
	translated []string
}

func (f *fakeSide) Positions(context.Context) ([]Position, error) { return f.positions, f.err }
func (f *fakeSide) SourceEnds(context.Context, []Position) (map[string]int64, error) {
	out := map[string]int64{}
	for k, v := range f.ends {
		out[k] = v
	}
	return out, f.err
}
func (f *fakeSide) SourceGroups(context.Context) ([]string, error) { return f.groups, f.err }
func (f *fakeSide) ActiveMembers(_ context.Context, g string) (int, int, error) {
	m := f.members[g]
	return m[0], m[1], f.err
}
func (f *fakeSide) TargetEnds(_ context.Context, ps []Position) (map[string]int64, error) {
	out := map[string]int64{}
	for _, p := range ps {
		out[p.Key()] = f.ends[p.Key()] + 1000
	}
	return out, f.err
}
func (f *fakeSide) TargetPartitions(context.Context, []string) (map[string]int, error) {
	return f.targets, f.err
}
func (f *fakeSide) Translate(_ context.Context, g string) (GroupReport, error) {
	f.translated = append(f.translated, g)
	return GroupReport{Group: g, Partitions: []PartitionReport{{Topic: "t", Partition: 0, TargetTopic: "t", SourceOffset: 5, TargetOffset: 5, Exact: true}}}, f.err
}

func (f *fakeSide) Close() error { return nil }
func (f *fakeSide) TargetMembers(_ context.Context, g string) (int, error) {
	return f.members[g][1], f.err
}
func (f *fakeSide) EmergencyTranslate(_ context.Context, g string) (GroupReport, error) {
	f.translated = append(f.translated, g)
	return GroupReport{Group: g, Partitions: []PartitionReport{{Topic: "t", Partition: 0, TargetTopic: "t", SourceOffset: 5, TargetOffset: 5, MayReadAgain: 3, MayBeLost: 7}}}, f.err
}

func newSide() *fakeSide {
	return &fakeSide{
		positions: []Position{{Topic: "t", Partition: 0, TargetTopic: "t", Next: 100}, {Topic: "t", Partition: 1, TargetTopic: "t", Next: 50}},
		ends:      map[string]int64{"t/0": 100, "t/1": 50},
		groups:    []string{"g1", "g2"},
		members:   map[string][2]int{},
		targets:   map[string]int{"t": 2},
	}
}

// walk advances s every 5 s until it ends or stands in a state other than
// running for a call, and returns the current step then.
func walk(t *testing.T, s *Switchover, side Side, now *time.Time) string {
	t.Helper()
	for range 20 {
		Advance(context.Background(), s, side, Options{}, *now)
		if s.State != Running {
			return s.Current()
		}
		*now = now.Add(5 * time.Second)
	}
	return s.Current()
}

func TestAdvancePlanned(t *testing.T) {
	now := time.Unix(1000, 0)
	s := New("t1", Request{Mode: Planned, Groups: Groups{All: true}, Direction: "A->B"}, "alice", now)
	side := newSide()
	side.members["g2"] = [2]int{2, 0}
	if step := walk(t, &s, side, &now); step != StepPreflight || s.State != Waiting ||
		!strings.Contains(s.Steps[0].Message, "g2 has 2 members on the source") {
		t.Fatalf("with g2 active: %s %s %+v", step, s.State, s.Steps[0])
	}
	side.members["g2"] = [2]int{}
	side.ends["t/1"] = 60 // a producer still writes
	side.positions[1].Next = 55
	Advance(context.Background(), &s, side, Options{}, now) // preflight done, first look at the ends
	now = now.Add(time.Second)
	side.ends["t/1"] = 70
	Advance(context.Background(), &s, side, Options{}, now)
	if s.Current() != StepProducersStopped || s.State != Waiting || !strings.Contains(s.Steps[1].Message, "t/1 (+10)") {
		t.Fatalf("producers still writing: %s %+v", s.State, s.Steps[1])
	}
	if len(s.Report.Lag) != 2 || s.Report.Lag[1].Lag != 5 {
		t.Errorf("lag at preflight = %+v", s.Report.Lag)
	}
	// Quiet from now on; the copy is 15 behind on t-1.
	now = now.Add(time.Second)
	if step := walk(t, &s, side, &now); step != StepDrain {
		t.Fatalf("after the quiet period: %s %s %+v", step, s.State, s.Steps)
	}
	if !strings.Contains(s.Steps[2].Message, "15 records still to copy: t-1 (15)") {
		t.Errorf("drain says %q", s.Steps[2].Message)
	}
	// A producer writes again mid-drain: back to producers_stopped.
	side.ends["t/1"] = 71
	Advance(context.Background(), &s, side, Options{}, now)
	if s.Current() != StepProducersStopped || !strings.Contains(s.Steps[1].Message, "written to again (t/1 (+1))") || s.Steps[2].State != Pending {
		t.Fatalf("source moved mid-drain: %+v", s.Steps)
	}
	side.positions[1].Next = 71
	now = now.Add(time.Second)
	if step := walk(t, &s, side, &now); step != "" || s.State != Done {
		t.Fatalf("want done: %s %s %+v", step, s.State, s.Steps)
	}
	if len(s.Report.Points) != 2 || s.Report.Points[1] != (Point{Topic: "t", Partition: 1, TargetTopic: "t", SourceEnd: 71, TargetEnd: 1071}) {
		t.Errorf("switchover points %+v", s.Report.Points)
	}
	if strings.Join(side.translated, ",") != "g1,g2" || len(s.Report.Groups) != 2 {
		t.Errorf("translated %v, report %+v", side.translated, s.Report.Groups)
	}
	if !strings.Contains(s.Steps[3].Message, "2 groups committed on the target: 2 of 2 partitions translated exactly; at most 0 records") {
		t.Errorf("translate says %q", s.Steps[3].Message)
	}
}

func TestAdvanceRefusalsAndRetries(t *testing.T) {
	now := time.Unix(1000, 0)
	req := Request{Mode: Planned, Groups: Groups{Names: []string{"g1"}}, Direction: "A->B"}

	s := New("t1", req, "", now)
	side := newSide()
	side.targets = map[string]int{"t": 1}
	Advance(context.Background(), &s, side, Options{}, now)
	if s.State != Failed || !strings.Contains(s.Steps[0].Message, "target topic t has 1 partitions, fewer than the source's 2") {
		t.Fatalf("fewer target partitions: %s %+v", s.State, s.Steps[0])
	}

	s = New("t1", req, "", now)
	side = newSide()
	side.positions[0].Failed = "record too large"
	Advance(context.Background(), &s, side, Options{}, now)
	if s.State != Failed || !strings.Contains(s.Steps[0].Message, "t-0 has stopped copying (record too large)") {
		t.Fatalf("failed partition: %s %+v", s.State, s.Steps[0])
	}

	s = New("t1", req, "", now)
	side = newSide()
	side.err = errors.New("broker down")
	if !Advance(context.Background(), &s, side, Options{}, now) || s.State != Running ||
		!strings.Contains(s.Steps[0].Message, "broker down; trying again") {
		t.Fatalf("unreachable: %s %+v", s.State, s.Steps[0])
	}
	if Advance(context.Background(), &s, side, Options{}, now) {
		t.Errorf("the same answer again is reported as a change")
	}
	side.err = nil
	side.members["g1"] = [2]int{0, 1}
	Advance(context.Background(), &s, side, Options{}, now)
	if s.State != Waiting || !strings.Contains(s.Steps[0].Message, "g1 has 1 members on the target") {
		t.Fatalf("active on the target: %s %+v", s.State, s.Steps[0])
	}
}

// filteringSide translates no group named "connect-...", as MirrorMaker 2
// checkpoints none its groups.exclude names.
type filteringSide struct{ *fakeSide }

func (filteringSide) Untranslatable(g string) string {
	if strings.HasPrefix(g, "connect-") {
		return "excluded"
	}
	return ""
}

// A group the side cannot translate fails preflight by name, planned and
// emergency, instead of waiting for ever at translate.
func TestAdvanceRefusesGroupsTheSideCannotTranslate(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, mode := range []Mode{Planned, Emergency} {
		s := New("t1", Request{Mode: mode, Groups: Groups{Names: []string{"g1", "connect-sink"}}, Direction: "A->B"}, "", now)
		Advance(context.Background(), &s, filteringSide{newSide()}, Options{}, now)
		if s.State != Failed || s.Current() != StepPreflight || !strings.Contains(s.Steps[0].Message, "connect-sink: excluded") || strings.Contains(s.Steps[0].Message, "g1") {
			t.Errorf("%s: %s at %s: %q", mode, s.State, s.Current(), s.Steps[0].Message)
		}
	}
}

// An emergency asks nothing of the source: the target's groups idle, their
// last checkpoints committed, what may be read again and lost summed.
func TestAdvanceEmergency(t *testing.T) {
	now := time.Unix(1000, 0)
	s := New("t1", Request{Mode: Emergency, Groups: Groups{Names: []string{"g1", "g2"}}, Direction: "A->B"}, "", now)
	if len(s.Steps) != 3 || s.Steps[1].Name != StepTranslate {
		t.Fatalf("emergency steps %+v", s.Steps)
	}
	side := newSide()
	side.members["g1"] = [2]int{5, 0} // members on the source do not matter: it is gone
	side.members["g2"] = [2]int{0, 1}
	Advance(context.Background(), &s, side, Options{}, now)
	if s.State != Waiting || !strings.Contains(s.Steps[0].Message, "g2 has 1 members on the target") || strings.Contains(s.Steps[0].Message, "g1") {
		t.Fatalf("g2 active on the target: %s %+v", s.State, s.Steps[0])
	}
	side.members["g2"] = [2]int{}
	Advance(context.Background(), &s, side, Options{}, now)
	if s.State != Done || !strings.Contains(s.Steps[1].Message, "at most 6 records may be read again, at most 14 may be lost") {
		t.Fatalf("emergency: %s %+v", s.State, s.Steps)
	}
}

// What a step learns without changing its message (the source's ends, read
// again after a restart) is a change to store: a switchover reloaded from
// the store would otherwise learn it again on every call and never go on
// (found by killing kmirror mid-switchover).
func TestAdvanceReportsWhatAStepLearns(t *testing.T) {
	now := time.Unix(1000, 0)
	s := New("t1", Request{Mode: Planned, Groups: Groups{Names: []string{"g1"}}, Direction: "A->B"}, "", now)
	side := newSide()
	Advance(context.Background(), &s, side, Options{}, now) // preflight done, producers_stopped watching
	if s.Current() != StepProducersStopped {
		t.Fatalf("at %s", s.Current())
	}
	// As stored and read back by a kmirror started again, the ends lost.
	s.Ends = nil
	if !Advance(context.Background(), &s, side, Options{}, now) || s.Ends == nil {
		t.Fatalf("the ends read again are not reported as a change: %+v", s)
	}
	b, _ := json.Marshal(s)
	var back Switchover
	if err := json.Unmarshal(b, &back); err != nil || len(back.Ends) != 2 {
		t.Fatalf("stored and read back: %v %+v", err, back.Ends)
	}
	if !Advance(context.Background(), &back, side, Options{}, now.Add(11*time.Second)) || back.Current() != StepTranslate && back.State != Done {
		t.Fatalf("a quiet source after the reload: %s %+v", back.State, back.Steps)
	}
}
