package replicator

import (
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/task"
)

func TestErrorKind(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"unknown CA, wrapped", fmt.Errorf("connect to east: %w", x509.UnknownAuthorityError{}), ErrorCertificate},
		{"host name mismatch", x509.HostnameError{Host: "kafka"}, ErrorCertificate},
		{"SASL refused", fmt.Errorf("assignment 0: %w", sarama.ErrSASLAuthenticationFailed), ErrorCredentials},
		{"a failed client's per-broker error", errors.Join(sarama.ErrOutOfBrokers, sarama.ErrSASLAuthenticationFailed), ErrorCredentials},
		{"no rights on a topic", fmt.Errorf("produce: %w", sarama.ErrTopicAuthorizationFailed), ErrorAuthorization},
		{"no rights on the group", sarama.ErrGroupAuthorizationFailed, ErrorAuthorization},
		{"a broker away", fmt.Errorf("produce: %w", sarama.ErrNotLeaderForPartition), ""},
	}
	for _, c := range cases {
		if got := ErrorKind(c.err); got != c.want {
			t.Errorf("%s: ErrorKind = %q, want %q", c.name, got, c.want)
		}
	}
}

// A flow failed on credentials says so in its status; running again
// clears it.
func TestFailedFlowCarriesItsErrorKind(t *testing.T) {
	s := newFlowState("A->B")
	s.fail(fmt.Errorf("source A: %w", sarama.ErrSASLAuthenticationFailed))
	if st := s.snapshot(time.Now()); st.State != task.StateFailed || st.ErrorKind != ErrorCredentials {
		t.Fatalf("state %s kind %q", st.State, st.ErrorKind)
	}
	s.set(task.StateRunning, "")
	if st := s.snapshot(time.Now()); st.ErrorKind != "" {
		t.Fatalf("kind %q after running again", st.ErrorKind)
	}
}

// An internal topic partition without a leader degrades a running flow
// once it lasted DegradedAfter, naming the partition longest without one
// and what waits; a leader found again clears it.
func TestLeaderlessInternalPartitionDegradesAfterTheWait(t *testing.T) {
	s := newFlowState("A->B")
	s.set(task.StateRunning, "")
	t0 := time.Now()
	if !s.internalLeader("kmirror-progress.A.internal", sarama.ErrLeaderNotAvailable, "progress waits", t0) {
		t.Fatal("the first leaderless round is a change")
	}
	s.internalLeader("mm2-offset-syncs.B.internal", sarama.ErrLeaderNotAvailable, "syncs wait", t0.Add(time.Second))
	if st := s.snapshot(t0.Add(defaultDegradedAfter - time.Second)); st.State != task.StateRunning {
		t.Fatalf("state %s (%s) before DegradedAfter", st.State, st.Reason)
	}
	st := s.snapshot(t0.Add(defaultDegradedAfter))
	if st.State != task.StateDegraded || !strings.HasPrefix(st.Reason, "internal topic kmirror-progress.A.internal-0 has had no leader for 30s") ||
		!strings.Contains(st.Reason, "progress waits") || !strings.HasSuffix(st.Reason, "(and 1 more internal topics without a leader)") {
		t.Fatalf("state %s (%s)", st.State, st.Reason)
	}
	s.internalLeader("kmirror-progress.A.internal", nil, "progress waits", t0.Add(40*time.Second))
	if st := s.snapshot(t0.Add(40 * time.Second)); !strings.HasPrefix(st.Reason, "internal topic mm2-offset-syncs.B.internal-0 has had no leader for 39s") {
		t.Fatalf("state %s (%s) after the progress topic's leader is back", st.State, st.Reason)
	}
	s.internalLeader("mm2-offset-syncs.B.internal", nil, "syncs wait", t0.Add(41*time.Second))
	if st := s.snapshot(t0.Add(41 * time.Second)); st.State != task.StateRunning {
		t.Fatalf("state %s (%s) with every leader back", st.State, st.Reason)
	}
}
