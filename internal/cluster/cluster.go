// Package cluster describes a Kafka cluster kmirror can reach — its bootstrap
// addresses and how to authenticate — and builds the one sarama configuration
// every Kafka connection of the product uses.
//
// Protocols: PLAINTEXT, SSL (TLS, optionally with a client certificate),
// SASL_PLAINTEXT and SASL_SSL (SASL PLAIN, SCRAM or OAUTHBEARER; SASL_SSL may
// add a client certificate). docs/SECURITY.md says what each needs.
//
// Invariant: a Settings' secrets (password, client key and its password,
// OAuth client secret) never leave this package in clear through String,
// Redacted or a log line; callers that must show settings use Redacted.
package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/IBM/sarama"
	"github.com/rcrowley/go-metrics"
	"github.com/xdg-go/scram"
)

func init() {
	// sarama keeps go-metrics histograms and meters per request and per
	// broker: about 4 % of the copy's CPU in the 100 B benchmark profile.
	// kmirror exports its own Prometheus metrics and never reads them.
	metrics.UseNilMetrics = true
}

// Security protocols a cluster listener may speak.
const (
	Plaintext     = "PLAINTEXT"
	SSL           = "SSL"
	SASLPlaintext = "SASL_PLAINTEXT"
	SASLSSL       = "SASL_SSL"
)

// Protocols lists the security protocols in the order the console offers
// them (the seed's three, then SSL).
var Protocols = []string{Plaintext, SASLPlaintext, SASLSSL, SSL}

// SASL mechanisms kmirror supports.
const (
	MechanismPlain       = "PLAIN"
	MechanismSCRAMSHA256 = "SCRAM-SHA-256"
	MechanismSCRAMSHA512 = "SCRAM-SHA-512"
	MechanismOAuthBearer = "OAUTHBEARER"
)

// Mechanisms lists the SASL mechanisms in the order the console offers them.
var Mechanisms = []string{MechanismSCRAMSHA512, MechanismPlain, MechanismSCRAMSHA256, MechanismOAuthBearer}

// SecretMask stands for a set secret in Redacted settings and in answers
// (task.PasswordMask is the same).
const SecretMask = "********"

// KafkaVersion is the protocol version sarama speaks. Kafka 4.x brokers and
// kfake both accept it; older than 2.1 is not supported by Kafka 4 anyway.
var KafkaVersion = sarama.V3_9_0_0

// Settings is how to reach and authenticate to one Kafka cluster. The JSON
// names are the API's (/api/v1/openapi.json).
type Settings struct {
	Name             string   `json:"name"`
	BootstrapServers []string `json:"bootstrap_servers"`
	SecurityProtocol string   `json:"security_protocol"`
	SASLMechanism    string   `json:"sasl_mechanism,omitempty"`
	Username         string   `json:"username,omitempty"`
	Password         string   `json:"password,omitempty"`
	CAPEM            string   `json:"ca_pem,omitempty"`
	// ClientCertPEM and ClientKeyPEM are a client certificate (the chain,
	// leaf first) and its private key, for brokers that authenticate
	// clients by certificate (ssl.client.auth=required), on SSL and
	// SASL_SSL. ClientKeyPassword decrypts an encrypted key.
	ClientCertPEM     string `json:"client_cert_pem,omitempty"`
	ClientKeyPEM      string `json:"client_key_pem,omitempty"`
	ClientKeyPassword string `json:"client_key_password,omitempty"`
	// OAuth is the client-credentials grant of SASL mechanism OAUTHBEARER.
	OAuth OAuth `json:"oauth,omitzero"`
}

// OAuth is where and as whom kmirror asks for OAUTHBEARER tokens: the OAuth 2
// client-credentials grant (RFC 6749, 4.4) against a token endpoint.
type OAuth struct {
	TokenEndpoint string `json:"token_endpoint,omitempty"`
	ClientID      string `json:"client_id,omitempty"`
	ClientSecret  string `json:"client_secret,omitempty"`
	Scope         string `json:"scope,omitempty"`
	// Audience is sent as the "audience" parameter, which identity
	// providers such as Auth0 and Keycloak use to pick the token's aud.
	Audience string `json:"audience,omitempty"`
}

// UsesSASL reports whether the protocol authenticates with SASL.
func (s Settings) UsesSASL() bool {
	return s.SecurityProtocol == SASLPlaintext || s.SecurityProtocol == SASLSSL
}

// UsesTLS reports whether connections are encrypted.
func (s Settings) UsesTLS() bool { return s.SecurityProtocol == SASLSSL || s.SecurityProtocol == SSL }

// UsesOAuth reports whether the cluster authenticates with OAUTHBEARER.
func (s Settings) UsesOAuth() bool { return s.UsesSASL() && s.SASLMechanism == MechanismOAuthBearer }

// UsesPassword reports whether the mechanism takes a username and password
// (PLAIN and SCRAM).
func (s Settings) UsesPassword() bool { return s.UsesSASL() && !s.UsesOAuth() }

// HasClientCert reports whether a client certificate is given.
func (s Settings) HasClientCert() bool { return s.ClientCertPEM != "" }

// Secrets are the parts of Settings that are sealed at rest and never shown.
type Secrets struct {
	Password          string `json:"password,omitempty"`
	ClientKeyPEM      string `json:"client_key_pem,omitempty"`
	ClientKeyPassword string `json:"client_key_password,omitempty"`
	OAuthClientSecret string `json:"oauth_client_secret,omitempty"`
}

// IsZero reports whether no secret is set.
func (x Secrets) IsZero() bool { return x == Secrets{} }

