package clustercheck_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/clustercheck"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// One cluster with ACLs on: alice may do everything, bob nothing.
func TestMain(m *testing.M) { kafkatest.Main(m, 1, kafkatest.ACLs(true)) }

func check(t *testing.T, s cluster.Settings) clustercheck.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := clustercheck.Check(ctx, s)
	for _, st := range r.Steps {
		t.Logf("%-11s ok=%-5v skipped=%-5v %s", st.Name, st.OK, st.Skipped, st.Message)
	}
	return r
}

func names(r clustercheck.Result) []string {
	var n []string
	for _, s := range r.Steps {
		n = append(n, s.Name)
	}
	return n
}

var listeners = []struct{ protocol, mechanism string }{
	{cluster.Plaintext, ""},
	{cluster.SASLPlaintext, cluster.MechanismPlain},
	{cluster.SASLPlaintext, cluster.MechanismSCRAMSHA256},
	{cluster.SASLPlaintext, cluster.MechanismSCRAMSHA512},
	{cluster.SASLSSL, cluster.MechanismPlain},
	{cluster.SASLSSL, cluster.MechanismSCRAMSHA256},
	{cluster.SASLSSL, cluster.MechanismSCRAMSHA512},
}

func TestCheckPassesOnEveryListener(t *testing.T) {
	c := kafkatest.Shared(t, 0)
	for _, l := range listeners {
		t.Run(l.protocol+"/"+l.mechanism, func(t *testing.T) {
			s := c.Settings(l.protocol, l.mechanism)
			r := check(t, s)
			if !r.OK {
				t.Fatalf("check failed: %+v", r.Failed())
			}
			if got, want := names(r), clustercheck.Steps(s); !slices.Equal(got, want) {
				t.Fatalf("steps %v, want %v", got, want)
			}
			if r.Metadata == nil || r.Metadata.Brokers != 1 || r.Metadata.ControllerID != 1 {
				t.Fatalf("metadata %+v, want 1 broker with controller 1", r.Metadata)
			}
			// The harness runs 4.3.x: metadata.version tells 4.3 or newer.
			if release := c.Version()[:3]; !strings.HasPrefix(r.Metadata.KafkaVersion, release+" or newer") {
				t.Fatalf("kafka version %q, want %s or newer", r.Metadata.KafkaVersion, release)
			}
		})
	}
}

// Client certificates and OAUTHBEARER pass every step, each saying what it
// proved (the certificate accepted, the token obtained then accepted).
func TestCheckPassesWithCertificatesAndOAuth(t *testing.T) {
	c := kafkatest.Shared(t, 0)
	sslCert, err := c.SettingsWithCert(cluster.SSL, "")
	if err != nil {
		t.Fatal(err)
	}
	mtls, err := c.SettingsWithCert(kafkatest.ListenerMTLS, cluster.MechanismSCRAMSHA512)
	if err != nil {
		t.Fatal(err)
	}
	oauthSSL, err := c.SettingsOAuth(cluster.SASLSSL, kafkatest.AliceOAuth)
	if err != nil {
		t.Fatal(err)
	}
	oauthPlain, err := c.SettingsOAuth(cluster.SASLPlaintext, kafkatest.AliceOAuth)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		s    cluster.Settings
		says map[string]string
	}{
		"SSL with a client certificate":      {sslCert, map[string]string{clustercheck.StepTLS: `client certificate "CN=alice,O=kmirror tests" accepted`}},
		"SSL: the server's certificate":      {sslCert, map[string]string{clustercheck.StepTLS: fmt.Sprintf("with %s; certificate %q issued by %q, valid until 20", sslCert.BootstrapServers[0], "localhost", "kmirror kafkatest CA")}},
		"SASL_SSL with a client certificate": {mtls, map[string]string{clustercheck.StepTLS: "accepted", clustercheck.StepSASL: "authenticated as alice"}},
		"OAUTHBEARER over SASL_SSL":          {oauthSSL, map[string]string{clustercheck.StepSASL: "OAuth token obtained from " + oauthSSL.OAuth.TokenEndpoint}},
		"OAUTHBEARER over SASL_PLAINTEXT":    {oauthPlain, map[string]string{clustercheck.StepSASL: "accepted by the broker for client alice-client"}},
	} {
		t.Run(name, func(t *testing.T) {
			r := check(t, tc.s)
			if !r.OK {
				t.Fatalf("check failed: %+v", r.Failed())
			}
			if got, want := names(r), clustercheck.Steps(tc.s); !slices.Equal(got, want) {
				t.Fatalf("steps %v, want %v", got, want)
			}
			for _, st := range r.Steps {
				if want, ok := tc.says[st.Name]; ok && !strings.Contains(st.Message, want) {
					t.Errorf("%s says %q, want %q", st.Name, st.Message, want)
				}
			}
		})
	}
}

