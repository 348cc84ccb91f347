package views

import (
	"context"
	"strconv"
	"strings"

	"github.com/kmirror/kmirror/internal/i18n"
	"github.com/kmirror/kmirror/internal/task"
)

// TaskForm is the create-task form's state: what the user typed (never a
// peer's secret: the password, client key, key password and OAuth client
// secret must be typed again), the server's messages, and
// what the last validation and connectivity check found. Field names of the
// form are the API's field paths (rules.topics, peer.alias, ...), so the
// service's problems land next to their inputs.
type TaskForm struct {
	// Cluster is the current cluster: the instance the task is created on.
	Cluster string
	// Instances are the other registered clusters, for a peer by name.
	Instances []string

	Name                 string
	CurrentAlias         string
	PeerAlias            string
	PeerConfigType       task.ConfigType
	PeerCluster          string
	PeerAddress          string
	PeerSecurityProtocol string
	PeerSASLMechanism    string
	PeerUsername         string
	PeerCAPEM            string
	// The peer's client certificate chain and OAuth grant, without the
	// key, its password and the client secret (typed again).
	PeerClientCertPEM      string
	PeerOAuthTokenEndpoint string
	PeerOAuthClientID      string
	PeerOAuthScope         string
	PeerOAuthAudience      string
	Direction              task.Direction
	// TopicsMode is "list" or "regex".
	TopicsMode          string
	Topics              []string
	TopicsRegex         string
	Tasks               string
	RenameTopics        bool
	AddSourceHeader     bool
	SyncConsumerOffsets bool
	ReplicationFactor   string
	StartOffset         task.StartOffset
	Compression         string
	// OnTargetTopicReplaced is "" (recopy) or "continue".
	OnTargetTopicReplaced string
	// Delivery is "", "at_least_once" or "exactly_once";
	// TransactionIntervalMs is as typed ("" for the default).
	Delivery              string
	TransactionIntervalMs string
	Mappings              []task.Mapping

	// Touched lists the fields the user has changed ("*": all), so inline
	// validation does not scold fields not reached yet.
	Touched string
	// Problems are shown by their fields; those of no field above the form.
	Problems []Problem
	Message  string
	Warnings []string
	// Preview is the dry run's topic preview; nil before the first one.
	Preview []FlowPreview
	// TopicChoices are the source side's topics (by the dry run), offered
	// to pick from while typing topic names.
	TopicChoices []string
	// Check is the last connectivity check; nil before one ran.
	Check *ConnectivityResult
	// CheckProblems are the connection fields' problems that kept the
	// check from running.
	CheckProblems []Problem
	AtLimit       bool
	// TasksLimit is how many tasks an instance may hold and
	// MinTargetMaxMessageBytes the smallest max.message.bytes a target
	// topic may have, the service's limits the form states.
	TasksLimit               int
	MinTargetMaxMessageBytes int
	// Engine is the engine value the task runs on ("embedded" or
	// "connect:<name>"); the form starts with the instance's Smart
	// Connect engine. ConnectClusters are the registered Connect
	// clusters' names, the other choices.
	Engine          string
	ConnectClusters []string
	// SmartConnectOff is true when Smart Connect is disabled on the
	// instance: the service refuses to create tasks there.
	SmartConnectOff bool
}

// MaxTopics and MaxMappings are the original product's limits on the form.
const (
	MaxTopics   = 20
	MaxMappings = 20
)

// FlowPreview is what one flow of the task would replicate, by the dry
// run: Source and Target are "current" or "peer"; Error says why the
// source's topics could not be listed.
type FlowPreview struct {
	Flow      string
	Source    string
	Target    string
	Topics    []PreviewTopic
	Conflicts []string
	Error     string
}

// PreviewTopic is a topic a flow would replicate, the name it gets on the
// target and what the dry run learnt of the target (0: not known).
type PreviewTopic struct {
	Source, Target        string
	NewTarget             bool
	SourceMaxMessageBytes int
	TargetMaxMessageBytes int
	TargetTooSmall        bool
}

// ConnectivityResult is the connectivity check's answer, step by step per
// cluster (Role "current" or "peer").
type ConnectivityResult struct {
	OK       bool
	Clusters []ClusterCheck
}

// ClusterCheck is one cluster's check.
type ClusterCheck struct {
	Role, Cluster string
	OK            bool
	Steps         []CheckStep
}

// CheckStep is one step of a check (tcp, tls, sasl, ...).
type CheckStep struct {
	Name    string
	OK      bool
	Skipped bool
	Message string
}