// Secrets returns the settings' secrets.
func (s Settings) Secrets() Secrets {
	return Secrets{Password: s.Password, ClientKeyPEM: s.ClientKeyPEM,
		ClientKeyPassword: s.ClientKeyPassword, OAuthClientSecret: s.OAuth.ClientSecret}
}

// WithoutSecrets returns a copy holding no secret: what may be stored in
// clear or shown.
func (s Settings) WithoutSecrets() Settings { return s.WithSecrets(Secrets{}) }

// WithSecrets returns a copy holding x as its secrets.
func (s Settings) WithSecrets(x Secrets) Settings {
	s.Password, s.ClientKeyPEM, s.ClientKeyPassword, s.OAuth.ClientSecret = x.Password, x.ClientKeyPEM, x.ClientKeyPassword, x.OAuthClientSecret
	return s
}

// Redacted returns a copy safe to log or show: each secret is replaced by a
// marker saying that one is set.
func (s Settings) Redacted() Settings { return s.WithSecrets(s.Secrets().Masked()) }

// Masked replaces each set secret by a marker ("********"), so what shows
// them says which are set without their values.
func (x Secrets) Masked() Secrets {
	for _, v := range x.fields() {
		if *v != "" {
			*v = SecretMask
		}
	}
	return x
}

// Values are the secrets that are set, e.g. to make sure none reaches an
// answer or a log.
func (x Secrets) Values() []string {
	var out []string
	for _, v := range x.fields() {
		if *v != "" {
			out = append(out, *v)
		}
	}
	return out
}

func (x *Secrets) fields() []*string {
	return []*string{&x.Password, &x.ClientKeyPEM, &x.ClientKeyPassword, &x.OAuthClientSecret}
}

// String never prints the password.
func (s Settings) String() string {
	return fmt.Sprintf("%s[%s %s]", s.Name, strings.Join(s.BootstrapServers, ","), s.SecurityProtocol)
}

// LogValue keeps the password out of slog output.
func (s Settings) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("name", s.Name),
		slog.String("bootstrap", strings.Join(s.BootstrapServers, ",")),
		slog.String("security_protocol", s.SecurityProtocol),
		slog.String("sasl_mechanism", s.SASLMechanism),
		slog.Bool("client_cert", s.HasClientCert()),
	)
}

// Config builds the sarama configuration for this cluster. clientID names the
// connection in broker logs and quotas. Producer and consumer tuning is left to
// the caller; this sets only what reaching the cluster needs.
func (s Settings) Config(clientID string) (*sarama.Config, error) {
	if len(s.BootstrapServers) == 0 {
		return nil, errors.New("cluster has no bootstrap servers: give at least one host:port")
	}
	c := sarama.NewConfig()
	c.Version = KafkaVersion
	if clientID != "" {
		c.ClientID = clientID
	}
	c.Net.DialTimeout = 10 * time.Second
	c.Net.ReadTimeout = 30 * time.Second
	c.Net.WriteTimeout = 30 * time.Second
	c.Metadata.AllowAutoTopicCreation = false
	// Everything kmirror reads is read committed: a transactional source's
	// aborted records are never copied, and an exactly-once flow's aborted
	// copies and progress never count.
	c.Consumer.IsolationLevel = sarama.ReadCommitted
	c.Metadata.Retry.Max = 3
	c.Metadata.Retry.Backoff = 250 * time.Millisecond

	switch s.SecurityProtocol {
	case "", Plaintext, SSL, SASLPlaintext, SASLSSL:
	default:
		return nil, fmt.Errorf("unknown security protocol %q: use PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", s.SecurityProtocol)
	}
	if s.UsesSASL() {
		if err := s.configureSASL(c); err != nil {
			return nil, err
		}
	}
	if s.UsesTLS() {
		tc, err := s.TLSConfig()
		if err != nil {
			return nil, err
		}
		c.Net.TLS.Enable = true
		c.Net.TLS.Config = tc
	}
	return c, nil
}

func (s Settings) configureSASL(c *sarama.Config) error {
	c.Net.SASL.Enable = true
	c.Net.SASL.Handshake = true
	if s.SASLMechanism == MechanismOAuthBearer {
		tp, err := s.tokenProvider()
		if err != nil {
			return err
		}
		c.Net.SASL.Mechanism = sarama.SASLTypeOAuth
		c.Net.SASL.TokenProvider = tp
		return nil
	}
	if s.Username == "" {
		return fmt.Errorf("%s needs a username", s.SecurityProtocol)
	}
	c.Net.SASL.User = s.Username
	c.Net.SASL.Password = s.Password
	switch s.SASLMechanism {
	case MechanismPlain:
		c.Net.SASL.Mechanism = sarama.SASLTypePlaintext
	case MechanismSCRAMSHA256:
		c.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA256
		c.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: scram.SHA256} }
	case MechanismSCRAMSHA512:
		c.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
		c.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: scram.SHA512} }
	default:
		return fmt.Errorf("unknown SASL mechanism %q: use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER", s.SASLMechanism)
	}
	return nil
}

// scramClient adapts xdg-go/scram to sarama's SCRAMClient.
type scramClient struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

func (c *scramClient) Begin(user, password, authzID string) error {
	client, err := c.hash.NewClient(user, password, authzID)
	if err != nil {
		return fmt.Errorf("prepare SCRAM client: %w", err)
	}
	c.conv = client.NewConversation()
	return nil
}

func (c *scramClient) Step(challenge string) (string, error) { return c.conv.Step(challenge) }

func (c *scramClient) Done() bool { return c.conv.Done() }
