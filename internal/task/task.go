// Package task is the Smart Connect task: the immutable description of a
// replication between the current cluster and a peer (docs/TASKS.md), in the JSON
// shape of the API.
//
// A Task is a value: once created it is never changed (delete and create
// again). Runtime state (running, paused, failed) lives elsewhere.
package task

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
)

// TypeKafkaReplication is the only preset task type for now.
const TypeKafkaReplication = "kafka-replication"

// Direction is which way a task copies, seen from the current cluster.
type Direction string

// Directions of a task.
const (
	DirectionPull          Direction = "pull"          // peer -> current
	DirectionPush          Direction = "push"          // current -> peer
	DirectionBidirectional Direction = "bidirectional" // both
)

// ConfigType is how a task names its peer.
type ConfigType string

// Peer config types.
const (
	PeerByAddress ConfigType = "address"
	PeerByCluster ConfigType = "cluster"
)

// StartOffset is where a partition with no stored progress starts.
type StartOffset string

// Start offsets.
const (
	StartEarliest StartOffset = "earliest"
	StartLatest   StartOffset = "latest"
)

// SourceHeader is the record header naming the cluster alias a record was
// replicated from; a flow never copies a record whose header equals its
// target alias.
const SourceHeader = "kmirror.source"

// Task is one Smart Connect task.
type Task struct {
	Name    string  `json:"name"`
	Type    string  `json:"type"`
	Current Current `json:"current"`
	Peer    Peer    `json:"peer"`
	Rules   Rules   `json:"rules"`
	// Engine runs the task: "" or "embedded" is the in-process engine,
	// "connect:<name>" a registered Kafka Connect cluster (see engine.go).
	Engine string `json:"engine,omitempty"`
	// Failback is the way back after a switchover, while one is prepared
	// (FailbackFlow): not a rule of the task, never stored with it; the
	// service attaches it when it starts the task.
	Failback *Failback `json:"-"`
	// Returns are the ways back that went home, oldest first (runtime,
	// like Failback): groups inside what they wrote translate exactly.
	Returns []Return `json:"-"`
}

// Current is the cluster the task belongs to.
type Current struct {
	Cluster string `json:"cluster"`
	Alias   string `json:"alias"`
}

// Peer is the other side: a registered cluster or a raw address.
type Peer struct {
	Alias            string     `json:"alias"`
	ConfigType       ConfigType `json:"config_type"`
	Cluster          string     `json:"cluster,omitempty"`
	Address          []string   `json:"address,omitempty"`
	SecurityProtocol string     `json:"security_protocol,omitempty"`
	SASLMechanism    string     `json:"sasl_mechanism,omitempty"`
	Username         string     `json:"username,omitempty"`
	Password         string     `json:"password,omitempty"`
	CAPEM            string     `json:"ca_pem,omitempty"`
	// A client certificate and its key (SSL, SASL_SSL), and OAUTHBEARER's
	// client-credentials grant: as a registered cluster's (cluster.Settings).
	ClientCertPEM     string        `json:"client_cert_pem,omitempty"`
	ClientKeyPEM      string        `json:"client_key_pem,omitempty"`
	ClientKeyPassword string        `json:"client_key_password,omitempty"`
	OAuth             cluster.OAuth `json:"oauth,omitzero"`
}

