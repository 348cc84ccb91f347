package service

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/connect/connectengine"
	"github.com/kmirror/kmirror/internal/connect/connectplan"
	"github.com/kmirror/kmirror/internal/store"
	"github.com/kmirror/kmirror/internal/task"
)

// ConnectClusterSettings is how to reach a Kafka Connect cluster's REST API
// and which registered Kafka cluster its workers write to. The JSON names
// are the API's.
type ConnectClusterSettings struct {
	Name string   `json:"name"`
	URLs []string `json:"urls"`
	// KafkaCluster is the registered Kafka cluster the workers' config,
	// offset and status topics are on; the flows that target it run here.
	KafkaCluster string `json:"kafka_cluster"`
	Username     string `json:"username,omitempty"`
	Password     string `json:"password,omitempty"`
	CAPEM        string `json:"ca_pem,omitempty"`
	// ClientCertPEM and ClientKeyPEM are a client certificate (its chain
	// may follow it) and its private key (PKCS#8, PKCS#1 or EC), PEM, for
	// https workers that require one; both or neither. The key is a
	// secret: sealed at rest, never shown.
	ClientCertPEM string `json:"client_cert_pem,omitempty"`
	ClientKeyPEM  string `json:"client_key_pem,omitempty"`
	// BearerToken is sent as "Authorization: Bearer <token>"; a secret like
	// the password, and not together with basic authentication (the same
	// header).
	BearerToken string `json:"bearer_token,omitempty"`
	// ConfigProvider names a config provider the workers define
	// (config.providers=<name>): Kafka passwords then go into connector
	// configs as references to it instead of in clear (docs/CONNECT.md).
	ConfigProvider string `json:"config_provider,omitempty"`
	// AutoRestart: kmirror restarts its tasks' failed connectors and tasks
	// on this cluster by itself, with back-off (opt-in).
	AutoRestart bool `json:"auto_restart,omitempty"`
}

// ConnectClusterInfo is a registered Connect cluster as shown: never the
// password, the client key or the bearer token, only whether each is set.
// The client certificate is public and shown.
type ConnectClusterInfo struct {
	Name           string    `json:"name"`
	URLs           []string  `json:"urls"`
	KafkaCluster   string    `json:"kafka_cluster"`
	Username       string    `json:"username,omitempty"`
	PasswordSet    bool      `json:"password_set"`
	CAPEM          string    `json:"ca_pem,omitempty"`
	ClientCertPEM  string    `json:"client_cert_pem,omitempty"`
	ClientKeySet   bool      `json:"client_key_set"`
	BearerTokenSet bool      `json:"bearer_token_set"`
	ConfigProvider string    `json:"config_provider,omitempty"`
	AutoRestart    bool      `json:"auto_restart"`
	CreatedAt      time.Time `json:"created_at"`
}

const (
	maxConnectURLs = 16
	// maxBearerTokenLength bounds a bearer token (JWTs with many claims run
	// to a few KiB; header limits are around 8 KiB).
	maxBearerTokenLength = 8 << 10
)

// NormalizeConnectCluster trims what users paste with stray spaces and
// trailing slashes, around PEM blocks and a bearer token too (a token
// holds no space; one read from a file ends with a line break). It never
// changes a password.
func NormalizeConnectCluster(s ConnectClusterSettings) ConnectClusterSettings {
	s.Name = strings.TrimSpace(s.Name)
	urls := trimList(s.URLs)
	for i, u := range urls {
		urls[i] = strings.TrimRight(u, "/")
	}
	s.URLs = urls
	s.KafkaCluster = strings.TrimSpace(s.KafkaCluster)
	s.Username = strings.TrimSpace(s.Username)
	s.CAPEM = strings.TrimSpace(s.CAPEM)
	s.ClientCertPEM = strings.TrimSpace(s.ClientCertPEM)
	s.ClientKeyPEM = strings.TrimSpace(s.ClientKeyPEM)
	s.BearerToken = strings.TrimSpace(s.BearerToken)
	s.ConfigProvider = strings.TrimSpace(s.ConfigProvider)
	return s
}

