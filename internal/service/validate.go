package service

import (
	"crypto/x509"
	"net"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kmirror/kmirror/internal/cluster"
)

var clusterNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Limits that keep a request from storing absurd values.
const (
	maxBootstrapServers = 100
	maxUsernameLength   = 255
	maxPasswordLength   = 1024
	maxCAPEMLength      = 64 << 10
)

// NormalizeCluster trims what users paste with stray spaces and fills the
// default protocol (PLAINTEXT). It never changes a password.
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

	sasl := s.SecurityProtocol == cluster.SASLPlaintext || s.SecurityProtocol == cluster.SASLSSL
	switch s.SecurityProtocol {
	case cluster.Plaintext, cluster.SASLPlaintext, cluster.SASLSSL:
	default:
		p.Add("security_protocol", "security protocol must be PLAINTEXT, SASL_PLAINTEXT or SASL_SSL")
	}

	if sasl {
		switch s.SASLMechanism {
		case "":
			p.Add("sasl_mechanism", "%s needs a SASL mechanism: SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN", s.SecurityProtocol)
		case cluster.MechanismPlain, cluster.MechanismSCRAMSHA256, cluster.MechanismSCRAMSHA512:
		default:
			p.Add("sasl_mechanism", "SASL mechanism must be SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN")
		}
		if s.Username == "" {
			p.Add("username", "%s needs a username", s.SecurityProtocol)
		}
		if s.Password == "" {
			p.Add("password", "%s needs a password", s.SecurityProtocol)
		}
	} else if s.SecurityProtocol == cluster.Plaintext {
		// Refuse rather than silently drop: the user may have picked the
		// wrong protocol.
		if s.SASLMechanism != "" {
			p.Add("sasl_mechanism", "PLAINTEXT uses no SASL mechanism: choose SASL_PLAINTEXT or SASL_SSL, or clear it")
		}
		if s.Username != "" {
			p.Add("username", "PLAINTEXT does not authenticate: choose SASL_PLAINTEXT or SASL_SSL, or clear the username")
		}
		if s.Password != "" {
			p.Add("password", "PLAINTEXT does not authenticate: choose SASL_PLAINTEXT or SASL_SSL, or clear the password")
		}
	}
	checkCredentialSizes(&p, s.Username, s.Password)

	if s.CAPEM != "" {
		switch {
		case s.SecurityProtocol != cluster.SASLSSL:
			p.Add("ca_pem", "a CA certificate is only used with SASL_SSL")
		case len(s.CAPEM) > maxCAPEMLength:
			p.Add("ca_pem", "CA certificate is larger than %d KiB", maxCAPEMLength>>10)
		case !x509.NewCertPool().AppendCertsFromPEM([]byte(s.CAPEM)):
			p.Add("ca_pem", "CA holds no PEM certificate: paste the cluster's CA certificate (-----BEGIN CERTIFICATE-----...)")
		}
	}
	return p
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