// Rules say what is copied and how.
type Rules struct {
	Direction           Direction   `json:"direction"`
	Topics              []string    `json:"topics,omitempty"`
	TopicsRegex         string      `json:"topics_regex,omitempty"`
	Tasks               int         `json:"tasks"`
	RenameTopics        bool        `json:"rename_topics"`
	AddSourceHeader     bool        `json:"add_source_header"`
	SyncConsumerOffsets bool        `json:"sync_consumer_offsets"`
	ReplicationFactor   int         `json:"replication_factor"`
	StartOffset         StartOffset `json:"start_offset"`
	Compression         string      `json:"compression"`
	TopicMappings       []Mapping   `json:"topic_mappings,omitempty"`
	// OnTargetTopicReplaced is what a flow does when a target topic is
	// deleted or created again under it: TargetReplacedRecopy (the
	// default, also for "") copies it again from the source's first
	// record; TargetReplacedContinue goes on from the progress. Either way
	// the loss is counted and shown, and translation stays inside the new
	// topic.
	OnTargetTopicReplaced string `json:"on_target_topic_replaced,omitempty"`
	// Delivery is how many times each source record reaches the target:
	// at least once (the default, also for "") or exactly once, through
	// transactions on the target (docs/DESIGN.md, "Exactly once").
	Delivery Delivery `json:"delivery,omitempty"`
	// TransactionIntervalMs is how long an exactly-once transaction stays
	// open (0: DefaultTransactionInterval); only with DeliveryExactlyOnce.
	TransactionIntervalMs int `json:"transaction_interval_ms,omitempty"`
	// OffsetSyncsAt is where each flow keeps its offset syncs:
	// OffsetSyncsAtSource or OffsetSyncsAtTarget, as MirrorMaker 2's
	// offset-syncs.topic.location says (an adoption keeps MM2's); "" is
	// kmirror's layout (task.Flows): the current cluster, the source for
	// a bidirectional task's second flow.
	OffsetSyncsAt string `json:"offset_syncs_at,omitempty"`
}

// Where offset syncs are kept (Rules.OffsetSyncsAt).
const (
	OffsetSyncsAtSource = "source"
	OffsetSyncsAtTarget = "target"
)

// Delivery is how many times a task copies each source record.
type Delivery string

// Deliveries.
const (
	DeliveryAtLeastOnce Delivery = "at_least_once"
	DeliveryExactlyOnce Delivery = "exactly_once"
)

// DefaultTransactionInterval is how long an exactly-once transaction stays
// open by default: what a reader with read_committed waits at most for a
// copied record, and how much is copied again after a crash.
const DefaultTransactionInterval = time.Second

// ExactlyOnce says whether the rules ask for exactly-once delivery.
func (r Rules) ExactlyOnce() bool { return r.Delivery == DeliveryExactlyOnce }

// TransactionTimeout is the transaction.timeout.ms kmirror asks for
// transactions of the given interval: ten intervals, at least a minute (a
// partition's produce retries through a leader election must not outlast
// it). The coordinator aborts a transaction open longer; the target's
// transaction.max.timeout.ms must allow it.
func TransactionTimeout(interval time.Duration) time.Duration {
	return max(time.Minute, 10*interval)
}

// TransactionInterval is how long an exactly-once transaction stays open.
func (r Rules) TransactionInterval() time.Duration {
	if r.TransactionIntervalMs > 0 {
		return time.Duration(r.TransactionIntervalMs) * time.Millisecond
	}
	return DefaultTransactionInterval
}

// What a flow does when a target topic is deleted or created again.
const (
	TargetReplacedRecopy   = "recopy"
	TargetReplacedContinue = "continue"
)

// Mapping names a target topic freely for one source topic.
type Mapping struct {
	Source string `json:"source"`
	Target string `json:"target"`
}

// DefaultTasks is the original product's default parallelism per flow.
const DefaultTasks = 2

// DefaultReplicationFactor stands for a task that does not set one: topics
// created on the target get the target's default.replication.factor (-1 is
// Kafka's own way to ask for the broker's default when creating a topic).
const DefaultReplicationFactor = -1

// PasswordMask stands for a set password in exported JSON. A task holding it
// as its password is refused (the real password must be given again), so a
// masked export is never created with "********" as a credential.
const PasswordMask = cluster.SecretMask

// UnmarshalJSON decodes a task strictly (an unknown field is an error).
// Numbers the body omits take their defaults here, at decoding, because only
// here is an omitted field distinguishable from an explicit 0: the validator
// then refuses an explicit 0 instead of silently replacing it.
func (t *Task) UnmarshalJSON(b []byte) error {
	type plain Task // no methods: no recursion
	p := plain{Rules: Rules{Tasks: DefaultTasks, ReplicationFactor: DefaultReplicationFactor}}
	if err := decodeStrict(b, &p); err != nil {
		return err
	}
	*t = Task(p)
	return nil
}

