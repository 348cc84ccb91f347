package cluster_test

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/youmark/pkcs8"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

func issue(t testing.TB, spec kafkatest.CertSpec) kafkatest.Issued {
	t.Helper()
	ca, err := kafkatest.NewCA("test CA", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c, err := ca.Issue(spec)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func pemOf(typ string, der []byte) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
}

// Every key encoding users paste parses, and each mistake is named on its
// field.
func TestClientCertificateKeyEncodings(t *testing.T) {
	ec := issue(t, kafkatest.CertSpec{CommonName: "alice"})
	rs := issue(t, kafkatest.CertSpec{CommonName: "alice", RSA: true})
	other := issue(t, kafkatest.CertSpec{CommonName: "mallory"})

	ecSEC1, err := x509.MarshalECPrivateKey(ec.Key.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	encPKCS8, err := pkcs8.MarshalPrivateKey(ec.Key, []byte("k3y-pass"), nil)
	if err != nil {
		t.Fatal(err)
	}
	//nolint:staticcheck // legacy encrypted PEM is what users of openssl -traditional paste
	legacy, err := x509.EncryptPEMBlock(rand.Reader, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rs.Key.(*rsa.PrivateKey)), []byte("k3y-pass"), x509.PEMCipherAES256)
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name           string
		cert, key, pwd string
		field          string // "" = valid
		says           string
	}{
		{"PKCS#8 EC", ec.ChainPEM, ec.KeyPEM, "", "", ""},
		{"PKCS#8 RSA", rs.CertPEM, rs.KeyPEM, "", "", ""},
		{"PKCS#1 RSA", rs.CertPEM, pemOf("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rs.Key.(*rsa.PrivateKey))), "", "", ""},
		{"SEC 1 EC", ec.CertPEM, pemOf("EC PRIVATE KEY", ecSEC1), "", "", ""},
		{"encrypted PKCS#8", ec.CertPEM, pemOf("ENCRYPTED PRIVATE KEY", encPKCS8), "k3y-pass", "", ""},
		{"legacy encrypted PEM", rs.CertPEM, string(pem.EncodeToMemory(legacy)), "k3y-pass", "", ""},
		{"encrypted, no password", ec.CertPEM, pemOf("ENCRYPTED PRIVATE KEY", encPKCS8), "", "client_key_password", "encrypted"},
		{"encrypted, wrong password", ec.CertPEM, pemOf("ENCRYPTED PRIVATE KEY", encPKCS8), "nope", "client_key_password", "does not decrypt"},
		{"legacy, wrong password", rs.CertPEM, string(pem.EncodeToMemory(legacy)), "nope", "client_key_password", "does not decrypt"},
		{"password on a plain key", ec.CertPEM, ec.KeyPEM, "k3y-pass", "client_key_password", "not encrypted"},
		{"key of another certificate", ec.CertPEM, other.KeyPEM, "", "client_key_pem", "does not belong"},
		{"no key", ec.CertPEM, "", "", "client_key_pem", "needs its private key"},
		{"key not PEM", ec.CertPEM, "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "", "client_key_pem", "not PEM"},
		{"certificate in the key field", ec.CertPEM, ec.CertPEM, "", "client_key_pem", "CERTIFICATE block"},
		{"key in the certificate field", ec.KeyPEM, ec.KeyPEM, "", "client_cert_pem", "PRIVATE KEY block"},
		{"certificate not PEM", "hello", ec.KeyPEM, "", "client_cert_pem", "not PEM"},
		{"broken certificate", pemOf("CERTIFICATE", []byte("junk")), ec.KeyPEM, "", "client_cert_pem", "does not parse"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := cluster.Settings{ClientCertPEM: tc.cert, ClientKeyPEM: tc.key, ClientKeyPassword: tc.pwd}
			cert, err := s.ClientCertificate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("want it to parse: %v", err)
				}
				if cert.Leaf == nil || cert.Leaf.Subject.CommonName != "alice" || len(cert.Certificate) == 0 {
					t.Fatalf("leaf %+v", cert.Leaf)
				}
				return
			}
			var ce *cluster.CertError
			if !errors.As(err, &ce) {
				t.Fatalf("want a CertError on %s, got %v", tc.field, err)
			}
			if ce.Field != tc.field || !strings.Contains(ce.Error(), tc.says) {
				t.Fatalf("got %s: %q; want %s saying %q", ce.Field, ce.Error(), tc.field, tc.says)
			}
		})
	}
}

