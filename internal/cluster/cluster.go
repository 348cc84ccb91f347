// Package cluster describes a Kafka cluster kmirror can reach — its bootstrap
// addresses and how to authenticate — and builds the one sarama configuration
// every Kafka connection of the product uses.
//
// Invariant: a Settings' password never leaves this package in clear through
// String, Redacted or a log line; callers that must show settings use Redacted.
package cluster

import (
	"crypto/tls"
	"crypto/x509"
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
	SASLPlaintext = "SASL_PLAINTEXT"
	SASLSSL       = "SASL_SSL"
)

// SASL mechanisms kmirror supports.
const (
	MechanismPlain       = "PLAIN"
	MechanismSCRAMSHA256 = "SCRAM-SHA-256"
	MechanismSCRAMSHA512 = "SCRAM-SHA-512"
)

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
}

// UsesSASL reports whether the protocol authenticates with SASL.
func (s Settings) UsesSASL() bool {
	return s.SecurityProtocol == SASLPlaintext || s.SecurityProtocol == SASLSSL
}

// UsesTLS reports whether connections are encrypted.
func (s Settings) UsesTLS() bool { return s.SecurityProtocol == SASLSSL }

// Redacted returns a copy safe to log or show: the password is replaced by a
// marker saying whether one is set.
func (s Settings) Redacted() Settings {
	if s.Password != "" {
		s.Password = "********"
	}
	return s
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
	c.Metadata.Retry.Max = 3
	c.Metadata.Retry.Backoff = 250 * time.Millisecond

	switch s.SecurityProtocol {
	case "", Plaintext:
	case SASLPlaintext, SASLSSL:
		if err := s.configureSASL(c); err != nil {
			return nil, err
		}
		if s.SecurityProtocol == SASLSSL {
			tc, err := s.TLSConfig()
			if err != nil {
				return nil, err
			}
			c.Net.TLS.Enable = true
			c.Net.TLS.Config = tc
		}
	default:
		return nil, fmt.Errorf("unknown security protocol %q: use PLAINTEXT, SASL_PLAINTEXT or SASL_SSL", s.SecurityProtocol)
	}
	return c, nil
}

// TLSConfig verifies the brokers' certificates against the given CA, or the
// system roots when none is given.
func (s Settings) TLSConfig() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if strings.TrimSpace(s.CAPEM) != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(s.CAPEM)) {
			return nil, errors.New("ca_pem holds no PEM certificate: paste the cluster's CA certificate (-----BEGIN CERTIFICATE-----...)")
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

func (s Settings) configureSASL(c *sarama.Config) error {
	if s.Username == "" {
		return fmt.Errorf("%s needs a username", s.SecurityProtocol)
	}
	c.Net.SASL.Enable = true
	c.Net.SASL.Handshake = true
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
		return fmt.Errorf("unknown SASL mechanism %q: use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", s.SASLMechanism)
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
