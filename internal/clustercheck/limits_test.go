package clustercheck_test

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/clustercheck"
	"github.com/kmirror/kmirror/internal/embedded"
)

// The demo's own clusters (franz-go's kfake) answer GROUP_ID_NOT_FOUND for
// the offsets of a group they do not know, where Apache Kafka answers -1
// offsets: the permissions step passes on both.
func TestCheckPassesOnEmbeddedClusters(t *testing.T) {
	c, err := embedded.Start("demo-east", embedded.Brokers(3))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	r := check(t, c.Settings())
	if !r.OK {
		t.Fatalf("check of an embedded cluster failed: %+v", r.Failed())
	}
	if r.Metadata == nil || r.Metadata.Brokers != 3 {
		t.Fatalf("metadata %+v, want 3 brokers", r.Metadata)
	}
}

// Of a cluster advertising more brokers than the limit, only the limit's
// number are contacted, and the step says so.
func TestCheckContactsAtMostTheBrokerLimit(t *testing.T) {
	c, err := embedded.Start("many", embedded.Brokers(5))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s := c.Settings()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := clustercheck.CheckWithin(ctx, s, clustercheck.Limits{Brokers: 2, ParallelDials: 1})
	if !r.OK {
		t.Fatalf("check failed: %+v", r.Failed())
	}
	var tcp, meta string
	for _, st := range r.Steps {
		switch st.Name {
		case clustercheck.StepTCP:
			tcp = st.Message
		case clustercheck.StepMetadata:
			meta = st.Message
		}
	}
	if !strings.Contains(tcp, "3 more bootstrap servers not tried") || !strings.Contains(meta, "advertised addresses of 2 of them checked") {
		t.Fatalf("tcp %q, metadata %q: want 2 of the 5 brokers contacted, and said", tcp, meta)
	}
}

// silentListener accepts connections and never answers, like a port that
// is not Kafka or a broker that hangs.
type silentListener struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newSilentListener(t *testing.T) *silentListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &silentListener{ln: ln}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			l.mu.Lock()
			l.conns = append(l.conns, conn)
			l.mu.Unlock()
			go func() {
				_, _ = io.Copy(io.Discard, conn) // reads, never answers, until the client gives up
				conn.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		l.mu.Lock()
		for _, c := range l.conns {
			c.Close()
		}
		l.mu.Unlock()
	})
	return l
}

// A listener that accepts and never answers cannot hold the check past its
// deadline: the step waiting on it is reported as not finished, not after
// the client's own (longer) timeouts.
func TestCheckEndsAtItsDeadline(t *testing.T) {
	l := newSilentListener(t)
	s := cluster.Settings{Name: "silent", BootstrapServers: []string{l.ln.Addr().String()}, SecurityProtocol: cluster.Plaintext}
	r := clustercheck.CheckWithin(context.Background(), s, clustercheck.Limits{Deadline: 2 * time.Second})
	f := r.Failed()
	if r.OK || f == nil || f.Name != clustercheck.StepMetadata || !strings.Contains(f.Message, "not finished within") {
		t.Fatalf("failed step %+v, want metadata not finished within the deadline", f)
	}
	if r.Steps[len(r.Steps)-1].Name != clustercheck.StepPermissions || !r.Steps[len(r.Steps)-1].Skipped {
		t.Fatalf("steps after the deadline ran: %+v", r.Steps)
	}
}
