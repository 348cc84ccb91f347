// Package service holds kmirror's use cases — what the console and the JSON
// API can do — so both interfaces behave the same and the HTTP layer stays a
// thin translation.
//
// Invariants: nothing invalid is stored (every rule is checked before a
// write, and every broken rule is reported at once as Problems); a Kafka
// password (a cluster's, or a task's peer by address) is sealed before it is
// stored and opened only to connect (ClusterSettings, and a task handed to
// the Runner), never for display or logs. Every use case that changes
// something checks the caller's role (Actor in the context; none means
// kmirror itself) before any work and appends its outcome to the audit log.
package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kmirror/kmirror/internal/account"
	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/clustercheck"
	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/store"
	"github.com/kmirror/kmirror/internal/switchover"
	"github.com/kmirror/kmirror/internal/task"
)

// TasksPerClusterLimit is how many Smart Connect tasks one current cluster may
// hold (docs/TASKS.md, Cross-task rules).
const TasksPerClusterLimit = 18

// Sealer seals and opens secrets bound to a label; *secrets.Box is one.
type Sealer interface {
	Seal(plaintext []byte, label string) ([]byte, error)
	Open(sealed []byte, label string) ([]byte, error)
}

// TaskCounter says how many tasks a cluster holds. Until tasks exist the
// service counts zero.
type TaskCounter interface {
	TasksUsed(ctx context.Context, cluster string) (int, error)
}

// Deps are the service's collaborators.
type Deps struct {
	Clusters store.Clusters
	Users    store.Users
	Secrets  Sealer
	// Tasks counts tasks per cluster; optional: TaskStore counts when set,
	// else zero.
	Tasks TaskCounter
	// TaskStore and Runner enable the task use cases (CreateTask and the
	// rest); without them those answer an internal error.
	TaskStore store.Tasks
	Runner    engine.Runner
	// Kafka talks to live clusters; optional (clustercheck.Live by default).
	Kafka Kafka
	// Logger is optional (slog.Default). Passwords are never logged.
	Logger *slog.Logger
	// Throttle slows down sign-in guessing per account name (see SignIn);
	// optional (a default one is made).
	Throttle *account.Throttle
	// AddressThrottle slows down one address (or IPv6 /64) trying many
	// names, counting names, not attempts (see SignIn); optional (a default
	// one is made).
	AddressThrottle *account.Throttle
	// MaxConcurrentSignIns caps password checks in progress (bcrypt is
	// costly on purpose); past it a sign-in is told to retry. Optional
	// (twice the CPUs).
	MaxConcurrentSignIns int
	// Tokens keeps API tokens; optional (without it there are none but
	// KMIRROR_TOKEN).
	Tokens store.Tokens
	// Audit keeps the audit log; optional (without it nothing is recorded).
	Audit store.Audit
	// ConnectRunner runs the tasks whose engine is a Kafka Connect cluster;
	// optional (without it such tasks are refused).
	ConnectRunner engine.Runner
	// ConnectClusters keeps the registered Kafka Connect clusters;
	// optional (without it the Connect use cases answer an internal error).
	ConnectClusters store.ConnectClusters
	// Now is the clock API tokens' expiry is read by; optional (time.Now).
	Now func() time.Time
	// Policies keeps the destination policy; optional (without it
	// operators may give any address, as before the policy).
	Policies store.Policies
	// Switchovers keeps tasks' switchovers; optional (without it they are
	// refused). SwitchoverOptions and SwitchoverTick tune how they run
	// (tests shorten them; the tick is 1 s by default).
	Switchovers       store.Switchovers
	SwitchoverOptions switchover.Options
	SwitchoverTick    time.Duration
}

