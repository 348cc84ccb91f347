package connectplan

import (
	"strings"

	"github.com/kmirror/kmirror/internal/cluster"
)

// loginModules are the JAAS login modules for kmirror's SASL mechanisms.
var loginModules = map[string]string{
	cluster.MechanismPlain:       "org.apache.kafka.common.security.plain.PlainLoginModule",
	cluster.MechanismSCRAMSHA256: "org.apache.kafka.common.security.scram.ScramLoginModule",
	cluster.MechanismSCRAMSHA512: "org.apache.kafka.common.security.scram.ScramLoginModule",
}

// putClient writes how a Java client reaches s, each key behind prefix
// ("source.cluster.", "producer.override.", ...). With a config provider
// named (config.providers on the workers), the password is a reference the
// workers resolve, ${<provider>:<cluster name>.password} (no path), instead
// of the password itself: Connect stores connector configs in its config
// topic and shows them through its REST API.
func putClient(m map[string]string, prefix string, s cluster.Settings, provider string) {
	m[prefix+"bootstrap.servers"] = strings.Join(s.BootstrapServers, ",")
	protocol := s.SecurityProtocol
	if protocol == "" {
		protocol = cluster.Plaintext
	}
	m[prefix+"security.protocol"] = protocol
	if s.UsesSASL() {
		password := s.Password
		if provider != "" {
			password = "${" + provider + ":" + s.Name + ".password}"
		}
		m[prefix+"sasl.mechanism"] = s.SASLMechanism
		m[prefix+"sasl.jaas.config"] = JAAS(s.SASLMechanism, s.Username, password)
	}
	if s.UsesTLS() && s.CAPEM != "" {
		m[prefix+"ssl.truststore.type"] = "PEM"
		m[prefix+"ssl.truststore.certificates"] = s.CAPEM
	}
}

// JAAS is the sasl.jaas.config line for a mechanism and credentials, its
// values quoted as JAAS reads them (a backslash escapes the next
// character).
func JAAS(mechanism, username, password string) string {
	return loginModules[mechanism] + ` required username="` + jaasQuote(username) + `" password="` + jaasQuote(password) + `";`
}

func jaasQuote(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}
