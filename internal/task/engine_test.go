package task

import "testing"

func TestParseEngine(t *testing.T) {
	for _, c := range []struct {
		in, cluster string
		bad         bool
	}{
		{in: ""},
		{in: "embedded"},
		{in: "connect:west", cluster: "west"},
		{in: "connect:", bad: true},
		{in: "connect: ", bad: true},
		{in: "Connect:west", bad: true},
		{in: "mm2", bad: true},
	} {
		got, err := ParseEngine(c.in)
		if (err != nil) != c.bad || got != c.cluster {
			t.Errorf("ParseEngine(%q) = %q, %v; want %q, bad=%v", c.in, got, err, c.cluster, c.bad)
		}
	}
	tk := Task{Engine: ConnectEngine("c1")}
	if n, ok := tk.ConnectCluster(); !ok || n != "c1" {
		t.Errorf("ConnectCluster() = %q, %v", n, ok)
	}
	if _, ok := (Task{}).ConnectCluster(); ok {
		t.Error("the default engine named a Connect cluster")
	}
}