func TestClientCertInfoAndExpiry(t *testing.T) {
	end := time.Now().Add(10 * 24 * time.Hour).Truncate(time.Second)
	c := issue(t, kafkatest.CertSpec{CommonName: "alice", NotAfter: end})
	info := cluster.Settings{ClientCertPEM: c.ChainPEM}.ClientCertInfo()
	if info.Subject != "CN=alice,O=kmirror tests" || info.Issuer != "CN=test CA,O=kmirror tests" || !info.NotAfter.Equal(end) {
		t.Fatalf("info %+v", info)
	}
	if !info.ExpiresWithin(cluster.CertExpiryWarning, time.Now()) {
		t.Fatal("ends in 10 days: want within the 30-day warning")
	}
	if info.ExpiresWithin(cluster.CertExpiryWarning, end.Add(-40*24*time.Hour)) {
		t.Fatal("40 days before its end: no warning")
	}
	if (cluster.Settings{}).ClientCertInfo() != (cluster.CertInfo{}) {
		t.Fatal("no certificate: want the zero info")
	}
}

// No secret reaches a log line, String or Redacted; the secrets round-trip.
func TestSecretsNeverShown(t *testing.T) {
	s := cluster.Settings{Name: "east", BootstrapServers: []string{"k:9093"}, SecurityProtocol: cluster.SASLSSL,
		SASLMechanism: cluster.MechanismOAuthBearer, Password: "pw-1", ClientCertPEM: "CERT", ClientKeyPEM: "KEY-2",
		ClientKeyPassword: "kp-3", OAuth: cluster.OAuth{TokenEndpoint: "https://idp/token", ClientID: "c", ClientSecret: "cs-4"}}
	r := s.Redacted()
	for _, v := range []string{r.Password, r.ClientKeyPEM, r.ClientKeyPassword, r.OAuth.ClientSecret} {
		if v != "********" {
			t.Errorf("redacted secret %q", v)
		}
	}
	if r.ClientCertPEM != "CERT" || r.OAuth.ClientID != "c" {
		t.Error("redaction hid what is not secret")
	}
	w := s.WithoutSecrets()
	if !w.Secrets().IsZero() || w.ClientCertPEM != "CERT" {
		t.Errorf("without secrets: %+v", w)
	}
	if back := w.WithSecrets(s.Secrets()); back.Secrets() != s.Secrets() {
		t.Errorf("secrets lost: %+v", back.Secrets())
	}
	for _, out := range []string{s.String(), s.LogValue().String()} {
		for _, secret := range []string{"pw-1", "KEY-2", "kp-3", "cs-4"} {
			if strings.Contains(out, secret) {
				t.Errorf("%q shows %s", out, secret)
			}
		}
	}
}

func FuzzClientCertificate(f *testing.F) {
	c := issue(f, kafkatest.CertSpec{CommonName: "alice"})
	f.Add(c.ChainPEM, c.KeyPEM, "")
	f.Add("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n", "x")
	f.Fuzz(func(t *testing.T, cert, key, pwd string) {
		s := cluster.Settings{ClientCertPEM: cert, ClientKeyPEM: key, ClientKeyPassword: pwd}
		got, err := s.ClientCertificate()
		if err != nil {
			var ce *cluster.CertError
			if !errors.As(err, &ce) {
				t.Fatalf("error without a field: %v", err)
			}
			return
		}
		if got.Leaf == nil || got.PrivateKey == nil {
			t.Fatal("parsed without a leaf or key")
		}
	})
}
