package service_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/service/servicetest"
	"github.com/kmirror/kmirror/internal/task"
)

// dryRunService is a service over two fake clusters, east (current) and
// west, registered by name.
func dryRunService(t *testing.T, east, west servicetest.FakeCluster) *service.Service {
	t.Helper()
	ctx := context.Background()
	_, db, box := servicetest.OpenStore(t, "")
	kafka := &servicetest.Kafka{Clusters: map[string]servicetest.FakeCluster{"127.0.0.1:9092": east, "127.0.0.1:9192": west}}
	svc, err := service.New(service.Deps{Clusters: db, Users: db, Secrets: box, TaskStore: db, Runner: servicetest.NewRunner(), Kafka: kafka})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []cluster.Settings{
		{Name: "east", BootstrapServers: []string{"127.0.0.1:9092"}},
		{Name: "west", BootstrapServers: []string{"127.0.0.1:9192"}},
	} {
		if _, err := svc.AddCluster(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	return svc
}

func dryRunTask(direction task.Direction, topics ...string) task.Task {
	return task.Task{Name: "check-bytes", Current: task.Current{Cluster: "east", Alias: "A"},
		Peer:  task.Peer{Alias: "B", ConfigType: task.PeerByCluster, Cluster: "west"},
		Rules: task.Rules{Tasks: task.DefaultTasks, ReplicationFactor: 1, Direction: direction, Topics: topics, AddSourceHeader: true}}
}

func warningsAbout(res service.ValidationResult, topic string) []string {
	var out []string
	for _, w := range res.Warnings {
		if strings.Contains(w, "max.message.bytes") && strings.Contains(w, "topic "+topic+" ") {
			out = append(out, w)
		}
	}
	return out
}

// The dry run compares each topic's max.message.bytes across the flow:
// an existing target that accepts less than the source, or less than the
// original product's 524288, is warned about with both values and what happens; a
// missing target is shown as created with the source's configs.
func TestDryRunChecksMaxMessageBytes(t *testing.T) {
	east := servicetest.FakeCluster{Brokers: 1,
		Topics:   []string{"big", "fine", "small-floor", "new", "new-tiny", "__consumer_offsets", "mm2-offset-syncs.B.internal"},
		Defaults: map[string]string{"max.message.bytes": "1048588"},
		Configs: map[string]map[string]string{
			"big":      {"max.message.bytes": "4194304"},
			"new-tiny": {"max.message.bytes": "100000"},
		}}
	west := servicetest.FakeCluster{Brokers: 1,
		Topics:   []string{"big", "fine", "small-floor"},
		Defaults: map[string]string{"max.message.bytes": "1048588"},
		Configs: map[string]map[string]string{
			"small-floor": {"max.message.bytes": "262144"},
		}}
	svc := dryRunService(t, east, west)
	res, err := svc.ValidateTaskDryRun(context.Background(), dryRunTask(task.DirectionPush, "big", "fine", "small-floor", "new", "new-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK || len(res.Flows) != 1 {
		t.Fatalf("dry run: %+v", res)
	}
	got := map[string]service.TopicPreview{}
	for _, tp := range res.Flows[0].Topics {
		got[tp.Source] = tp
	}
	want := map[string]service.TopicPreview{
		"big":         {SourceMaxMessageBytes: 4194304, TargetMaxMessageBytes: 1048588, TargetTooSmall: true},
		"fine":        {SourceMaxMessageBytes: 1048588, TargetMaxMessageBytes: 1048588},
		"small-floor": {SourceMaxMessageBytes: 1048588, TargetMaxMessageBytes: 262144, TargetTooSmall: true},
		// Not set on the source topic: not copied, so the new topic's
		// value is the target's default, unknown here.
		"new":      {SourceMaxMessageBytes: 1048588, NewTarget: true},
		"new-tiny": {SourceMaxMessageBytes: 100000, TargetMaxMessageBytes: 100000, NewTarget: true, TargetTooSmall: true},
	}
	for topic, w := range want {
		g := got[topic]
		g.Pair = w.Pair
		if g != w {
			t.Errorf("%s: preview %+v, want %+v", topic, got[topic], w)
		}
	}

	if ws := warningsAbout(res, "big"); len(ws) != 1 || !strings.Contains(ws[0], "1048588") || !strings.Contains(ws[0], "4194304") ||
		!strings.Contains(ws[0], "sizes its batches to 1048588") || !strings.Contains(ws[0], "never skipped") {
		t.Errorf("big: warnings %q", ws)
	}
	if ws := warningsAbout(res, "small-floor"); len(ws) != 1 || !strings.Contains(ws[0], "262144") || !strings.Contains(ws[0], "524288") {
		t.Errorf("small-floor: warnings %q", ws)
	}
	if ws := warningsAbout(res, "new-tiny"); len(ws) != 1 || !strings.Contains(ws[0], "created with the source topic new-tiny's configs") || !strings.Contains(ws[0], "100000") {
		t.Errorf("new-tiny: warnings %q", ws)
	}
	for _, topic := range []string{"fine", "new"} {
		if ws := warningsAbout(res, topic); len(ws) != 0 {
			t.Errorf("%s: unexpected warnings %q", topic, ws)
		}
	}

	// Push: the topics to pick from are the current cluster's, internal
	// ones left out.
	if want := []string{"big", "fine", "new", "new-tiny", "small-floor"}; !slices.Equal(res.SourceTopics, want) {
		t.Errorf("source topics %q, want %q", res.SourceTopics, want)
	}
}

// Pull offers the peer's topics; bidirectional both clusters'.
func TestDryRunSourceTopicsFollowDirection(t *testing.T) {
	svc := dryRunService(t, servicetest.FakeCluster{Brokers: 1, Topics: []string{"e1", "shared"}},
		servicetest.FakeCluster{Brokers: 1, Topics: []string{"w1", "shared", "x.internal"}})
	for dir, want := range map[task.Direction][]string{
		task.DirectionPull:          {"shared", "w1"},
		task.DirectionBidirectional: {"e1", "shared", "w1"},
	} {
		res, err := svc.ValidateTaskDryRun(context.Background(), dryRunTask(dir, "shared"))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.SourceTopics, want) {
			t.Errorf("%s: source topics %q, want %q", dir, res.SourceTopics, want)
		}
	}
}

// A cluster whose configs cannot be read is a warning; the dry run still
// answers, with the topic preview.
func TestDryRunConfigsUnreadableIsAWarning(t *testing.T) {
	svc := dryRunService(t, servicetest.FakeCluster{Brokers: 1, Topics: []string{"orders"}},
		servicetest.FakeCluster{Brokers: 1, Topics: []string{"orders"}, ConfigsErr: errors.New("not authorized to describe configs")})
	res, err := svc.ValidateTaskDryRun(context.Background(), dryRunTask(task.DirectionPush, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK || len(res.Flows) != 1 || len(res.Flows[0].Topics) != 1 {
		t.Fatalf("dry run: %+v", res)
	}
	found := false
	for _, w := range res.Warnings {
		found = found || (strings.Contains(w, "cannot read the topic configs of peer cluster") && strings.Contains(w, "not authorized"))
	}
	if !found {
		t.Errorf("warnings %q", res.Warnings)
	}
}

// An exactly-once task's dry run asks each target whether it takes the
// task's transactions: a refusal is a problem on rules.delivery naming the
// cluster and the reason; a source that refuses is not asked (pull: only
// the current cluster is a target).
func TestDryRunChecksExactlyOnceTransactions(t *testing.T) {
	denied := errors.New("TRANSACTIONAL_ID_AUTHORIZATION_FAILED: grant this task's user WRITE and DESCRIBE on transactional id kmirror.check-bytes.check")
	for _, tc := range []struct {
		name      string
		direction task.Direction
		want      bool
	}{
		{"push into the refusing peer", task.DirectionPush, true},
		{"pull from it", task.DirectionPull, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := dryRunService(t, servicetest.FakeCluster{Brokers: 1, Topics: []string{"orders"}},
				servicetest.FakeCluster{Brokers: 1, Topics: []string{"orders"}, TransactionsErr: denied})
			tk := dryRunTask(tc.direction, "orders")
			tk.Rules.Delivery = task.DeliveryExactlyOnce
			res, err := svc.ValidateTaskDryRun(context.Background(), tk)
			if err != nil {
				t.Fatal(err)
			}
			msgs := res.Problems.For("rules.delivery")
			if got := len(msgs) == 1 && strings.Contains(msgs[0], "peer cluster") && strings.Contains(msgs[0], "WRITE and DESCRIBE"); got != tc.want {
				t.Fatalf("rules.delivery problems %q, want one naming the peer and the right: %v", msgs, tc.want)
			}
			tk.Rules.Delivery = ""
			if res, _ := svc.ValidateTaskDryRun(context.Background(), tk); len(res.Problems.For("rules.delivery")) != 0 {
				t.Fatalf("an at-least-once task is asked for transactions: %q", res.Problems)
			}
		})
	}
}
