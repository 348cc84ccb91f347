package connectengine

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/connect/connectplan"
	"github.com/kmirror/kmirror/internal/task"
)

// The lag of every task on a Connect cluster is sampled in rounds: each
// poll interval, one listing (the status poll) and the offsets of one copy
// connector in ten — at 100 tasks 1 + 10 requests a round, not 1 + 100;
// at 18, 1 + 1.
func TestLagRoundsCostOneOffsetsReadPerTenTasks(t *testing.T) {
	for _, tasks := range []int{18, 100} {
		var listings, offsets atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			switch {
			case r.URL.Path == "/connectors" && r.Method == http.MethodGet:
				listings.Add(1)
				_, _ = w.Write([]byte(`{}`))
			case strings.HasSuffix(r.URL.Path, "/offsets"):
				offsets.Add(1)
				_, _ = w.Write([]byte(`{"offsets":[]}`))
			case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/connectors/"):
				w.WriteHeader(http.StatusNotFound)
				_, _ = w.Write([]byte(`{"error_code":404,"message":"not found"}`))
			case r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/config"):
				w.WriteHeader(http.StatusCreated)
				_, _ = w.Write([]byte(`{"name":"x","config":{},"tasks":[]}`))
			case r.URL.Path == "/":
				_, _ = w.Write([]byte(`{"version":"4.3.1"}`))
			default:
				w.WriteHeader(http.StatusAccepted)
			}
		}))
		t.Cleanup(srv.Close)
		const every = 50 * time.Millisecond
		e := New(Deps{
			Cluster: func(context.Context, string) (connectplan.Cluster, error) {
				return connectplan.Cluster{Name: "c1", Client: connect.Config{URLs: []string{srv.URL}}}, nil
			},
			Plan: func(t task.Task, _, _ cluster.Settings, _ connectplan.Cluster) ([]connectplan.Connector, error) {
				return []connectplan.Connector{{Name: "kmirror." + t.Name + ".A-B.source", Flow: "A->B", Config: map[string]string{"connector.class": "x"},
					Copy: &connectplan.Copy{Source: cluster.Settings{Name: "nowhere"}, TargetTopic: func(s string) string { return s }}}}, nil
			},
			Names:        func(t task.Task) []string { return []string{"kmirror." + t.Name + ".A-B.source"} },
			PollInterval: every,
		})
		for i := range tasks {
			if err := e.Start(task.Task{Name: "t" + strconv.Itoa(i), Engine: task.ConnectEngine("c1")}, cluster.Settings{}, cluster.Settings{}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(3 * every)
		l0, o0 := listings.Load(), offsets.Load()
		time.Sleep(40 * every)
		rounds, reads := listings.Load()-l0, offsets.Load()-o0
		e.Close()
		perRound := float64(reads) / float64(max(rounds, 1))
		t.Logf("%d tasks: %d rounds, %d offset reads: 1 listing + %.1f offset reads a round", tasks, rounds, reads, perRound)
		if rounds < 5 {
			t.Fatalf("%d tasks: only %d polls in %s", tasks, rounds, 40*every)
		}
		if want := float64(max(1, tasks/connectorsPerRound)); perRound > want*1.5 {
			t.Errorf("%d tasks: %.1f offset reads a round, want about %.0f (1 + tasks/10 requests a round)", tasks, perRound, want)
		}
	}
}
