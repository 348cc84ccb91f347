package task

import "testing"

// The values are the wire's (API JSON, the tasks table): a renamed constant
// must not change what clients and stored rows already say.
func TestVocabularyWireValues(t *testing.T) {
	cases := []struct {
		got  string
		want string
	}{
		{string(StateStarting), "STARTING"},
		{string(StateRunning), "RUNNING"},
		{string(StateDegraded), "DEGRADED"},
		{string(StateFailed), "FAILED"},
		{string(StateStopped), "STOPPED"},
		{string(StatePaused), "PAUSED"},
		{string(DesiredRunning), "running"},
		{string(DesiredPaused), "paused"},
		{string(ActionCreate), "create"},
		{string(ActionPause), "pause"},
		{string(ActionResume), "resume"},
		{string(ActionRestart), "restart"},
		{string(ActionDelete), "delete"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("wire value %q, want %q", c.got, c.want)
		}
	}
}

func TestCopying(t *testing.T) {
	cases := []struct {
		s    State
		want bool
	}{
		{StateStarting, true},
		{StateRunning, true},
		{StateDegraded, true},
		{StateFailed, false},
		{StateStopped, false},
		{StatePaused, false},
		{State("UNKNOWN"), false},
	}
	for _, c := range cases {
		if got := c.s.Copying(); got != c.want {
			t.Errorf("%s.Copying() = %v, want %v", c.s, got, c.want)
		}
	}
}

func TestDesiredStateValid(t *testing.T) {
	cases := []struct {
		d    DesiredState
		want bool
	}{
		{DesiredRunning, true},
		{DesiredPaused, true},
		{"", false},
		{"RUNNING", false},
	}
	for _, c := range cases {
		if got := c.d.Valid(); got != c.want {
			t.Errorf("DesiredState(%q).Valid() = %v, want %v", c.d, got, c.want)
		}
	}
}
