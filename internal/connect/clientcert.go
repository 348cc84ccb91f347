package connect

import (
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
)

// Why a client certificate or its key is refused; ClientCertificate's
// errors wrap one of these, so a caller can name the field and the rule.
var (
	ErrNoCertificate    = errors.New("no PEM certificate")
	ErrBadCertificate   = errors.New("the certificate does not parse")
	ErrNoKey            = errors.New("no PEM private key")
	ErrEncryptedKey     = errors.New("the private key is encrypted")
	ErrBadKey           = errors.New("the private key does not parse")
	ErrKeyMismatch      = errors.New("the private key does not match the certificate")
	ErrCertificateNoKey = errors.New("a client certificate needs its private key")
	ErrKeyNoCertificate = errors.New("a private key needs its client certificate")
)

// ParseCertificates reads every CERTIFICATE block of certPEM (the leaf
// first, as a TLS client presents them).
func ParseCertificates(certPEM string) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	rest := []byte(certPEM)
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: certificate %d: %v", ErrBadCertificate, len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, ErrNoCertificate
	}
	return certs, nil
}

// ParsePrivateKey reads the first private key of keyPEM: PKCS#8
// ("PRIVATE KEY"), PKCS#1 ("RSA PRIVATE KEY") or SEC 1 ("EC PRIVATE
// KEY"). An encrypted key is refused: kmirror would need its passphrase
// as well, and seals the key itself.
func ParsePrivateKey(keyPEM string) (crypto.Signer, error) {
	rest := []byte(keyPEM)
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, ErrNoKey
		}
		// PKCS#8's encrypted form, or OpenSSL's legacy Proc-Type header.
		if b.Type == "ENCRYPTED PRIVATE KEY" || strings.Contains(b.Headers["Proc-Type"], "ENCRYPTED") {
			return nil, ErrEncryptedKey
		}
		var key any
		var err error
		switch b.Type {
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(b.Bytes)
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(b.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(b.Bytes)
		default:
			continue // e.g. EC PARAMETERS before the key, as openssl writes it
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBadKey, b.Type, err)
		}
		switch k := key.(type) {
		case *rsa.PrivateKey, *ecdsa.PrivateKey, ed25519.PrivateKey:
			return k.(crypto.Signer), nil
		}
		return nil, fmt.Errorf("%w: %T is not an RSA, ECDSA or Ed25519 key", ErrBadKey, key)
	}
}

// KeyMatches reports whether key is the private key of cert.
func KeyMatches(cert *x509.Certificate, key crypto.Signer) bool {
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(cert.PublicKey)
}

// ClientCertificate checks a client certificate and its private key, both
// PEM, and makes the TLS certificate a client presents.
func ClientCertificate(certPEM, keyPEM string) (tls.Certificate, error) {
	switch {
	case certPEM != "" && keyPEM == "":
		return tls.Certificate{}, ErrCertificateNoKey
	case certPEM == "" && keyPEM != "":
		return tls.Certificate{}, ErrKeyNoCertificate
	}
	certs, err := ParseCertificates(certPEM)
	if err != nil {
		return tls.Certificate{}, err
	}
	key, err := ParsePrivateKey(keyPEM)
	if err != nil {
		return tls.Certificate{}, err
	}
	if !KeyMatches(certs[0], key) {
		return tls.Certificate{}, ErrKeyMismatch
	}
	tc := tls.Certificate{PrivateKey: key, Leaf: certs[0]}
	for _, c := range certs {
		tc.Certificate = append(tc.Certificate, c.Raw)
	}
	return tc, nil
}
