package service

import (
	"crypto/x509"
	"errors"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/task"
)

var clusterNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Limits that keep a request from storing absurd values.
const (
	maxBootstrapServers = 100
	maxUsernameLength   = 255
	maxPasswordLength   = 1024
	maxCAPEMLength      = 64 << 10
	maxOAuthFieldLength = 1024
)

// NormalizeCluster trims what users paste with stray spaces and fills the
// default protocol (PLAINTEXT). It never changes a password or secret (PEM
// texts lose surrounding blanks only).
func NormalizeCluster(s cluster.Settings) cluster.Settings {
	s.Name = strings.TrimSpace(s.Name)
	s.BootstrapServers = trimList(s.BootstrapServers)
	s.SecurityProtocol = strings.TrimSpace(s.SecurityProtocol)
	if s.SecurityProtocol == "" {
		s.SecurityProtocol = cluster.Plaintext
	}
	s.SASLMechanism = strings.TrimSpace(s.SASLMechanism)
	s.Username = strings.TrimSpace(s.Username)
	s.CAPEM = strings.TrimSpace(s.CAPEM)
	s.ClientCertPEM = strings.TrimSpace(s.ClientCertPEM)
	s.ClientKeyPEM = strings.TrimSpace(s.ClientKeyPEM)
	s.OAuth.TokenEndpoint = strings.TrimSpace(s.OAuth.TokenEndpoint)
	s.OAuth.ClientID = strings.TrimSpace(s.OAuth.ClientID)
	s.OAuth.Scope = strings.TrimSpace(s.OAuth.Scope)
	s.OAuth.Audience = strings.TrimSpace(s.OAuth.Audience)
	return s
}

// checkName is the rule for the name of a registered cluster (Kafka or
// Connect).
func checkName(p *Problems, name string) {
	switch {
	case name == "":
		p.Add("name", "name is required")
	case !clusterNameRE.MatchString(name):
		p.Add("name", "name must be 1 to 64 characters of A-Z, a-z, 0-9, - and _")
	}
}

// checkAddresses is the rule for a cluster's list of addresses (bootstrap
// servers, REST URLs): 1 to most of them, each valid by check (which says
// why not, or ""), none twice. none and tooMany (a format of most) are the
// messages, so each field keeps its own words and translations.
func checkAddresses(p *Problems, field string, addrs []string, most int, none, tooMany string, check func(string) string) {
	switch {
	case len(addrs) == 0:
		p.Add(field, "%s", none)
		return
	case len(addrs) > most:
		p.Add(field, tooMany, most)
		return
	}
	seen := map[string]bool{}
	for _, a := range addrs {
		if msg := check(a); msg != "" {
			p.Add(field, "%s", msg)
		} else if seen[a] {
			p.Add(field, "%q is listed twice", a)
		}
		seen[a] = true
	}
}

// ValidateCluster returns every rule s breaks; none means s may be stored.
// s should be normalized first. It is pure: whether the name is taken is the
// store's to say.
func ValidateCluster(s cluster.Settings) Problems {
	var p Problems
	checkName(&p, s.Name)
	checkAddresses(&p, "bootstrap_servers", s.BootstrapServers, maxBootstrapServers,
		"give at least one bootstrap server as host:port, for example 127.0.0.1:9092", "at most %d bootstrap servers", checkHostPort)

	checkSecurity(&p, s)
	return p
}

