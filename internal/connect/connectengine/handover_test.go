package connectengine

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/connect"
)

// A worker that was revoked a stopped connector's task in a rebalance
// commits the task's last offsets after the leader already shows the
// connector STOPPED with no task (as Connect does when another
// connector's rebalance runs at the same time): the offsets read after
// StopConnectors include that commit, so a handover copies nothing twice.
func TestStopConnectorsWaitsForTheLastCommit(t *testing.T) {
	var mu sync.Mutex
	var stoppedAt time.Time
	const lateCommit = 2 * time.Second // well inside Connect's 5 s graceful stop
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		mu.Lock()
		defer mu.Unlock()
		switch r.Method + " " + r.URL.Path {
		case "PUT /connectors/mm2/stop":
			stoppedAt = time.Now()
			w.WriteHeader(http.StatusAccepted)
		case "GET /connectors/mm2/status":
			_ = json.NewEncoder(w).Encode(connect.ConnectorStatus{Name: "mm2",
				Connector: connect.WorkerState{State: connect.StateStopped, WorkerID: "w1:8083"}, Tasks: []connect.TaskState{}})
		case "GET /connectors/mm2/offsets":
			offs := connect.Offsets{Offsets: []connect.Offset{connect.MirrorSourceOffset("A", "t", 0, 99)}}
			if !stoppedAt.IsZero() && time.Since(stoppedAt) >= lateCommit {
				offs.Offsets = append(offs.Offsets, connect.MirrorSourceOffset("A", "t", 1, 199))
			}
			_ = json.NewEncoder(w).Encode(offs)
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error_code":404,"message":"not found"}`))
		}
	}))
	defer srv.Close()
	client, err := connect.New(connect.Config{URLs: []string{srv.URL}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	if err := StopConnectors(ctx, client, []string{"mm2"}); err != nil {
		t.Fatal(err)
	}
	offs, err := client.Offsets(ctx, "mm2")
	if err != nil {
		t.Fatal(err)
	}
	if len(offs.Offsets) != 2 {
		t.Fatalf("offsets after the stop: %+v, want partition 1's late commit too", offs.Offsets)
	}

	// A connector that is not there is refused, not taken as stopped.
	if err := StopConnectors(ctx, client, []string{"gone"}); !connect.IsNotFound(err) {
		t.Fatalf("stop a missing connector: %v, want not found", err)
	}
}
