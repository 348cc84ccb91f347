package connectplan

import (
	"regexp"
	"strings"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/task"
)

// loginModules are the JAAS login modules for kmirror's SASL mechanisms.
var loginModules = map[string]string{
	cluster.MechanismPlain:       "org.apache.kafka.common.security.plain.PlainLoginModule",
	cluster.MechanismSCRAMSHA256: "org.apache.kafka.common.security.scram.ScramLoginModule",
	cluster.MechanismSCRAMSHA512: "org.apache.kafka.common.security.scram.ScramLoginModule",
}

// Kafka's OAuth client-credentials login (KIP-768): a login callback
// handler that fetches tokens from sasl.oauthbearer.token.endpoint.url.
const (
	oauthLoginModule  = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
	oauthLoginHandler = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
)

// providerName is a config provider's name as the workers define it
// (config.providers=<name>).
var providerName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// providerTemplate is a reference with a path and %s where the key goes:
// ${<provider>:<path>:<key with %s>}, e.g. ${file:/etc/kmirror/kafka.properties:%s}.
// Quotes, backslashes and spaces are refused: the reference may stand
// inside a JAAS line, whose quoting the workers would read it through.
var providerTemplate = regexp.MustCompile(`^\$\{[A-Za-z0-9_-]{1,64}:[^{}:%"\\\s]+:[^{}:%"\\\s]*%s[^{}:%"\\\s]*\}$`)

// CheckConfigProvider says what is wrong with a Connect cluster's config
// provider setting, "" when nothing: the provider's name, for providers
// that need no path (${<name>:<key>}), or a reference with the provider's
// path and %s where the key goes, for those that do (Kafka's file and
// directory providers, Strimzi's Kubernetes secrets).
func CheckConfigProvider(p string) string {
	if p == "" || providerName.MatchString(p) || len(p) <= 512 && providerTemplate.MatchString(p) {
		return ""
	}
	return "the name of a config provider the workers define (config.providers; 1 to 64 characters of A-Z, a-z, 0-9, - and _), or a reference of at most 512 characters with its path and %s where the key goes, e.g. ${file:/etc/kmirror/kafka.properties:%s} (the key is <cluster>.password, <cluster>.client_key or <cluster>.oauth_client_secret)"
}

// SecretReference is the reference the workers resolve to secret (password,
// client_key, oauth_client_secret) of the Kafka cluster named cluster,
// under a config provider setting CheckConfigProvider accepts: the key is
// <cluster>.<secret>.
func SecretReference(provider, cluster, secret string) string {
	key := cluster + "." + secret
	if strings.Contains(provider, "%s") {
		return strings.Replace(provider, "%s", key, 1)
	}
	return "${" + provider + ":" + key + "}"
}

// putClient writes how a Java client reaches s, each key behind prefix
// ("source.cluster.", "producer.override.", ...). With a config provider
// (config.providers on the workers), each secret is a reference the workers
// resolve (SecretReference) instead of the secret itself: Connect stores
// connector configs in its config topic and shows them through its REST
// API. A client certificate goes inline as a PEM keystore
// (no file on the workers); its key as unencrypted PKCS#8, the only
// unencrypted form Kafka's PEM keystore reads. It returns what Kafka's
// clients cannot do, by field of cluster.Settings.
func putClient(m map[string]string, prefix string, s cluster.Settings, provider string) []task.FieldError {
	var refused []task.FieldError
	secret := func(name, value string) string {
		if provider != "" {
			return SecretReference(provider, s.Name, name)
		}
		return value
	}
	m[prefix+"bootstrap.servers"] = strings.Join(s.BootstrapServers, ",")
	protocol := s.SecurityProtocol
	if protocol == "" {
		protocol = cluster.Plaintext
	}
	m[prefix+"security.protocol"] = protocol
	switch {
	case s.UsesOAuth():
		o := s.OAuth
		m[prefix+"sasl.mechanism"] = cluster.MechanismOAuthBearer
		m[prefix+"sasl.login.callback.handler.class"] = oauthLoginHandler
		m[prefix+"sasl.oauthbearer.token.endpoint.url"] = o.TokenEndpoint
		jaas := oauthLoginModule + ` required clientId="` + jaasQuote(o.ClientID) + `" clientSecret="` + jaasQuote(secret("oauth_client_secret", o.ClientSecret)) + `"`
		if o.Scope != "" {
			jaas += ` scope="` + jaasQuote(o.Scope) + `"`
		}
		m[prefix+"sasl.jaas.config"] = jaas + ";"
		if o.Audience != "" {
			refused = append(refused, task.FieldError{Field: "oauth.audience", Message: "Kafka's OAuth login handler on Connect workers cannot ask for an audience: leave it out if the identity provider's default audience is accepted by the brokers, or run the task on the embedded engine"})
		}
	case s.UsesSASL():
		m[prefix+"sasl.mechanism"] = s.SASLMechanism
		m[prefix+"sasl.jaas.config"] = JAAS(s.SASLMechanism, s.Username, secret("password", s.Password))
	}
	if s.UsesTLS() && s.CAPEM != "" {
		m[prefix+"ssl.truststore.type"] = "PEM"
		m[prefix+"ssl.truststore.certificates"] = s.CAPEM
	}
	if s.UsesTLS() && s.HasClientCert() {
		key, err := s.ClientKeyPKCS8()
		if err != nil {
			refused = append(refused, task.FieldError{Field: "client_key_pem", Message: err.Error()})
		}
		m[prefix+"ssl.keystore.type"] = "PEM"
		m[prefix+"ssl.keystore.certificate.chain"] = s.ClientCertPEM
		m[prefix+"ssl.keystore.key"] = secret("client_key", key)
	}
	return refused
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