// ValidateConnectCluster returns every rule s breaks; none means s may be
// stored. s should be normalized first. Whether the name is taken and the
// Kafka cluster registered is the store's to say.
func ValidateConnectCluster(s ConnectClusterSettings) Problems {
	var p Problems
	checkName(&p, s.Name)
	checkAddresses(&p, "urls", s.URLs, maxConnectURLs,
		"give at least one REST URL of a Connect worker, for example http://127.0.0.1:8083", "at most %d REST URLs", checkRESTURL)
	if s.KafkaCluster == "" {
		p.Add("kafka_cluster", "name the registered Kafka cluster the Connect workers write to (their bootstrap.servers)")
	}
	if s.Password != "" && s.Username == "" {
		p.Add("username", "a password needs a user name (Connect's basic authentication)")
	}
	if s.Username != "" && s.Password == "" {
		p.Add("password", "basic authentication needs a password with the user name")
	}
	checkCredentialSizes(&p, s.Username, s.Password)
	if s.Password == task.PasswordMask {
		p.Add("password", "the password is masked (%s) as kmirror shows a stored one: type the real password", task.PasswordMask)
	}
	switch {
	case s.CAPEM == "":
	case len(s.CAPEM) > maxCAPEMLength:
		p.Add("ca_pem", "CA certificate is larger than %d KiB", maxCAPEMLength>>10)
	case !x509.NewCertPool().AppendCertsFromPEM([]byte(s.CAPEM)):
		p.Add("ca_pem", "no PEM certificate found: paste the CA certificate that signed the workers' REST certificates, BEGIN and END lines included")
	default:
		checkOnlyCertificates(&p, s.CAPEM)
	}
	checkClientCertificate(&p, s)
	checkBearerToken(&p, s)
	if msg := connectplan.CheckConfigProvider(s.ConfigProvider); msg != "" {
		p.Add("config_provider", "%s", msg)
	}
	return p
}

// checkClientCertificate says what is wrong with a client certificate and
// its key, each on its own field, by the rules and in the words of a Kafka
// cluster's (cluster.Settings.ClientCertificate: a PEM that does not
// parse, one half without the other, a key that is not the certificate's),
// and two of a Connect cluster's own: an encrypted key is refused (a Connect
// cluster takes no key password: give the key decrypted, kmirror seals it),
// and so is a certificate with http URLs, where it would never be
// presented.
func checkClientCertificate(p *Problems, s ConnectClusterSettings) {
	if s.ClientCertPEM == "" && s.ClientKeyPEM == "" {
		return
	}
	for _, u := range s.URLs {
		if s.ClientCertPEM != "" && strings.HasPrefix(strings.ToLower(u), "http://") {
			p.Add("client_cert_pem", "a client certificate is only presented over https, and %q is http: give https:// URLs or leave the certificate out", u)
			break
		}
	}
	checkCertAndKey(p, cluster.Settings{ClientCertPEM: s.ClientCertPEM, ClientKeyPEM: s.ClientKeyPEM},
		"the private key is encrypted: give it decrypted (openssl pkey -in key.pem -out plain.pem); kmirror seals it itself")
}

