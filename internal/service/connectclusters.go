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

	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/connectengine"
	"github.com/kmirror/kmirror/internal/connectplan"
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
	// ConfigProvider names a config provider the workers define
	// (config.providers=<name>): Kafka passwords then go into connector
	// configs as references to it instead of in clear (docs/CONNECT.md).
	ConfigProvider string `json:"config_provider,omitempty"`
}

// ConnectClusterInfo is a registered Connect cluster as shown: never the
// password, only whether one is set.
type ConnectClusterInfo struct {
	Name           string    `json:"name"`
	URLs           []string  `json:"urls"`
	KafkaCluster   string    `json:"kafka_cluster"`
	Username       string    `json:"username,omitempty"`
	PasswordSet    bool      `json:"password_set"`
	CAPEM          string    `json:"ca_pem,omitempty"`
	ConfigProvider string    `json:"config_provider,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
}

const maxConnectURLs = 16

// NormalizeConnectCluster trims what users paste with stray spaces and
// trailing slashes. It never changes a password.
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
	if s.CAPEM != "" {
		if len(s.CAPEM) > maxCAPEMLength {
			p.Add("ca_pem", "CA certificate is larger than %d KiB", maxCAPEMLength>>10)
		} else if !x509.NewCertPool().AppendCertsFromPEM([]byte(s.CAPEM)) {
			p.Add("ca_pem", "no PEM certificate found: paste the CA certificate that signed the workers' REST certificates, BEGIN and END lines included")
		}
	}
	if s.ConfigProvider != "" && !clusterNameRE.MatchString(s.ConfigProvider) {
		p.Add("config_provider", "the name of a config provider the workers define (config.providers), 1 to 64 characters of A-Z, a-z, 0-9, - and _")
	}
	return p
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
		Name: in.Name, URLs: in.URLs, Username: in.Username, CAPEM: in.CAPEM,
		KafkaCluster: in.KafkaCluster, ConfigProvider: in.ConfigProvider,
		CreatedAt: time.Now().UTC().Truncate(time.Second),
	}
	if in.Password != "" {
		sealed, err := s.secrets.Seal([]byte(in.Password), connectSecretLabel(in.Name))
		if err != nil {
			return ConnectClusterInfo{}, fmt.Errorf("seal password of Connect cluster %q: %w", in.Name, err)
		}
		rec.PasswordCiphertext = sealed
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
		CAPEM: r.CAPEM, ConfigProvider: r.ConfigProvider}
	if r.PasswordCiphertext != nil {
		pw, err := s.secrets.Open(r.PasswordCiphertext, connectSecretLabel(r.Name))
		if err != nil {
			return ConnectClusterSettings{}, fmt.Errorf("Connect cluster %q: %w", name, err)
		}
		cs.Password = string(pw)
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
		PasswordSet: r.PasswordCiphertext != nil, CAPEM: r.CAPEM, ConfigProvider: r.ConfigProvider, CreatedAt: r.CreatedAt}
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
	onConnect := connectplan.NewEngine(func(ctx context.Context, name string) (connectengine.Cluster, error) {
		return svc.ConnectEngineCluster(ctx, name)
	}, log)
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
func (s *Service) ConnectEngineCluster(ctx context.Context, name string) (connectengine.Cluster, error) {
	cs, err := s.ConnectClusterSettings(ctx, name)
	if err != nil {
		return connectengine.Cluster{}, err
	}
	return ConnectTarget(ctx, cs)
}

// ConnectTarget is a Connect cluster as the Connect engine deploys to it:
// its REST settings, password included, and whether its workers allow
// per-connector producer overrides (asked now: a worker restarted with
// another policy answers differently).
func ConnectTarget(ctx context.Context, cs ConnectClusterSettings) (connectengine.Cluster, error) {
	cfg := connectConfig(cs)
	client, err := connect.New(cfg)
	if err != nil {
		return connectengine.Cluster{}, fmt.Errorf("Connect cluster %q: %w", cs.Name, err)
	}
	defer client.Close()
	refusal, err := client.OverridesRefused(ctx)
	if err != nil {
		return connectengine.Cluster{}, fmt.Errorf("Connect cluster %q: %w", cs.Name, err)
	}
	return connectengine.Cluster{Name: cs.Name, Client: cfg, KafkaCluster: cs.KafkaCluster,
		ConfigProvider: cs.ConfigProvider, OverridesAllowed: refusal == ""}, nil
}

// connectConfig is how to reach a registered Connect cluster's REST API.
func connectConfig(cs ConnectClusterSettings) connect.Config {
	return connect.Config{URLs: cs.URLs, Username: cs.Username, Password: cs.Password, CAPEM: cs.CAPEM}
}