// checkSecurity is the rule for how a cluster authenticates: each protocol
// takes exactly what it uses, and a field it would ignore is refused rather
// than dropped (the user may have picked the wrong protocol or mechanism).
func checkSecurity(p *Problems, s cluster.Settings) {
	switch s.SecurityProtocol {
	case cluster.Plaintext, cluster.SSL, cluster.SASLPlaintext, cluster.SASLSSL:
	default:
		p.Add("security_protocol", "security protocol must be PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL")
		return
	}
	proto := s.SecurityProtocol
	if s.UsesSASL() {
		switch s.SASLMechanism {
		case "":
			p.Add("sasl_mechanism", "%s needs a SASL mechanism: SCRAM-SHA-512, PLAIN, SCRAM-SHA-256 or OAUTHBEARER", proto)
		case cluster.MechanismPlain, cluster.MechanismSCRAMSHA256, cluster.MechanismSCRAMSHA512, cluster.MechanismOAuthBearer:
		default:
			p.Add("sasl_mechanism", "SASL mechanism must be SCRAM-SHA-512, PLAIN, SCRAM-SHA-256 or OAUTHBEARER")
		}
	} else if s.SASLMechanism != "" {
		p.Add("sasl_mechanism", "%s uses no SASL mechanism: choose SASL_PLAINTEXT or SASL_SSL, or clear it", proto)
	}
	switch {
	case s.UsesOAuth():
		if s.Username != "" {
			p.Add("username", "OAUTHBEARER authenticates with oauth.client_id and oauth.client_secret: clear the username")
		}
		if s.Password != "" {
			p.Add("password", "OAUTHBEARER authenticates with oauth.client_id and oauth.client_secret: clear the password")
		}
		checkOAuth(p, s.OAuth)
	case s.UsesSASL():
		if s.Username == "" {
			p.Add("username", "%s needs a username", proto)
		}
		if s.Password == "" {
			p.Add("password", "%s needs a password", proto)
		}
	default:
		if s.Username != "" {
			p.Add("username", "%s does not authenticate with a username: choose SASL_PLAINTEXT or SASL_SSL, or clear the username", proto)
		}
		if s.Password != "" {
			p.Add("password", "%s does not authenticate with a password: choose SASL_PLAINTEXT or SASL_SSL, or clear the password", proto)
		}
	}
	if !s.UsesOAuth() && s.OAuth != (cluster.OAuth{}) {
		p.Add("oauth", "OAuth settings are only used with SASL mechanism OAUTHBEARER: clear them, or choose OAUTHBEARER")
	}
	checkCredentialSizes(p, s.Username, s.Password)

	if s.CAPEM != "" {
		switch {
		case !s.UsesTLS():
			p.Add("ca_pem", "a CA certificate is only used with SSL or SASL_SSL")
		case len(s.CAPEM) > maxCAPEMLength:
			p.Add("ca_pem", "CA certificate is larger than %d KiB", maxCAPEMLength>>10)
		case !x509.NewCertPool().AppendCertsFromPEM([]byte(s.CAPEM)):
			p.Add("ca_pem", "CA holds no PEM certificate: paste the cluster's CA certificate (-----BEGIN CERTIFICATE-----...)")
		default:
			checkOnlyCertificates(p, s.CAPEM)
		}
	}
	checkClientCert(p, s)
}

// checkOnlyCertificates refuses a CA text holding anything but
// certificates: x509's pool skips other blocks, so a pasted bundle with a
// private key would be stored and shown in clear.
func checkOnlyCertificates(p *Problems, caPEM string) {
	if _, err := cluster.ParseCertificates(caPEM); err != nil {
		p.Add("ca_pem", "%s", err.Error())
	}
}

// checkClientCert is the rule for a Kafka cluster's client certificate:
// only over TLS, and checkCertAndKey's.
func checkClientCert(p *Problems, s cluster.Settings) {
	switch {
	case s.ClientCertPEM == "" && s.ClientKeyPEM == "" && s.ClientKeyPassword == "":
		return
	case !s.UsesTLS():
		p.Add("client_cert_pem", "a client certificate is only used with SSL or SASL_SSL")
		return
	case len(s.ClientKeyPassword) > maxPasswordLength:
		p.Add("client_key_password", "key password is longer than %d bytes", maxPasswordLength)
		return
	}
	checkCertAndKey(p, s, "")
}

