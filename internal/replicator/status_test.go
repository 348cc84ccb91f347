package replicator

import (
	"crypto/x509"
	"errors"
	"fmt"
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
