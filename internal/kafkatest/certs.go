package kafkatest

import (
	"crypto"
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
	"net/http"
	"os"
	"path/filepath"
	"time"

	"software.sslmate.com/src/go-pkcs12"
)

// CA is a throw-away certificate authority made in Go, so no keytool or
// openssl is needed; Kafka reads what it signs with ssl.keystore.type=PEM
// and trusts it with ssl.truststore.type=PEM. Every cluster has one, which
// signed its brokers' certificates and which its brokers trust for client
// certificates (Cluster.CA); NewCA makes another, for "a certificate from
// another CA".
type CA struct {
	cert *x509.Certificate
	key  crypto.Signer
	// PEM is the CA certificate clients and brokers trust.
	PEM string
}

// NewCA makes a CA valid from an hour before now for a week.
func NewCA(name string, now time.Time) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate the CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"kmirror tests"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("sign the CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse the CA certificate: %w", err)
	}
	return &CA{cert: cert, key: key, PEM: string(pemBlock("CERTIFICATE", der))}, nil
}

// CertSpec says what certificate Issue makes. The zero validity is an hour
// before now to a week after.
type CertSpec struct {
	CommonName string
	// DNSNames and IPs go in the subject alternative names (a server's).
	DNSNames []string
	IPs      []net.IP
	// NotBefore and NotAfter bound the validity; zero takes the default.
	NotBefore, NotAfter time.Time
	// RSA makes an RSA 2048 key instead of an ECDSA P-256 one.
	RSA bool
}

// Issued is a certificate and its key as PEM: the chain (the certificate
// then the CA's) and the unencrypted PKCS#8 key.
type Issued struct {
	CertPEM  string // the certificate alone
	ChainPEM string // the certificate followed by the CA's
	KeyPEM   string
	Key      crypto.Signer
}

// Issue signs a certificate for spec, usable by a server and a client.
func (ca *CA) Issue(spec CertSpec) (Issued, error) {
	var key crypto.Signer
	var err error
	if spec.RSA {
		key, err = rsaKey()
	} else {
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if err != nil {
		return Issued{}, fmt.Errorf("generate a key: %w", err)
	}
	now := time.Now()
	if spec.NotBefore.IsZero() {
		spec.NotBefore = now.Add(-time.Hour)
	}
	if spec.NotAfter.IsZero() {
		spec.NotAfter = now.Add(7 * 24 * time.Hour)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: spec.CommonName, Organization: []string{"kmirror tests"}},
		NotBefore:    spec.NotBefore,
		NotAfter:     spec.NotAfter,
		DNSNames:     spec.DNSNames,
		IPAddresses:  spec.IPs,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return Issued{}, fmt.Errorf("sign the certificate of %s: %w", spec.CommonName, err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Issued{}, fmt.Errorf("encode the key of %s: %w", spec.CommonName, err)
	}
	certPEM := string(pemBlock("CERTIFICATE", der))
	return Issued{CertPEM: certPEM, ChainPEM: certPEM + ca.PEM, KeyPEM: string(pemBlock("PRIVATE KEY", pkcs8)), Key: key}, nil
}

// ClientCert issues a client certificate for user: its common name is the
// user's name, which the brokers' principal mapping makes User:<name>, so
// the ACLs granted to Alice apply to Alice's certificate too.
func (ca *CA) ClientCert(u User) (Issued, error) {
	return ca.Issue(CertSpec{CommonName: u.Name})
}

// tlsMaterial is a cluster's CA and the broker certificate it signed.
type tlsMaterial struct {
	ca *CA
	// keystorePEM is what Kafka's PEM keystore file holds: the broker's
	// certificate chain followed by its unencrypted PKCS#8 key.
	keystorePEM []byte
}

// newTLSMaterial makes a cluster's CA and its brokers' certificate (one for
// all: it names localhost and 127.0.0.1, whatever the port).
func newTLSMaterial(now time.Time) (tlsMaterial, error) {
	ca, err := NewCA("kmirror kafkatest CA", now)
	if err != nil {
		return tlsMaterial{}, err
	}
	b, err := ca.Issue(CertSpec{CommonName: "localhost", DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour)})
	if err != nil {
		return tlsMaterial{}, err
	}
	return tlsMaterial{ca: ca, keystorePEM: []byte(b.ChainPEM + b.KeyPEM)}, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

// clientCertHTTP is an HTTP client that trusts the cluster's CA and
// presents a client certificate it signed: the harness's own, to ask
// workers that require one whether they serve.
func (c *Cluster) clientCertHTTP() (*http.Client, error) {
	cert, err := c.ca.ClientCert(User{Name: "kafkatest"})
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair([]byte(cert.ChainPEM), []byte(cert.KeyPEM))
	if err != nil {
		return nil, fmt.Errorf("kafkatest: client certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(c.ca.PEM))
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, Certificates: []tls.Certificate{pair}}}}, nil
}

// storePassword protects the PKCS#12 stores of test Connect workers.
const storePassword = "kafkatest"

// writePKCS12Stores writes into dir a keystore (a certificate for
// 127.0.0.1 and localhost, server and client use, and its key) and a
// truststore holding the CA, as PKCS#12 with storePassword: what Jetty,
// Connect's REST server, reads.
func (ca *CA) writePKCS12Stores(dir string) error {
	srv, err := ca.Issue(CertSpec{CommonName: "localhost", DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		return err
	}
	leaf, err := x509.ParseCertificate(mustDER(srv.CertPEM))
	if err != nil {
		return fmt.Errorf("kafkatest: parse the worker certificate: %w", err)
	}
	ks, err := pkcs12.Modern.Encode(srv.Key, leaf, []*x509.Certificate{ca.cert}, storePassword)
	if err != nil {
		return fmt.Errorf("kafkatest: encode the keystore: %w", err)
	}
	ts, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{ca.cert}, storePassword)
	if err != nil {
		return fmt.Errorf("kafkatest: encode the truststore: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, b := range map[string][]byte{"keystore.p12": ks, "truststore.p12": ts} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func mustDER(certPEM string) []byte {
	b, _ := pem.Decode([]byte(certPEM))
	if b == nil {
		return nil
	}
	return b.Bytes
}