// checkCertAndKey is the rule every client certificate follows (a Kafka
// cluster's, a Connect cluster's): sizes, the chain and its key together,
// not the mask of an export, and each parse error on its field, the key
// the leaf's (cluster.Settings.ClientCertificate). encryptedKey, when set,
// is the message for a key that needs a password the caller takes none of.
func checkCertAndKey(p *Problems, s cluster.Settings, encryptedKey string) {
	switch {
	case s.ClientCertPEM == "" && s.ClientKeyPEM == "" && s.ClientKeyPassword == "":
		return
	case len(s.ClientCertPEM) > maxCAPEMLength:
		p.Add("client_cert_pem", "client certificate is larger than %d KiB", maxCAPEMLength>>10)
		return
	case len(s.ClientKeyPEM) > maxCAPEMLength:
		p.Add("client_key_pem", "client key is larger than %d KiB", maxCAPEMLength>>10)
		return
	case s.ClientKeyPEM == task.PasswordMask:
		p.Add("client_key_pem", "the client key is masked (%s) as exported: paste the real key", task.PasswordMask)
		return
	case s.ClientCertPEM == "":
		p.Add("client_cert_pem", "a client key needs its certificate: paste the PEM certificate chain, or clear the key")
		return
	}
	_, err := s.ClientCertificate()
	var ce *cluster.CertError
	switch {
	case err == nil:
	case errors.As(err, &ce) && ce.Field == "client_key_password" && encryptedKey != "":
		p.Add("client_key_pem", "%s", encryptedKey)
	case errors.As(err, &ce):
		p.Add(ce.Field, "%s", ce.Err.Error())
	default:
		p.Add("client_cert_pem", "%s", err.Error())
	}
}

// checkOAuth is the rule for OAUTHBEARER's client-credentials grant.
func checkOAuth(p *Problems, o cluster.OAuth) {
	switch {
	case o.TokenEndpoint == "":
		p.Add("oauth.token_endpoint", "OAUTHBEARER needs the identity provider's token endpoint, for example https://idp.example.com/oauth2/token")
	case len(o.TokenEndpoint) > maxOAuthFieldLength:
		p.Add("oauth.token_endpoint", "token endpoint is longer than %d characters", maxOAuthFieldLength)
	default:
		if msg := checkTokenEndpoint(o.TokenEndpoint); msg != "" {
			p.Add("oauth.token_endpoint", "%s", msg)
		}
	}
	if o.ClientID == "" {
		p.Add("oauth.client_id", "OAUTHBEARER needs the OAuth client id kmirror signs in as")
	}
	if o.ClientSecret == "" {
		p.Add("oauth.client_secret", "OAUTHBEARER needs the OAuth client secret (the client-credentials grant)")
	}
	if o.ClientSecret == task.PasswordMask {
		p.Add("oauth.client_secret", "the client secret is masked (%s) as exported: give the real secret", task.PasswordMask)
	}
	for _, f := range []struct{ field, v string }{
		{"oauth.client_id", o.ClientID}, {"oauth.client_secret", o.ClientSecret}, {"oauth.scope", o.Scope}, {"oauth.audience", o.Audience},
	} {
		if len(f.v) > maxOAuthFieldLength {
			p.Add(f.field, "longer than %d characters", maxOAuthFieldLength)
		}
	}
}

// checkTokenEndpoint explains what is wrong with a token endpoint URL, or
// returns "". The client secret travels to it, so only https, or http to a
// loopback address (an identity provider beside kmirror).
func checkTokenEndpoint(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "token endpoint must be an https:// URL with a host, for example https://idp.example.com/oauth2/token"
	}
	if u.User != nil {
		return "token endpoint must not carry credentials in the URL: give them as oauth.client_id and oauth.client_secret"
	}
	if u.Scheme == "http" {
		ip := net.ParseIP(u.Hostname())
		if u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return "token endpoint must use https: the client secret is sent to it (http is allowed only to localhost)"
		}
	}
	return ""
}

// checkHostPort explains what is wrong with a bootstrap address, or returns "".
func checkHostPort(addr string) string {
	if !utf8.ValidString(addr) || strings.ContainsAny(addr, " \t\r\n,/") {
		return strconv.Quote(addr) + " is not host:port"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return strconv.Quote(addr) + " is not host:port (for example kafka-1:9092 or [::1]:9092)"
	}
	if host == "" {
		return strconv.Quote(addr) + " has no host"
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return strconv.Quote(addr) + " has no valid port: use a number from 1 to 65535"
	}
	return ""
}

// checkCredentialSizes keeps absurd user names and passwords out of the
// store (a Kafka cluster's SASL ones, a Connect cluster's basic auth).
func checkCredentialSizes(p *Problems, username, password string) {
	if len(username) > maxUsernameLength {
		p.Add("username", "username is longer than %d characters", maxUsernameLength)
	}
	if len(password) > maxPasswordLength {
		p.Add("password", "password is longer than %d bytes", maxPasswordLength)
	}
}