// UnmarshalJSON decodes rules strictly, omitted numbers taking their
// defaults (see Task.UnmarshalJSON).
func (r *Rules) UnmarshalJSON(b []byte) error {
	type plain Rules
	p := plain{Tasks: DefaultTasks, ReplicationFactor: DefaultReplicationFactor}
	if err := decodeStrict(b, &p); err != nil {
		return err
	}
	*r = Rules(p)
	return nil
}

func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// WithDefaults fills what the user may leave out, as the console does. It
// is for tasks built in code (the engine, tests); requests are decoded with
// their defaults instead (UnmarshalJSON), so an explicit 0 stays an error.
func (t Task) WithDefaults() Task {
	if t.Type == "" {
		t.Type = TypeKafkaReplication
	}
	if t.Rules.Tasks == 0 {
		t.Rules.Tasks = DefaultTasks
	}
	if t.Rules.StartOffset == "" {
		t.Rules.StartOffset = StartEarliest
	}
	if t.Rules.Compression == "" {
		t.Rules.Compression = "none"
	}
	if t.Rules.ReplicationFactor == 0 {
		t.Rules.ReplicationFactor = DefaultReplicationFactor
	}
	return t
}

// Resolve finds the clusters a task connects: the current cluster by name,
// the peer by name or from the task's own address and credentials.
func (t Task) Resolve(lookup func(name string) (cluster.Settings, bool)) (current, peer cluster.Settings, err error) {
	current, ok := lookup(t.Current.Cluster)
	if !ok {
		return current, peer, fmt.Errorf("current cluster %q is not registered: add it first", t.Current.Cluster)
	}
	switch t.Peer.ConfigType {
	case PeerByCluster:
		if peer, ok = lookup(t.Peer.Cluster); !ok {
			return current, peer, fmt.Errorf("peer cluster %q is not registered: add it first", t.Peer.Cluster)
		}
	case PeerByAddress, "":
		peer = t.Peer.Settings()
		if peer.SecurityProtocol == "" {
			peer.SecurityProtocol = cluster.Plaintext
		}
	default:
		return current, peer, fmt.Errorf("peer config type %q: use address or cluster", t.Peer.ConfigType)
	}
	return current, peer, nil
}

// Settings is how to reach a peer given by address, named by its alias.
func (p Peer) Settings() cluster.Settings {
	return cluster.Settings{
		Name:              p.Alias,
		BootstrapServers:  p.Address,
		SecurityProtocol:  p.SecurityProtocol,
		SASLMechanism:     p.SASLMechanism,
		Username:          p.Username,
		Password:          p.Password,
		CAPEM:             p.CAPEM,
		ClientCertPEM:     p.ClientCertPEM,
		ClientKeyPEM:      p.ClientKeyPEM,
		ClientKeyPassword: p.ClientKeyPassword,
		OAuth:             p.OAuth,
	}
}

// WithSettings returns p reaching the cluster as s says: its addresses and
// how to authenticate (the alias and config type stay p's).
func (p Peer) WithSettings(s cluster.Settings) Peer {
	p.Address, p.SecurityProtocol, p.SASLMechanism, p.Username, p.Password, p.CAPEM = s.BootstrapServers, s.SecurityProtocol, s.SASLMechanism, s.Username, s.Password, s.CAPEM
	p.ClientCertPEM, p.ClientKeyPEM, p.ClientKeyPassword, p.OAuth = s.ClientCertPEM, s.ClientKeyPEM, s.ClientKeyPassword, s.OAuth
	return p
}

// Secrets are the peer's secrets (sealed at rest, never shown).
func (p Peer) Secrets() cluster.Secrets { return p.Settings().Secrets() }

// WithSecrets returns p holding x as its secrets; WithSecrets(cluster.Secrets{})
// is what may be stored in clear or shown.
func (p Peer) WithSecrets(x cluster.Secrets) Peer { return p.WithSettings(p.Settings().WithSecrets(x)) }