// Service is the use-case layer. It is safe for concurrent use.
type Service struct {
	clusters store.Clusters
	users    store.Users
	secrets  Sealer
	tasks    TaskCounter
	throttle *account.Throttle
	addrThr  *account.Throttle
	hashing  chan struct{} // one token per password check in progress
	tokens   store.Tokens
	auditLog store.Audit
	policies store.Policies

	connectClusters store.ConnectClusters
	connectRunner   engine.Runner

	taskStore store.Tasks
	runner    engine.Runner
	kafka     Kafka
	log       *slog.Logger
	taskLocks taskLocks
	now       func() time.Time
	// auditedOnce keeps repeated refusals (throttled sign-ins, names no
	// account can have) to one audit entry a minute (auditOnceAMinute).
	auditedOnce onceAMinute

	deletedMu sync.Mutex
	onDeleted []func(task string)

	switchoverStore store.Switchovers
	sw              switchovers
}

// OnTaskDeleted calls f with a task's name after the task is deleted,
// whoever deleted it (console, API, CLI): what remembers a task beside
// the store (the charts' history) forgets it there.
func (s *Service) OnTaskDeleted(f func(task string)) {
	s.deletedMu.Lock()
	defer s.deletedMu.Unlock()
	s.onDeleted = append(s.onDeleted, f)
}

func (s *Service) taskDeleted(name string) {
	s.deletedMu.Lock()
	fs := slices.Clone(s.onDeleted)
	s.deletedMu.Unlock()
	for _, f := range fs {
		f(name)
	}
}