// checkBearerToken says what is wrong with a bearer token: with basic
// authentication (both are the Authorization header, so kmirror refuses
// rather than pick one), masked, too long, or holding what a header
// cannot carry.
func checkBearerToken(p *Problems, s ConnectClusterSettings) {
	t := s.BearerToken
	switch {
	case t == "":
	case s.Username != "" || s.Password != "":
		p.Add("bearer_token", "give either basic authentication (username and password) or a bearer token, not both: each is the whole Authorization header")
	case t == task.PasswordMask:
		p.Add("bearer_token", "the bearer token is masked (%s) as kmirror shows a stored secret: type the real token", task.PasswordMask)
	case len(t) > maxBearerTokenLength:
		p.Add("bearer_token", "the bearer token is longer than %d KiB", maxBearerTokenLength>>10)
	case strings.HasPrefix(strings.ToLower(t), "bearer "):
		p.Add("bearer_token", "give the token alone: kmirror adds \"Bearer \" itself")
	case strings.IndexFunc(t, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0:
		p.Add("bearer_token", "the bearer token holds spaces, line breaks or other characters an HTTP header cannot carry: give the token alone, printable ASCII")
	}
}

// checkRESTURL says what is wrong with a Connect REST URL, or "".
func checkRESTURL(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Sprintf("%q is not a URL: %v", raw, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("%q must start with http:// or https://", raw)
	case u.Host == "":
		return fmt.Sprintf("%q has no host: write it as http://host:8083", raw)
	case u.User != nil:
		return fmt.Sprintf("%q carries credentials: give them as username and password instead, so they are stored sealed", raw)
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Sprintf("%q must not have a query or fragment", raw)
	}
	return ""
}

// connectSecretLabel binds a sealed Connect password to its cluster so it
// cannot be swapped with a Kafka cluster's (whose label is its bare name).
func connectSecretLabel(name string) string { return "connect/" + name }

// connectKeyLabel and connectTokenLabel bind a Connect cluster's client
// key and bearer token likewise, each to its own use: a ciphertext copied
// from one column to another does not open (names hold no "/").
func connectKeyLabel(name string) string   { return "connect/" + name + "/client-key" }
func connectTokenLabel(name string) string { return "connect/" + name + "/bearer-token" }

// AddConnectCluster validates and registers a Kafka Connect cluster. Every
// broken rule comes back at once in an invalid_cluster Error.
func (s *Service) AddConnectCluster(ctx context.Context, in ConnectClusterSettings) (_ ConnectClusterInfo, err error) {
	defer s.audit(ctx, "connect-cluster.add", in.Name, &err)
	if err := s.allow(ctx, RoleAdmin); err != nil {
		return ConnectClusterInfo{}, err
	}
	if err := s.requireConnectClusters(); err != nil {
		return ConnectClusterInfo{}, err
	}
	in = NormalizeConnectCluster(in)
	p := ValidateConnectCluster(in)
	kafkaMissing := func() {
		p.Add("kafka_cluster", "no Kafka cluster named %q is registered: register the cluster the workers write to first", in.KafkaCluster)
	}
	if in.KafkaCluster != "" {
		if _, err := s.clusters.Cluster(ctx, in.KafkaCluster); errors.Is(err, store.ErrNotFound) {
			kafkaMissing()
		} else if err != nil {
			return ConnectClusterInfo{}, err
		}
	}
	if len(p) > 0 {
		return ConnectClusterInfo{}, invalidConnectCluster(p)
	}
	rec := store.ConnectCluster{
		Name: in.Name, URLs: in.URLs, Username: in.Username, CAPEM: in.CAPEM, ClientCertPEM: in.ClientCertPEM,
		KafkaCluster: in.KafkaCluster, ConfigProvider: in.ConfigProvider, AutoRestart: in.AutoRestart,
		CreatedAt: time.Now().UTC().Truncate(time.Second),
	}
	for _, sec := range []struct {
		what, plain, label string
		into               *[]byte
	}{
		{"password", in.Password, connectSecretLabel(in.Name), &rec.PasswordCiphertext},
		{"client key", in.ClientKeyPEM, connectKeyLabel(in.Name), &rec.ClientKeyCiphertext},
		{"bearer token", in.BearerToken, connectTokenLabel(in.Name), &rec.BearerTokenCiphertext},
	} {
		if sec.plain == "" {
			continue
		}
		sealed, err := s.secrets.Seal([]byte(sec.plain), sec.label)
		if err != nil {
			return ConnectClusterInfo{}, fmt.Errorf("seal %s of Connect cluster %q: %w", sec.what, in.Name, err)
		}
		*sec.into = sealed
	}
	switch err := s.connectClusters.CreateConnectCluster(ctx, rec); {
	case errors.Is(err, store.ErrExists):
		p.Add("name", "a Connect cluster named %q is already registered: choose another name or remove it first", in.Name)
		return ConnectClusterInfo{}, invalidConnectCluster(p)
	case errors.Is(err, store.ErrNotFound): // its Kafka cluster went away meanwhile
		kafkaMissing()
		return ConnectClusterInfo{}, invalidConnectCluster(p)
	case err != nil:
		return ConnectClusterInfo{}, err
	}
	return connectInfo(rec), nil
}

func invalidConnectCluster(p Problems) *Error {
	return &Error{Code: CodeInvalidCluster, Message: "the Connect cluster settings are not valid", Problems: p}
}

// ListConnectClusters returns every registered Connect cluster by name.
func (s *Service) ListConnectClusters(ctx context.Context) ([]ConnectClusterInfo, error) {
	if s.connectClusters == nil {
		return []ConnectClusterInfo{}, nil // none can be registered: the pages that list them still show
	}
	recs, err := s.connectClusters.ListConnectClusters(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ConnectClusterInfo, 0, len(recs))
	for _, r := range recs {
		out = append(out, connectInfo(r))
	}
	return out, nil
}

// ConnectCluster returns one registered Connect cluster, or a not_found Error.
func (s *Service) ConnectCluster(ctx context.Context, name string) (ConnectClusterInfo, error) {
	r, err := s.storedConnectCluster(ctx, name)
	if err != nil {
		return ConnectClusterInfo{}, err
	}
	return connectInfo(r), nil
}

// ConnectClusterSettings returns a registered Connect cluster with its
// password opened, for talking to it. Never show the result.
func (s *Service) ConnectClusterSettings(ctx context.Context, name string) (ConnectClusterSettings, error) {
	r, err := s.storedConnectCluster(ctx, name)
	if err != nil {
		return ConnectClusterSettings{}, err
	}
	cs := ConnectClusterSettings{Name: r.Name, URLs: r.URLs, KafkaCluster: r.KafkaCluster, Username: r.Username,
		CAPEM: r.CAPEM, ClientCertPEM: r.ClientCertPEM, ConfigProvider: r.ConfigProvider, AutoRestart: r.AutoRestart}
	for _, sec := range []struct {
		what, label string
		sealed      []byte
		into        *string
	}{
		{"password", connectSecretLabel(r.Name), r.PasswordCiphertext, &cs.Password},
		{"client key", connectKeyLabel(r.Name), r.ClientKeyCiphertext, &cs.ClientKeyPEM},
		{"bearer token", connectTokenLabel(r.Name), r.BearerTokenCiphertext, &cs.BearerToken},
	} {
		if sec.sealed == nil {
			continue
		}
		plain, err := s.secrets.Open(sec.sealed, sec.label)
		if err != nil {
			return ConnectClusterSettings{}, fmt.Errorf("Connect cluster %q, %s: %w", name, sec.what, err)
		}
		*sec.into = string(plain)
	}
	return cs, nil
}

// RemoveConnectCluster unregisters a Connect cluster no task runs on and no
// cluster's Smart Connect defaults to.
func (s *Service) RemoveConnectCluster(ctx context.Context, name string) (err error) {
	defer s.audit(ctx, "connect-cluster.remove", name, &err)
	if err := s.allow(ctx, RoleAdmin); err != nil {
		return err
	}
	if err := s.requireConnectClusters(); err != nil {
		return err
	}
	switch err := s.connectClusters.DeleteConnectCluster(ctx, name); {
	case errors.Is(err, store.ErrNotFound):
		return notFound("no Connect cluster named %q", name)
	case errors.Is(err, store.ErrReferenced):
		return &Error{Code: CodeClusterInUse, Message: fmt.Sprintf("Connect cluster %q is in use: move or delete the tasks that run on it, and pick another engine for the instances whose Smart Connect defaults to it, first", name)}
	case err != nil:
		return err
	}
	return nil
}

func (s *Service) storedConnectCluster(ctx context.Context, name string) (store.ConnectCluster, error) {
	if err := s.requireConnectClusters(); err != nil {
		return store.ConnectCluster{}, err
	}
	r, err := s.connectClusters.ConnectCluster(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return store.ConnectCluster{}, notFound("no Connect cluster named %q", name)
	}
	return r, err
}

func (s *Service) requireConnectClusters() error {
	if s.connectClusters == nil {
		return errors.New("service: Connect clusters need Deps.ConnectClusters")
	}
	return nil
}

func connectInfo(r store.ConnectCluster) ConnectClusterInfo {
	return ConnectClusterInfo{Name: r.Name, URLs: r.URLs, KafkaCluster: r.KafkaCluster, Username: r.Username,
		PasswordSet: r.PasswordCiphertext != nil, CAPEM: r.CAPEM, ClientCertPEM: r.ClientCertPEM,
		ClientKeySet: r.ClientKeyCiphertext != nil, BearerTokenSet: r.BearerTokenCiphertext != nil,
		ConfigProvider: r.ConfigProvider, AutoRestart: r.AutoRestart, CreatedAt: r.CreatedAt}
}

// NewWithConnect is New with the Kafka Connect engine wired in (as
// d.ConnectRunner): it runs the tasks whose engine names a Connect cluster,
// deploying to the clusters this service keeps. Close the engine after the
// service's last use: that ends its polls; the connectors run on.
func NewWithConnect(d Deps) (*Service, *connectengine.Engine, error) {
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	// The engine asks the service it is part of; it asks only once a task
	// is started, after New returned.
	var svc *Service
	onConnect := connectengine.New(connectengine.Deps{Logger: log, Cluster: func(ctx context.Context, name string) (connectplan.Cluster, error) {
		return svc.ConnectEngineCluster(ctx, name)
	}})
	d.ConnectRunner = onConnect
	svc, err := New(d)
	if err != nil {
		onConnect.Close()
		return nil, nil, err
	}
	return svc, onConnect, nil
}

// ConnectEngineCluster is a registered Connect cluster as the Connect engine
// deploys to it (see ConnectTarget). Never show it.
func (s *Service) ConnectEngineCluster(ctx context.Context, name string) (connectplan.Cluster, error) {
	cs, err := s.ConnectClusterSettings(ctx, name)
	if err != nil {
		return connectplan.Cluster{}, err
	}
	target, err := ConnectTarget(ctx, cs)
	if err != nil {
		return connectplan.Cluster{}, err
	}
	// The status poll reads the workers' group there (connectengine's
	// poller): a dead worker shows without reaching any worker.
	if target.Kafka, err = s.ClusterSettings(ctx, cs.KafkaCluster); err != nil {
		return connectplan.Cluster{}, fmt.Errorf("Kafka cluster %q of Connect cluster %q: %w", cs.KafkaCluster, name, err)
	}
	return target, nil
}

// ConnectTarget is a Connect cluster as the Connect engine deploys to it:
// its REST settings, password included, whether its workers allow
// per-connector producer overrides and run exactly-once source connectors
// (asked now: a worker restarted with other settings answers differently). The caller sets Kafka, the settings
// of cs.KafkaCluster, for the status poll.
func ConnectTarget(ctx context.Context, cs ConnectClusterSettings) (connectplan.Cluster, error) {
	cfg := connectConfig(cs)
	client, err := connect.Shared(cfg)
	if err != nil {
		return connectplan.Cluster{}, fmt.Errorf("Connect cluster %q: %w", cs.Name, err)
	}
	refusal, err := client.OverridesRefused(ctx)
	if err != nil {
		return connectplan.Cluster{}, fmt.Errorf("Connect cluster %q: %w", cs.Name, err)
	}
	eos, err := client.ExactlyOnceRefused(ctx)
	if err != nil {
		return connectplan.Cluster{}, fmt.Errorf("Connect cluster %q: %w", cs.Name, err)
	}
	return connectplan.Cluster{Name: cs.Name, Client: cfg, KafkaCluster: cs.KafkaCluster,
		ConfigProvider: cs.ConfigProvider, OverridesAllowed: refusal == "", ExactlyOnceRefusal: eos, AutoRestart: cs.AutoRestart}, nil
}

// connectConfig is how to reach a registered Connect cluster's REST API.
func connectConfig(cs ConnectClusterSettings) connect.Config {
	return connect.Config{URLs: cs.URLs, Username: cs.Username, Password: cs.Password, CAPEM: cs.CAPEM,
		ClientCertPEM: cs.ClientCertPEM, ClientKeyPEM: cs.ClientKeyPEM, BearerToken: cs.BearerToken}
}
