package connectengine

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/connect/connectplan"
)

// fakeOffsets is a worker holding one connector's state and offsets, which
// counts the offset changes it is asked for.
type fakeOffsets struct {
	mu      sync.Mutex
	state   string
	offsets map[string]int64 // "topic/partition" -> MM2's last copied offset
	altered [][]connect.Offset
}

func (f *fakeOffsets) serve(t *testing.T) *connect.Client {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		f.mu.Lock()
		defer f.mu.Unlock()
		switch r.Method + " " + r.URL.Path {
		case "PUT /connectors/c/stop":
			f.state = connect.StateStopped
			w.WriteHeader(http.StatusAccepted)
		case "GET /connectors/c/status":
			_ = json.NewEncoder(w).Encode(connect.ConnectorStatus{Name: "c", Connector: connect.WorkerState{State: f.state}, Tasks: []connect.TaskState{}})
		case "GET /connectors/c/offsets":
			var out connect.Offsets
			for key, off := range f.offsets {
				var topic string
				var p int32
				_, _ = fmt.Sscanf(key, "%1s/%d", &topic, &p)
				out.Offsets = append(out.Offsets, connect.MirrorSourceOffset("A", topic, p, off))
			}
			_ = json.NewEncoder(w).Encode(out)
		case "PATCH /connectors/c/offsets":
			if f.state != connect.StateStopped {
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(`{"error_code":400,"message":"connector must be stopped"}`))
				return
			}
			var body struct{ Offsets []connect.Offset }
			_ = json.NewDecoder(r.Body).Decode(&body)
			f.altered = append(f.altered, body.Offsets)
			for _, o := range body.Offsets {
				pos, _ := o.MirrorSource()
				f.offsets[fmt.Sprintf("%s/%d", pos.Topic, pos.Partition)] = pos.Offset
			}
			_, _ = w.Write([]byte(`{"message":"altered"}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error_code":404,"message":"not found"}`))
		}
	}))
	t.Cleanup(srv.Close)
	client, err := connect.New(connect.Config{URLs: []string{srv.URL}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	return client
}

// Once home, the forward copy moves past what the way back wrote to its
// source: from the stretch's start, from before it (a tail of transaction
// markers MM2 never copies ended the drained partition), and from no offset
// at all (a partition empty at the switchover). A partition already past it
// stays, and a second start changes nothing.
func TestSkipReturnedMovesOnlyPastTheWayBacksStretch(t *testing.T) {
	f := &fakeOffsets{state: connect.StateStopped, offsets: map[string]int64{"t/0": 99, "t/1": 70, "t/2": 95}}
	client := f.serve(t)
	ctx := context.Background()
	c := connectplan.Connector{Name: "c", Config: map[string]string{"source.cluster.alias": "A"},
		Skip: map[string]connectplan.Stretch{"t/0": {From: 100, To: 130}, "t/1": {From: 50, To: 60},
			"t/2": {From: 100, To: 110}, "t/3": {From: 0, To: 7}, "t/4": {From: 0, To: 0}}}
	if err := skipReturned(ctx, client, c); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"t/0": 129, "t/1": 70, "t/2": 109, "t/3": 6}
	if fmt.Sprint(f.offsets) != fmt.Sprint(want) {
		t.Fatalf("offsets %v, want %v: past each stretch, t/1 where it was, t/4 (nothing written) untouched", f.offsets, want)
	}
	if err := skipReturned(ctx, client, c); err != nil {
		t.Fatal(err)
	}
	if len(f.altered) != 1 {
		t.Fatalf("%d offset changes, want 1: the second start changes nothing", len(f.altered))
	}
}

// A way back's connector that kmirror created STOPPED but stopped before
// placing (a crash between the two) is placed at the next start: on the
// partitions without an offset, and on those whose offset is behind the
// point (an earlier way back's); one past it copied already and stays.
// Placed, it is left alone.
func TestFinishStartPlacesOnlyWhatHasNoOffset(t *testing.T) {
	f := &fakeOffsets{state: connect.StateStopped, offsets: map[string]int64{"t/0": 140, "t/3": 10}}
	client := f.serve(t)
	ctx := context.Background()
	c := connectplan.Connector{Name: "c", Config: map[string]string{"source.cluster.alias": "A"},
		StartAt: map[string]int64{"t/0": 100, "t/1": 40, "t/2": 0, "t/3": 50}}
	if err := finishStart(ctx, client, c); err != nil {
		t.Fatal(err)
	}
	if want := map[string]int64{"t/0": 140, "t/1": 39, "t/3": 49}; fmt.Sprint(f.offsets) != fmt.Sprint(want) {
		t.Fatalf("offsets %v, want %v: t/0 kept, t/1 and t/3 at the point, t/2 from its start", f.offsets, want)
	}
	if err := finishStart(ctx, client, c); err != nil {
		t.Fatal(err)
	}
	if len(f.altered) != 1 {
		t.Fatalf("%d offset changes, want 1", len(f.altered))
	}
}