// FormSlots are the fields with a place for messages, in form order.
var FormSlots = []string{
	"name", "type", "current.alias",
	"peer.alias", "peer.config_type", "peer.cluster", "peer.address", "peer.security_protocol",
	"peer.sasl_mechanism", "peer.username", "peer.password", "peer.ca_pem",
	"peer.client_cert_pem", "peer.client_key_pem", "peer.client_key_password", "peer.oauth",
	"peer.oauth.token_endpoint", "peer.oauth.client_id", "peer.oauth.client_secret", "peer.oauth.scope", "peer.oauth.audience",
	"rules.direction", "rules.topics", "rules.topics_regex", "rules.tasks", "rules.rename_topics",
	"rules.add_source_header", "rules.sync_consumer_offsets", "rules.replication_factor",
	"rules.start_offset", "rules.compression", "rules.topic_mappings", "engine",
}

// SlotOf is the message place of a problem's field: itself, its mapping
// row, or "" for above the form.
func SlotOf(field string) string {
	if rest, ok := strings.CutPrefix(field, "rules.topic_mappings["); ok {
		if i := strings.IndexByte(rest, ']'); i > 0 {
			return "rules.topic_mappings[" + rest[:i] + "]"
		}
	}
	for _, s := range FormSlots {
		if s == field {
			return field
		}
	}
	return ""
}

// slotID makes an element id of a slot name.
func slotID(slot string) string {
	r := strings.NewReplacer(".", "-", "[", "-", "]", "")
	return "err-" + r.Replace(slot)
}

func (f TaskForm) messages(slot string) []string {
	var out []string
	for _, p := range f.Problems {
		if SlotOf(p.Field) == slot {
			out = append(out, p.Message)
		}
	}
	return out
}

// MappingRows are the mapping rows to render: what was typed plus blank
// rows, at least three, at most MaxMappings.
func (f TaskForm) MappingRows() []task.Mapping {
	rows := append([]task.Mapping(nil), f.Mappings...)
	for len(rows) < 3 {
		rows = append(rows, task.Mapping{})
	}
	return rows[:min(len(rows), MaxMappings)]
}

func (f TaskForm) base() string { return InstancePath(f.Cluster, "smart-connect") }

// effectiveTasks is the number of tasks a bidirectional task really runs
// (tasks per flow × 2), and whether to show it: only for bidirectional
// with a sound count. An empty count is the default. app.js keeps it live.
func (f TaskForm) effectiveTasks() (n, total int, show bool) {
	if f.Direction != task.DirectionBidirectional {
		return 0, 0, false
	}
	n = task.DefaultTasks
	if f.Tasks != "" {
		var err error
		if n, err = strconv.Atoi(f.Tasks); err != nil || n < 1 {
			return 0, 0, false
		}
	}
	return n, n * 2, true
}

func tasksEffectiveText(ctx context.Context, f TaskForm) string {
	n, total, ok := f.effectiveTasks()
	if !ok {
		return ""
	}
	return i18n.T(ctx, "task.tasks_effective", "N", n, "Total", total)
}

// topicNote is what the dry run learnt about a topic's target: whether it
// is created, and max.message.bytes on both sides.
func topicNote(ctx context.Context, t PreviewTopic) string {
	var parts []string
	if t.NewTarget {
		parts = append(parts, i18n.T(ctx, "sc.preview.new_target"))
	}
	switch {
	case t.SourceMaxMessageBytes > 0 && t.TargetMaxMessageBytes > 0:
		parts = append(parts, i18n.T(ctx, "sc.preview.max_bytes", "Source", t.SourceMaxMessageBytes, "Target", t.TargetMaxMessageBytes))
	case t.SourceMaxMessageBytes > 0:
		parts = append(parts, i18n.T(ctx, "sc.preview.max_bytes_source", "Source", t.SourceMaxMessageBytes))
	}
	if t.TargetTooSmall {
		parts = append(parts, i18n.T(ctx, "sc.preview.too_small"))
	}
	return strings.Join(parts, "; ")
}

func stepClass(ok, skipped bool) string {
	switch {
	case skipped:
		return "step skipped"
	case ok:
		return "step ok"
	}
	return "step failed"
}

// stepMark is a step's result as data-result states it (stable, English);
// the page shows it translated.
func stepMark(ok, skipped bool) string {
	switch {
	case skipped:
		return "skipped"
	case ok:
		return "passed"
	}
	return "failed"
}

func stepLabel(ctx context.Context, ok, skipped bool) string {
	switch {
	case skipped:
		return i18n.T(ctx, "sc.step.skipped")
	case ok:
		return i18n.T(ctx, "sc.step.passed")
	}
	return i18n.T(ctx, "sc.step.failed")
}

// roleLabel names a side of a task (current or peer) as the original product does.
func roleLabel(ctx context.Context, role string) string {
	switch role {
	case "current":
		return i18n.T(ctx, "sc.role.current")
	case "peer":
		return i18n.T(ctx, "sc.role.peer")
	}
	return role
}

// ExactlyOnce says whether the form asks for exactly-once delivery.
func (f TaskForm) ExactlyOnce() bool { return task.Delivery(f.Delivery) == task.DeliveryExactlyOnce }
