package clustercheck

import (
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
)

func TestExplain(t *testing.T) {
	scram := cluster.Settings{BootstrapServers: []string{"b1:9093"}, SecurityProtocol: cluster.SASLSSL, SASLMechanism: cluster.MechanismSCRAMSHA512, Username: "alice", Password: "pw"}
	plain := cluster.Settings{BootstrapServers: []string{"b1:9092"}, SecurityProtocol: cluster.Plaintext}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	cases := []struct {
		name string
		s    cluster.Settings
		err  error
		step string
		want string
	}{
		{"refused", plain, refused, StepTCP, "cannot reach 127.0.0.1:9: connection refused — check the address and that the broker is running"},
		{"refused inside sarama's out of brokers", plain, sarama.Wrap(sarama.ErrOutOfBrokers, refused), StepTCP, "connection refused"},
		{"dns", plain, &net.DNSError{Name: "nowhere.invalid", Err: "no such host", IsNotFound: true}, StepTCP, "cannot resolve host nowhere.invalid: no such host — check the host name"},
		{"unknown CA", scram, fmt.Errorf("tls: %w", x509.UnknownAuthorityError{}), StepTLS, "certificate signed by unknown authority — give the cluster's CA certificate in ca_pem"},
		{"sasl", scram, sarama.Wrap(sarama.ErrOutOfBrokers, sarama.ErrSASLAuthenticationFailed), StepSASL, "SASL authentication failed for user alice with SCRAM-SHA-512 — check the user name, password and mechanism"},
		{"mechanism", scram, sarama.ErrUnsupportedSASLMechanism, StepSASL, "does not accept SASL mechanism SCRAM-SHA-512"},
		{"hang-up on TLS", scram, io.EOF, StepTLS, "closed the connection — check the security protocol for this port (SASL_SSL given)"},
		{"hang-up on plaintext", plain, syscall.ECONNRESET, StepMetadata, "(PLAINTEXT given)"},
		{"authorization", plain, sarama.ErrTopicAuthorizationFailed, StepPermissions, "user ANONYMOUS is not authorized"},
		{"other", plain, errors.New("boom"), StepMetadata, "cannot talk to b1:9092: boom"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr := ""
			if tc.name == "refused" {
				addr = "127.0.0.1:9"
			}
			err := Explain(tc.s, addr, tc.err)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Explain returned %T, want *Error", err)
			}
			if e.Step != tc.step {
				t.Errorf("step %s, want %s", e.Step, tc.step)
			}
			if !strings.Contains(e.Message, tc.want) {
				t.Errorf("message %q does not say %q", e.Message, tc.want)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("the explained error does not wrap the original")
			}
			if strings.Contains(e.Message, tc.s.Password) && tc.s.Password != "" {
				t.Errorf("message shows the password: %q", e.Message)
			}
		})
	}
	if Explain(plain, "", nil) != nil {
		t.Error("Explain(nil) is not nil")
	}
}

func TestSteps(t *testing.T) {
	cases := map[string]string{
		cluster.Plaintext:     "tcp metadata permissions",
		cluster.SASLPlaintext: "tcp sasl metadata permissions",
		cluster.SASLSSL:       "tcp tls sasl metadata permissions",
	}
	for protocol, want := range cases {
		if got := strings.Join(Steps(cluster.Settings{SecurityProtocol: protocol}), " "); got != want {
			t.Errorf("%s: steps %q, want %q", protocol, got, want)
		}
	}
}

func TestDescribeMetadataVersion(t *testing.T) {
	cases := map[int16]string{
		30: "4.3 or newer (metadata.version 4.3-IV0)",
		25: "4.0 or newer (metadata.version 4.0-IV3)",
		7:  "3.3 or newer (metadata.version 3.3-IV3)",
		99: "newer than 4.5 (metadata.version level 99)",
		3:  "unknown (metadata.version level 3)",
	}
	for level, want := range cases {
		if got := describeMetadataVersion(level); got != want {
			t.Errorf("level %d: %q, want %q", level, got, want)
		}
	}
}

// The JSON names are the API's (/api/v1/openapi.json).
func TestResultJSON(t *testing.T) {
	r := Result{Steps: []Step{{Name: "tcp", OK: true, Message: "reached"}, {Name: "sasl", Message: "bad"}, {Name: "metadata", Skipped: true, Message: "not run"}}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"ok":false,"steps":[{"name":"tcp","ok":true,"message":"reached"},{"name":"sasl","ok":false,"message":"bad"},{"name":"metadata","ok":false,"skipped":true,"message":"not run"}]}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	if f := r.Failed(); f == nil || f.Name != "sasl" {
		t.Fatalf("Failed() = %+v, want sasl", f)
	}
}