// New returns a Service. Clusters, Users and Secrets are required.
func New(d Deps) (*Service, error) {
	if d.Clusters == nil || d.Users == nil || d.Secrets == nil {
		return nil, errors.New("service: Clusters, Users and Secrets are required")
	}
	if d.Throttle == nil {
		d.Throttle = account.NewThrottle()
	}
	if d.AddressThrottle == nil {
		d.AddressThrottle = account.NewThrottle()
		// Twenty different names: an office behind one NAT shares an
		// address, and its people mistype their names too.
		d.AddressThrottle.Free = 20
	}
	if d.MaxConcurrentSignIns <= 0 {
		d.MaxConcurrentSignIns = 2 * runtime.GOMAXPROCS(0)
	}
	if d.Tasks == nil && d.TaskStore != nil {
		d.Tasks = storeCounter{d.TaskStore}
	}
	if d.Kafka == nil {
		d.Kafka = clustercheck.Live{}
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.SwitchoverTick <= 0 {
		d.SwitchoverTick = time.Second
	}
	return &Service{switchoverStore: d.Switchovers, sw: switchovers{sides: map[int64]switchover.Side{}, opts: d.SwitchoverOptions, tick: d.SwitchoverTick},
		clusters: d.Clusters, users: d.Users, secrets: d.Secrets, tasks: d.Tasks, throttle: d.Throttle,
		addrThr: d.AddressThrottle, hashing: make(chan struct{}, d.MaxConcurrentSignIns), tokens: d.Tokens, auditLog: d.Audit,
		taskStore: d.TaskStore, runner: d.Runner, kafka: d.Kafka, log: d.Logger, connectClusters: d.ConnectClusters, connectRunner: d.ConnectRunner, now: d.Now, policies: d.Policies}, nil
}

// ClusterInfo is a registered cluster as shown by the console and the API:
// never the password, only whether one is set.
type ClusterInfo struct {
	Name             string   `json:"name"`
	BootstrapServers []string `json:"bootstrap_servers"`
	SecurityProtocol string   `json:"security_protocol"`
	SASLMechanism    string   `json:"sasl_mechanism,omitempty"`
	Username         string   `json:"username,omitempty"`
	PasswordSet      bool     `json:"password_set"`
	CAPEM            string   `json:"ca_pem,omitempty"`
	Credentials
	CreatedAt  time.Time `json:"created_at"`
	TasksUsed  int       `json:"tasks_used"`
	TasksLimit int       `json:"tasks_limit"`
	// SmartConnect says whether tasks may be created here and on which
	// engine they run by default.
	SmartConnect SmartConnect `json:"smart_connect"`
}

// Credentials is what the console and the API show of a cluster's (or a
// peer's) client certificate and OAuth settings: the certificate chain and
// what it says, whether the secrets are set, never their values.
type Credentials struct {
	ClientCertPEM string `json:"client_cert_pem,omitempty"`
	// ClientCert describes the certificate's leaf; absent without one.
	ClientCert *cluster.CertInfo `json:"client_cert,omitempty"`
	// ClientKeySet says a client key (and its password, if any) is sealed.
	ClientKeySet bool `json:"client_key_set,omitempty"`
	// OAuth is OAUTHBEARER's grant with its client secret masked.
	OAuth *cluster.OAuth `json:"oauth,omitempty"`
}

// credentialsOf shows s's certificate and OAuth settings; sealed says
// whether the secrets beside the password are set.
func credentialsOf(s cluster.Settings, sealed bool) Credentials {
	c := Credentials{ClientCertPEM: s.ClientCertPEM}
	if s.HasClientCert() {
		info := s.ClientCertInfo()
		c.ClientCert = &info
		c.ClientKeySet = sealed
	}
	if s.OAuth != (cluster.OAuth{}) {
		o := s.OAuth
		o.ClientSecret = ""
		if sealed {
			o.ClientSecret = task.PasswordMask
		}
		c.OAuth = &o
	}
	return c
}

// CertExpiresSoon reports whether the client certificate ends within the
// warning window (cluster.CertExpiryWarning) of now, or has ended.
func (c Credentials) CertExpiresSoon(now time.Time) bool {
	return c.ClientCert != nil && c.ClientCert.ExpiresWithin(cluster.CertExpiryWarning, now)
}

// Auth describes the cluster's authentication in a few words for lists.
func (c ClusterInfo) Auth() string {
	return authSummary(c.SecurityProtocol, c.SASLMechanism, c.Username, c.Credentials)
}

func authSummary(protocol, mechanism, username string, c Credentials) string {
	var out string
	switch {
	case protocol == cluster.Plaintext || protocol == "":
		return "none (PLAINTEXT)"
	case mechanism == cluster.MechanismOAuthBearer && c.OAuth != nil:
		out = protocol + " OAUTHBEARER as " + c.OAuth.ClientID
	case mechanism != "":
		out = protocol + " " + mechanism + " as " + username
	default:
		out = protocol
	}
	if c.ClientCert != nil {
		out += ", client certificate " + c.ClientCert.Subject
	}
	return out
}

// ListClusters returns every registered cluster ordered by name.
func (s *Service) ListClusters(ctx context.Context) ([]ClusterInfo, error) {
	recs, err := s.clusters.ListClusters(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ClusterInfo, 0, len(recs))
	for _, r := range recs {
		info, err := s.info(ctx, r)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

// Cluster returns one registered cluster, or a not_found Error.
func (s *Service) Cluster(ctx context.Context, name string) (ClusterInfo, error) {
	r, err := s.clusters.Cluster(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return ClusterInfo{}, notFound("no cluster named %q", name)
	}
	if err != nil {
		return ClusterInfo{}, err
	}
	return s.info(ctx, r)
}

// ClusterSettings returns a registered cluster with its password opened, for
// connecting to it. Never show the result.
func (s *Service) ClusterSettings(ctx context.Context, name string) (cluster.Settings, error) {
	r, err := s.clusters.Cluster(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return cluster.Settings{}, notFound("no cluster named %q", name)
	}
	if err != nil {
		return cluster.Settings{}, err
	}
	x, err := s.openSecrets(r.PasswordCiphertext, r.Name, r.CredentialsCiphertext, clusterCredentialsLabel(r.Name))
	if err != nil {
		return cluster.Settings{}, fmt.Errorf("cluster %q: %w", name, err)
	}
	return clusterOf(r).WithSecrets(x), nil
}

// clusterOf is a stored cluster's settings without its secrets.
func clusterOf(r store.Cluster) cluster.Settings {
	return cluster.Settings{
		Name: r.Name, BootstrapServers: r.BootstrapServers, SecurityProtocol: r.SecurityProtocol,
		SASLMechanism: r.SASLMechanism, Username: r.Username, CAPEM: r.CAPEM, ClientCertPEM: r.ClientCertPEM, OAuth: r.OAuth,
	}
}

func clusterCredentialsLabel(name string) string { return "credentials/" + name }

// sealSecrets seals a password under passwordLabel, and the other secrets
// together as JSON under credentialsLabel; nil for what is not set.
func (s *Service) sealSecrets(x cluster.Secrets, passwordLabel, credentialsLabel string) (password, credentials []byte, err error) {
	if x.Password != "" {
		if password, err = s.secrets.Seal([]byte(x.Password), passwordLabel); err != nil {
			return nil, nil, fmt.Errorf("seal the password: %w", err)
		}
	}
	x.Password = ""
	if x.IsZero() {
		return password, nil, nil
	}
	b, err := json.Marshal(x)
	if err != nil {
		return nil, nil, err
	}
	if credentials, err = s.secrets.Seal(b, credentialsLabel); err != nil {
		return nil, nil, fmt.Errorf("seal the credentials: %w", err)
	}
	return password, credentials, nil
}

// openSecrets is sealSecrets' reverse.
func (s *Service) openSecrets(password []byte, passwordLabel string, credentials []byte, credentialsLabel string) (cluster.Secrets, error) {
	var x cluster.Secrets
	if credentials != nil {
		b, err := s.secrets.Open(credentials, credentialsLabel)
		if err != nil {
			return x, fmt.Errorf("open the credentials: %w", err)
		}
		if err := json.Unmarshal(b, &x); err != nil {
			return x, fmt.Errorf("decode the credentials: %w", err)
		}
	}
	if password != nil {
		pw, err := s.secrets.Open(password, passwordLabel)
		if err != nil {
			return x, err
		}
		x.Password = string(pw)
	}
	return x, nil
}

// AddCluster validates and registers a cluster. Every broken rule comes back
// at once in an invalid_cluster Error; a taken name is one of them.
func (s *Service) AddCluster(ctx context.Context, in cluster.Settings) (_ ClusterInfo, err error) {
	defer s.audit(ctx, "cluster.add", in.Name, &err)
	if err := s.allow(ctx, RoleAdmin); err != nil {
		return ClusterInfo{}, err
	}
	in = NormalizeCluster(in)
	if p := ValidateCluster(in); len(p) > 0 {
		return ClusterInfo{}, &Error{Code: CodeInvalidCluster, Message: "the cluster settings are not valid", Problems: p}
	}
	rec := store.Cluster{
		Name: in.Name, BootstrapServers: in.BootstrapServers, SecurityProtocol: in.SecurityProtocol,
		SASLMechanism: in.SASLMechanism, Username: in.Username, CAPEM: in.CAPEM, ClientCertPEM: in.ClientCertPEM, OAuth: in.OAuth,
		// Whole seconds: what the store keeps, so a later read shows the same.
		CreatedAt: time.Now().UTC().Truncate(time.Second),
		// What the store sets on a new cluster: enabled, in-process.
		SmartConnect: store.SmartConnect{Enabled: true},
	}
	rec.OAuth.ClientSecret = ""
	if rec.PasswordCiphertext, rec.CredentialsCiphertext, err = s.sealSecrets(in.Secrets(), in.Name, clusterCredentialsLabel(in.Name)); err != nil {
		return ClusterInfo{}, fmt.Errorf("cluster %q: %w", in.Name, err)
	}
	if err := s.clusters.CreateCluster(ctx, rec); err != nil {
		if errors.Is(err, store.ErrExists) {
			var p Problems
			p.Add("name", "a cluster named %q is already registered: choose another name or remove it first", in.Name)
			return ClusterInfo{}, &Error{Code: CodeInvalidCluster, Message: "the cluster settings are not valid", Problems: p}
		}
		return ClusterInfo{}, err
	}
	return s.info(ctx, rec)
}

// RemoveCluster unregisters a cluster that no task uses, as its current
// cluster or as its peer.
func (s *Service) RemoveCluster(ctx context.Context, name string) (err error) {
	defer s.audit(ctx, "cluster.remove", name, &err)
	if err := s.allow(ctx, RoleAdmin); err != nil {
		return err
	}
	if _, err := s.clusters.Cluster(ctx, name); errors.Is(err, store.ErrNotFound) {
		return notFound("no cluster named %q", name)
	} else if err != nil {
		return err
	}
	if s.taskStore != nil {
		names, err := s.taskStore.TasksUsingCluster(ctx, name)
		if err != nil {
			return err
		}
		if len(names) > 0 {
			return &Error{Code: CodeClusterInUse, Message: fmt.Sprintf("cluster %q is used by Smart Connect task(s) %s: delete them first", name, strings.Join(names, ", "))}
		}
	}
	used, err := s.tasksUsed(ctx, name)
	if err != nil {
		return err
	}
	if used > 0 {
		return &Error{Code: CodeClusterInUse, Message: fmt.Sprintf("cluster %q still has %d Smart Connect task(s): delete them first", name, used)}
	}
	switch err := s.clusters.DeleteCluster(ctx, name); {
	case errors.Is(err, store.ErrNotFound):
		return notFound("no cluster named %q", name)
	case errors.Is(err, store.ErrReferenced):
		return &Error{Code: CodeClusterInUse, Message: fmt.Sprintf("cluster %q is still used (by a task, or by a Kafka Connect cluster whose workers write to it): remove those first", name)}
	case err != nil:
		return err
	}
	return nil
}

func (s *Service) info(ctx context.Context, r store.Cluster) (ClusterInfo, error) {
	used, err := s.tasksUsed(ctx, r.Name)
	if err != nil {
		return ClusterInfo{}, err
	}
	return ClusterInfo{
		Name: r.Name, BootstrapServers: r.BootstrapServers, SecurityProtocol: r.SecurityProtocol,
		SASLMechanism: r.SASLMechanism, Username: r.Username, PasswordSet: r.PasswordCiphertext != nil,
		CAPEM: r.CAPEM, Credentials: credentialsOf(clusterOf(r), r.CredentialsCiphertext != nil),
		CreatedAt: r.CreatedAt, TasksUsed: used, TasksLimit: TasksPerClusterLimit,
		SmartConnect: smartConnectOf(r),
	}, nil
}

func (s *Service) tasksUsed(ctx context.Context, name string) (int, error) {
	if s.tasks == nil {
		return 0, nil
	}
	n, err := s.tasks.TasksUsed(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("count tasks of cluster %q: %w", name, err)
	}
	return n, nil
}

// ClientCertExpiry is when a client certificate kmirror presents ends: a
// registered cluster's (Task empty) or a task's peer given by address
// (Cluster is then the peer's alias).
type ClientCertExpiry struct {
	Cluster  string
	Task     string
	Subject  string
	NotAfter time.Time
}

// ClientCertExpiries lists every client certificate of registered clusters
// and of tasks' peers by address, for metrics and alerts. It reads the
// store only (no secret is opened) and takes no role: metrics have their
// own access control.
func (s *Service) ClientCertExpiries(ctx context.Context) ([]ClientCertExpiry, error) {
	recs, err := s.clusters.ListClusters(ctx)
	if err != nil {
		return nil, err
	}
	var out []ClientCertExpiry
	for _, r := range recs {
		if info := clusterOf(r).ClientCertInfo(); !info.NotAfter.IsZero() {
			out = append(out, ClientCertExpiry{Cluster: r.Name, Subject: info.Subject, NotAfter: info.NotAfter})
		}
	}
	if s.taskStore == nil {
		return out, nil
	}
	tasks, err := s.taskStore.ListTasks(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range tasks {
		p := t.Spec.Peer
		if p.ConfigType != task.PeerByAddress {
			continue
		}
		if info := p.Settings().ClientCertInfo(); !info.NotAfter.IsZero() {
			out = append(out, ClientCertExpiry{Cluster: p.Alias, Task: t.Name(), Subject: info.Subject, NotAfter: info.NotAfter})
		}
	}
	return out, nil
}