// Each failure of a client certificate or an OAuth grant is named at its step.
func TestCheckCertificateAndOAuthFailures(t *testing.T) {
	c := kafkatest.Shared(t, 0)
	withCert := func(issued kafkatest.Issued) cluster.Settings {
		s, err := c.SettingsWithCert(cluster.SSL, "")
		if err != nil {
			t.Fatal(err)
		}
		s.ClientCertPEM, s.ClientKeyPEM = issued.ChainPEM, issued.KeyPEM
		return s
	}
	expired, err := c.CA().Issue(kafkatest.CertSpec{CommonName: "alice", NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	other, err := kafkatest.NewCA("another CA", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := other.ClientCert(kafkatest.Alice)
	if err != nil {
		t.Fatal(err)
	}
	noCert := c.Settings(cluster.SSL, "")
	noCert.BootstrapServers = c.BootstrapServers(cluster.SSL)
	oauth := func(edit func(*cluster.OAuth)) cluster.Settings {
		s, err := c.SettingsOAuth(cluster.SASLSSL, kafkatest.AliceOAuth)
		if err != nil {
			t.Fatal(err)
		}
		edit(&s.OAuth)
		return s
	}
	idp, err := kafkatest.Identity()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		s        cluster.Settings
		step     string
		contains []string
	}{
		{"no client certificate", noCert, clustercheck.StepTLS, []string{"requires a client certificate", "client_cert_pem"}},
		{"expired client certificate", withCert(expired), clustercheck.StepTLS, []string{`client certificate "CN=alice,O=kmirror tests" expired on`, "issue a new one"}},
		{"certificate from another CA", withCert(foreign), clustercheck.StepTLS, []string{"did not accept the client certificate", "signed by a CA in the broker's ssl.truststore"}},
		{"host name mismatch", hostMismatch(t), clustercheck.StepTLS, []string{"failed: x509: cannot validate certificate for 127.0.0.1", "connect with a host name or IP address the broker's certificate lists"}},
		{"wrong client secret", oauth(func(o *cluster.OAuth) { o.ClientSecret = "wrong" }), clustercheck.StepSASL,
			[]string{"could not get an OAuth token", idp.TokenURL(), "HTTP 401", "invalid_client", "check oauth.client_id and oauth.client_secret"}},
		{"unknown client", oauth(func(o *cluster.OAuth) { o.ClientID = "nobody" }), clustercheck.StepSASL, []string{"invalid_client"}},
		{"token endpoint not there", oauth(func(o *cluster.OAuth) { o.TokenEndpoint = "http://" + closedPort(t) + "/token" }), clustercheck.StepSASL,
			[]string{"could not get an OAuth token", "cannot be reached"}},
		{"token for another audience", oauth(func(o *cluster.OAuth) { o.Audience = "not-kafka" }), clustercheck.StepSASL,
			[]string{"the broker refused the OAuth token of client alice-client"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := check(t, tc.s)
			f := r.Failed()
			if r.OK || f == nil || f.Name != tc.step {
				t.Fatalf("failed step %+v, want %s", f, tc.step)
			}
			for _, want := range tc.contains {
				if !strings.Contains(f.Message, want) {
					t.Errorf("message %q does not say %q", f.Message, want)
				}
			}
		})
	}
}

// hostMismatch is a TLS listener on loopback whose certificate names
// another host, reached with a CA that trusts it: only the name is wrong.
func hostMismatch(t *testing.T) cluster.Settings {
	t.Helper()
	ca, err := kafkatest.NewCA("mismatch CA", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Issue(kafkatest.CertSpec{CommonName: "kafka.example.com", DNSNames: []string{"kafka.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair([]byte(srv.ChainPEM), []byte(srv.KeyPEM))
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				_ = conn.(*tls.Conn).Handshake()
				conn.Close()
			}()
		}
	}()
	return cluster.Settings{Name: "mismatch", BootstrapServers: []string{l.Addr().String()}, SecurityProtocol: cluster.SSL, CAPEM: ca.PEM}
}

// Each failure stops at its own step with a message naming the fix.
func TestCheckFailures(t *testing.T) {
	c := kafkatest.Shared(t, 0)
	wrongPassword := func(protocol, mech string) cluster.Settings {
		s := c.Settings(protocol, mech)
		s.Password = "not-" + s.Password
		return s
	}
	otherCA := c.Settings(cluster.SASLSSL, cluster.MechanismSCRAMSHA512)
	otherCA.CAPEM = selfSignedCA(t)
	noCA := c.Settings(cluster.SASLSSL, cluster.MechanismSCRAMSHA512)
	noCA.CAPEM = ""
	unknownUser := c.SettingsAs(cluster.SASLPlaintext, cluster.MechanismSCRAMSHA256, kafkatest.User{Name: "mallory", Password: "x"})
	closed := closedPort(t)
	unreachable := cluster.Settings{Name: "gone", BootstrapServers: []string{closed}, SecurityProtocol: cluster.Plaintext}
	tlsToPlainPort := c.Settings(cluster.SASLSSL, cluster.MechanismPlain)
	tlsToPlainPort.BootstrapServers = []string{c.Bootstrap(cluster.SASLPlaintext)}
	plainToSASLPort := c.Settings(cluster.Plaintext, "")
	plainToSASLPort.BootstrapServers = []string{c.Bootstrap(cluster.SASLPlaintext)}
	badAddress := cluster.Settings{BootstrapServers: []string{"localhost"}, SecurityProtocol: cluster.Plaintext}
	badCAPEM := c.Settings(cluster.SASLSSL, cluster.MechanismPlain)
	badCAPEM.CAPEM = "not a certificate"

	cases := []struct {
		name     string
		s        cluster.Settings
		step     string
		contains []string
	}{
		{"wrong password SCRAM-SHA-512 over TLS", wrongPassword(cluster.SASLSSL, cluster.MechanismSCRAMSHA512), clustercheck.StepSASL,
			[]string{"SASL authentication failed for user alice with SCRAM-SHA-512 — check the user name, password and mechanism"}},
		{"wrong password SCRAM-SHA-256", wrongPassword(cluster.SASLPlaintext, cluster.MechanismSCRAMSHA256), clustercheck.StepSASL,
			[]string{"SASL authentication failed for user alice with SCRAM-SHA-256"}},
		{"wrong password PLAIN", wrongPassword(cluster.SASLPlaintext, cluster.MechanismPlain), clustercheck.StepSASL,
			[]string{"SASL authentication failed for user alice with PLAIN"}},
		{"unknown user", unknownUser, clustercheck.StepSASL,
			[]string{"SASL authentication failed for user mallory with SCRAM-SHA-256"}},
		{"wrong CA", otherCA, clustercheck.StepTLS,
			[]string{"TLS handshake with " + c.Bootstrap(cluster.SASLSSL) + " failed: certificate signed by unknown authority — give the cluster's CA certificate in ca_pem"}},
		{"no CA", noCA, clustercheck.StepTLS,
			[]string{"certificate signed by unknown authority — give the cluster's CA certificate in ca_pem"}},
		{"ca_pem is not PEM", badCAPEM, clustercheck.StepTLS,
			[]string{"ca_pem holds no PEM certificate"}},
		{"unreachable port", unreachable, clustercheck.StepTCP,
			[]string{"cannot reach " + closed + ": connection refused — check the address and that the broker is running"}},
		{"TLS to a plaintext port", tlsToPlainPort, clustercheck.StepTLS,
			[]string{"closed the connection", "security protocol"}},
		{"no SASL to a SASL port", plainToSASLPort, clustercheck.StepMetadata,
			[]string{"security protocol", "PLAINTEXT given"}},
		{"address without port", badAddress, clustercheck.StepTCP,
			[]string{`bootstrap server "localhost" is not host:port`}},
		{"bob may not create topics", c.SettingsAs(cluster.SASLSSL, cluster.MechanismSCRAMSHA512, kafkatest.Bob), clustercheck.StepPermissions,
			[]string{"user bob may not create topics", "user bob may not read consumer-group offsets"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := check(t, tc.s)
			if r.OK {
				t.Fatal("check passed, want a failure")
			}
			f := r.Failed()
			if f == nil || f.Name != tc.step {
				t.Fatalf("failed step %+v, want %s", f, tc.step)
			}
			for _, want := range tc.contains {
				if !strings.Contains(f.Message, want) {
					t.Errorf("message %q does not say %q", f.Message, want)
				}
			}
			after := false
			for _, st := range r.Steps {
				if after && (!st.Skipped || st.OK) {
					t.Errorf("step %s after the failed %s ran: %+v", st.Name, f.Name, st)
				}
				after = after || st.Name == f.Name
			}
		})
	}
}

// closedPort is an address nothing listens on: a port just released.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// selfSignedCA is a CA that signed nothing the broker holds.
func selfSignedCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "some other CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}
