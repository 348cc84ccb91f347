package cluster

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/youmark/pkcs8"
)

// TLSConfig verifies the brokers' certificates against the given CA, or the
// system roots when none is given, and checks their host names (Go's
// default; kmirror never skips verification). A client certificate, when
// given, is presented to brokers that ask for one.
func (s Settings) TLSConfig() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if strings.TrimSpace(s.CAPEM) != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(s.CAPEM)) {
			return nil, errors.New("ca_pem holds no PEM certificate: paste the cluster's CA certificate (-----BEGIN CERTIFICATE-----...)")
		}
		tc.RootCAs = pool
	}
	if s.HasClientCert() || s.ClientKeyPEM != "" {
		cert, err := s.ClientCertificate()
		if err != nil {
			return nil, err
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// CertError says which part of a client certificate is wrong: Field is the
// settings' JSON name (client_cert_pem, client_key_pem or
// client_key_password), so forms and the API put the message by the field.
type CertError struct {
	Field string
	Err   error
}

func (e *CertError) Error() string { return e.Field + ": " + e.Err.Error() }

func (e *CertError) Unwrap() error { return e.Err }

// ClientCertificate parses the client certificate chain and its key
// (PKCS#8, PKCS#1 or SEC 1 EC; encrypted PKCS#8 or legacy encrypted PEM with
// ClientKeyPassword) and checks that the key belongs to the leaf. Its errors
// are *CertError.
func (s Settings) ClientCertificate() (tls.Certificate, error) {
	chain, err := ParseCertificates(s.ClientCertPEM)
	if err != nil {
		return tls.Certificate{}, &CertError{"client_cert_pem", err}
	}
	if s.ClientKeyPEM == "" {
		return tls.Certificate{}, &CertError{"client_key_pem", errors.New("a client certificate needs its private key (PEM)")}
	}
	key, err := parsePrivateKey(s.ClientKeyPEM, s.ClientKeyPassword)
	if err != nil {
		return tls.Certificate{}, err
	}
	if !publicKeyMatches(chain[0].PublicKey, key) {
		return tls.Certificate{}, &CertError{"client_key_pem", errors.New("the private key does not belong to the client certificate (the first certificate of the chain): paste the key the certificate was issued for")}
	}
	cert := tls.Certificate{PrivateKey: key, Leaf: chain[0]}
	for _, c := range chain {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	return cert, nil
}

// ClientKeyPKCS8 is the client key as unencrypted PKCS#8 PEM, the form
// Java's PEM keystore reads without a password (Kafka Connect workers).
func (s Settings) ClientKeyPKCS8() (string, error) {
	cert, err := s.ClientCertificate()
	if err != nil {
		return "", err
	}
	der, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return "", fmt.Errorf("encode the client key as PKCS#8: %w", err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), nil
}

// ParseCertificates reads every CERTIFICATE block of a PEM text, in order;
// at least one, and nothing that is not a certificate.
func ParseCertificates(text string) ([]*x509.Certificate, error) {
	rest := []byte(strings.TrimSpace(text))
	if len(rest) == 0 {
		return nil, errors.New("no certificate given: paste the PEM certificate (-----BEGIN CERTIFICATE-----...), leaf first, then its intermediates")
	}
	var out []*x509.Certificate
	for len(bytes.TrimSpace(rest)) > 0 {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, errors.New("not PEM: paste the certificate as PEM text (-----BEGIN CERTIFICATE-----...)")
		}
		if b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("holds a %s block: only CERTIFICATE blocks belong here (the key goes in its own field)", b.Type)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d does not parse: %w", len(out)+1, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// parsePrivateKey reads one PEM private key; its errors are *CertError.
func parsePrivateKey(text, password string) (crypto.Signer, error) {
	b, rest := pem.Decode([]byte(strings.TrimSpace(text)))
	if b == nil {
		return nil, &CertError{"client_key_pem", errors.New("not PEM: paste the private key as PEM text (-----BEGIN PRIVATE KEY-----...)")}
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return nil, &CertError{"client_key_pem", errors.New("holds more than one PEM block: paste only the private key")}
	}
	der := b.Bytes
	//nolint:staticcheck // legacy encrypted PEM (Proc-Type: 4,ENCRYPTED) is what openssl's -traditional writes; Go reads it only through these deprecated calls.
	if x509.IsEncryptedPEMBlock(b) {
		if password == "" {
			return nil, &CertError{"client_key_password", errors.New("the private key is encrypted: give its password")}
		}
		var err error
		//nolint:staticcheck // see above
		if der, err = x509.DecryptPEMBlock(b, []byte(password)); err != nil {
			return nil, &CertError{"client_key_password", errors.New("the password does not decrypt the private key")}
		}
	}
	var key any
	var err error
	switch b.Type {
	case "ENCRYPTED PRIVATE KEY":
		if password == "" {
			return nil, &CertError{"client_key_password", errors.New("the private key is encrypted: give its password")}
		}
		if key, err = pkcs8.ParsePKCS8PrivateKey(der, []byte(password)); err != nil {
			return nil, &CertError{"client_key_password", fmt.Errorf("the password does not decrypt the private key (%v)", err)}
		}
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(der)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(der)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(der)
	default:
		return nil, &CertError{"client_key_pem", fmt.Errorf("holds a %s block: give a PRIVATE KEY, RSA PRIVATE KEY, EC PRIVATE KEY or ENCRYPTED PRIVATE KEY", b.Type)}
	}
	if err != nil {
		return nil, &CertError{"client_key_pem", fmt.Errorf("the private key does not parse: %w", err)}
	}
	if password != "" && b.Type != "ENCRYPTED PRIVATE KEY" && !x509.IsEncryptedPEMBlock(b) { //nolint:staticcheck // see above
		return nil, &CertError{"client_key_password", errors.New("the private key is not encrypted: clear the key password")}
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, &CertError{"client_key_pem", fmt.Errorf("a %T key cannot sign a TLS handshake", key)}
	}
	return signer, nil
}

func publicKeyMatches(pub crypto.PublicKey, key crypto.Signer) bool {
	switch p := pub.(type) {
	case *rsa.PublicKey:
		return p.Equal(key.Public())
	case *ecdsa.PublicKey:
		return p.Equal(key.Public())
	case ed25519.PublicKey:
		return p.Equal(key.Public())
	}
	return false
}

// CertInfo is what the console and the API show of a certificate: never
// the key.
type CertInfo struct {
	Subject  string    `json:"subject"`
	Issuer   string    `json:"issuer"`
	NotAfter time.Time `json:"not_after"`
}

// ExpiresWithin reports whether the certificate ends within d of now (or
// has ended).
func (c CertInfo) ExpiresWithin(d time.Duration, now time.Time) bool {
	return !c.NotAfter.IsZero() && c.NotAfter.Sub(now) < d
}

// CertExpiryWarning is how long before its end a client certificate is
// warned about (console, metrics, alert rule).
const CertExpiryWarning = 30 * 24 * time.Hour

// ClientCertInfo describes the leaf of the client certificate, or is zero
// when none is given or it does not parse.
func (s Settings) ClientCertInfo() CertInfo {
	chain, err := ParseCertificates(s.ClientCertPEM)
	if err != nil {
		return CertInfo{}
	}
	return InfoOf(chain[0])
}

// InfoOf describes a certificate.
func InfoOf(c *x509.Certificate) CertInfo {
	return CertInfo{Subject: c.Subject.String(), Issuer: c.Issuer.String(), NotAfter: c.NotAfter.UTC()}
}
