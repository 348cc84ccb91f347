package clustercheck

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
)

// Error is a connection failure said in words a user can act on. Step is the
// check step the failure belongs to; Err is the underlying error.
type Error struct {
	Step    string
	Message string
	Err     error
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Err }

// Explain turns an error from dialing, TLS, SASL or a sarama client or admin
// constructor into an *Error naming what failed and what to do. addr is the
// broker it happened on ("" for a whole client); nil stays nil.
func Explain(s cluster.Settings, addr string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	step, msg := explain(s, addr, err)
	return &Error{Step: step, Message: msg, Err: err}
}

// explain picks the most specific cause: sarama wraps the per-broker errors
// of a failed client in ErrOutOfBrokers, so errors.As digs for them.
func explain(s cluster.Settings, addr string, err error) (step, msg string) {
	where := addr
	if where == "" {
		where = strings.Join(s.BootstrapServers, ",")
	}
	var (
		dnsErr      *net.DNSError
		unknownCA   x509.UnknownAuthorityError
		hostErr     x509.HostnameError
		invalidCert x509.CertificateInvalidError
		recordErr   tls.RecordHeaderError
		netErr      net.Error
		opErr       *net.OpError
		kerr        sarama.KError
		tokenErr    *cluster.TokenError
	)
	switch {
	case errors.Is(err, context.Canceled):
		return StepTCP, "the check was cancelled"
	case errors.As(err, &dnsErr):
		return StepTCP, fmt.Sprintf("cannot resolve host %s: %s — check the host name in the bootstrap servers", dnsErr.Name, dnsErr.Err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return StepTCP, fmt.Sprintf("cannot reach %s: connection refused — check the address and that the broker is running", where)
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return StepTCP, fmt.Sprintf("cannot reach %s: no route to host — check the address and the network between kmirror and the broker", where)
	case errors.As(err, &opErr) && opErr.Op == "dial" && opErr.Timeout():
		return StepTCP, fmt.Sprintf("cannot reach %s: no answer to connect — check the address, firewalls and security groups", where)

	case errors.As(err, &tokenErr):
		return StepSASL, fmt.Sprintf("could not get an OAuth token: %v", tokenErr)
	case errors.As(err, &unknownCA):
		return StepTLS, fmt.Sprintf("TLS handshake with %s failed: certificate signed by unknown authority — give the cluster's CA certificate in ca_pem", where)
	case errors.As(err, &hostErr):
		return StepTLS, fmt.Sprintf("TLS handshake with %s failed: %v — connect with a host name or IP address the broker's certificate lists", where, hostErr)
	case errors.As(err, &invalidCert):
		return StepTLS, fmt.Sprintf("TLS handshake with %s failed: %v — the broker needs a valid certificate (check its dates and usage)", where, invalidCert)
	case errors.As(err, &recordErr):
		return StepTLS, fmt.Sprintf("%s does not speak TLS — use the broker's SASL_SSL port, or the security protocol its port speaks (PLAINTEXT or SASL_PLAINTEXT)", where)
	// After the typed TLS errors: these read err.Error(), which an x509
	// error made without its certificate cannot give.
	case isRemoteTLSAlert(err, "certificate required") || (!s.HasClientCert() && isRemoteTLSAlert(err, "bad certificate")):
		// Java brokers answer a missing certificate with bad_certificate.
		return StepTLS, fmt.Sprintf("the broker at %s requires a client certificate — give client_cert_pem and client_key_pem (a certificate its ssl.truststore trusts)", where)
	case isRemoteTLSAlert(err, "bad certificate", "unknown certificate authority", "certificate unknown", "certificate expired", "certificate revoked", "unsupported certificate"):
		return StepTLS, fmt.Sprintf("the broker at %s did not accept the client certificate%s (%s) — it must be valid today and signed by a CA in the broker's ssl.truststore", where, certSubject(s), remoteAlert(err))

	case errors.Is(err, sarama.ErrSASLAuthenticationFailed) && s.UsesOAuth():
		return StepSASL, fmt.Sprintf("the broker refused the OAuth token of client %s: %v — check that the brokers trust the identity provider's keys (sasl.oauthbearer.jwks.endpoint.url), issuer and audience, and oauth.scope and oauth.audience here", s.OAuth.ClientID, err)
	case errors.Is(err, sarama.ErrSASLAuthenticationFailed):
		return StepSASL, fmt.Sprintf("SASL authentication failed for user %s with %s — check the user name, password and mechanism", s.Username, s.SASLMechanism)
	case errors.Is(err, sarama.ErrUnsupportedSASLMechanism):
		return StepSASL, fmt.Sprintf("the broker at %s does not accept SASL mechanism %s — choose a mechanism its listener enables", where, s.SASLMechanism)
	case errors.Is(err, sarama.ErrIllegalSASLState):
		return StepSASL, fmt.Sprintf("the broker at %s rejected the SASL exchange — check that this port is a SASL listener and the mechanism is right", where)

	case errors.As(err, &kerr) && (kerr == sarama.ErrTopicAuthorizationFailed || kerr == sarama.ErrClusterAuthorizationFailed || kerr == sarama.ErrGroupAuthorizationFailed):
		return StepPermissions, fmt.Sprintf("user %s is not authorized: %v — ask the cluster's operator for the ACLs kmirror needs", userOrAnonymous(s), kerr)

	case isClosed(err):
		return closedStep(s), fmt.Sprintf("the broker at %s closed the connection — check the security protocol for this port (%s given): the listener may expect TLS, SASL or neither", where, protocolName(s))
	case errors.As(err, &netErr) && netErr.Timeout():
		return closedStep(s), fmt.Sprintf("the broker at %s did not answer in time — check the address and the security protocol for this port (%s given)", where, protocolName(s))
	case errors.Is(err, sarama.ErrOutOfBrokers):
		return StepMetadata, fmt.Sprintf("no broker of %s answered: %v — check the bootstrap servers and that the brokers are running", where, err)
	}
	return StepMetadata, fmt.Sprintf("cannot talk to %s: %v", where, err)
}

// isClosed is the peer hanging up, which brokers do when the client speaks
// the wrong protocol (TLS to a plain port, no SASL to a SASL port...).
func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// closedStep guesses which step a hang-up belongs to: the first one that
// talks the listener's protocol.
func closedStep(s cluster.Settings) string {
	switch {
	case s.UsesTLS():
		return StepTLS
	case s.UsesSASL():
		return StepSASL
	}
	return StepMetadata
}

func protocolName(s cluster.Settings) string {
	if s.SecurityProtocol == "" {
		return cluster.Plaintext
	}
	return s.SecurityProtocol
}

func userOrAnonymous(s cluster.Settings) string {
	switch {
	case s.UsesOAuth():
		return "of OAuth client " + s.OAuth.ClientID
	case s.UsesSASL() && s.Username != "":
		return s.Username
	case s.HasClientCert():
		if sub := s.ClientCertInfo().Subject; sub != "" {
			return sub
		}
	}
	return "ANONYMOUS"
}

// isRemoteTLSAlert reports whether err is a TLS alert the broker sent, with
// one of the descriptions given (crypto/tls keeps the received alert's type
// unexported: "remote error: tls: bad certificate").
func isRemoteTLSAlert(err error, descriptions ...string) bool {
	a := remoteAlert(err)
	for _, d := range descriptions {
		if a == d {
			return true
		}
	}
	return false
}

func remoteAlert(err error) string {
	const prefix = "remote error: tls: "
	msg := err.Error()
	i := strings.Index(msg, prefix)
	if i < 0 {
		return ""
	}
	a := msg[i+len(prefix):]
	if j := strings.IndexAny(a, ";,\n"); j >= 0 {
		a = a[:j]
	}
	return strings.TrimSpace(a)
}

func certSubject(s cluster.Settings) string {
	if sub := s.ClientCertInfo().Subject; sub != "" {
		return " " + strconv.Quote(sub)
	}
	return ""
}
