package connect

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Connector and task states as Connect reports them.
const (
	StateRunning    = "RUNNING"
	StatePaused     = "PAUSED"
	StateStopped    = "STOPPED"
	StateFailed     = "FAILED"
	StateUnassigned = "UNASSIGNED"
	StateRestarting = "RESTARTING"
)

// ServerInfo is what GET / answers: the worker's version and the Kafka
// cluster holding its internal topics.
type ServerInfo struct {
	Version        string `json:"version"`
	Commit         string `json:"commit"`
	KafkaClusterID string `json:"kafka_cluster_id"`
}

// ServerInfo asks a worker for its version: the cheapest proof that the
// URLs, credentials and CA are right.
func (c *Client) ServerInfo(ctx context.Context) (ServerInfo, error) {
	var si ServerInfo
	_, err := c.do(ctx, http.MethodGet, "/", nil, &si)
	return si, err
}

// Plugin is one installed plugin.
type Plugin struct {
	Class   string `json:"class"`
	Type    string `json:"type"` // source, sink, transformation, predicate, converter, ...
	Version string `json:"version"`
}

// Plugins lists every installed plugin: connectors, transforms,
// predicates and converters.
func (c *Client) Plugins(ctx context.Context) ([]Plugin, error) {
	var ps []Plugin
	_, err := c.do(ctx, http.MethodGet, "/connector-plugins?connectorsOnly=false", nil, &ps)
	return ps, err
}

// TaskID names a task.
type TaskID struct {
	Connector string `json:"connector"`
	Task      int    `json:"task"`
}

// ConnectorInfo is a connector's configuration and tasks.
type ConnectorInfo struct {
	Name   string            `json:"name"`
	Config map[string]string `json:"config"`
	Tasks  []TaskID          `json:"tasks"`
	Type   string            `json:"type"` // source or sink; empty while unknown
}

// WorkerState is where a connector runs and in what state.
type WorkerState struct {
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty"` // the failure's stack trace when FAILED
}

// TaskState is where a task runs and in what state.
type TaskState struct {
	ID       int    `json:"id"`
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty"`
}

// ConnectorStatus is a connector's and its tasks' states.
type ConnectorStatus struct {
	Name      string      `json:"name"`
	Connector WorkerState `json:"connector"`
	Tasks     []TaskState `json:"tasks"`
	Type      string      `json:"type"`
}

// ConnectorView is a connector's configuration and status, as listed by
// Connectors.
type ConnectorView struct {
	Info   ConnectorInfo   `json:"info"`
	Status ConnectorStatus `json:"status"`
}

// Connectors lists every connector with its configuration and status in
// one request.
func (c *Client) Connectors(ctx context.Context) (map[string]ConnectorView, error) {
	m := map[string]ConnectorView{}
	_, err := c.do(ctx, http.MethodGet, listingPath, nil, &m)
	return m, err
}

// listingPath is Connectors' request, the one answer read up to
// MaxListingBytes.
const listingPath = "/connectors?expand=status&expand=info"

// Connector is one connector's configuration and tasks.
func (c *Client) Connector(ctx context.Context, name string) (ConnectorInfo, error) {
	var ci ConnectorInfo
	_, err := c.do(ctx, http.MethodGet, connectorPath(name), nil, &ci)
	return ci, err
}

// CreateOrUpdate creates the connector, or replaces its configuration;
// created says which happened.
func (c *Client) CreateOrUpdate(ctx context.Context, name string, config map[string]string) (info ConnectorInfo, created bool, err error) {
	status, err := c.do(ctx, http.MethodPut, connectorPath(name, "config"), config, &info)
	return info, status == http.StatusCreated, err
}

// Create creates a connector that starts in initialState (StateRunning,
// StatePaused or StateStopped; Kafka 3.7+): a connector created stopped
// can have its offsets set before it copies anything. A connector of that
// name already there is a conflict (IsConflict).
func (c *Client) Create(ctx context.Context, name string, config map[string]string, initialState string) (ConnectorInfo, error) {
	body := struct {
		Name         string            `json:"name"`
		Config       map[string]string `json:"config"`
		InitialState string            `json:"initial_state,omitempty"`
	}{name, config, initialState}
	var info ConnectorInfo
	_, err := c.do(ctx, http.MethodPost, "/connectors", body, &info)
	return info, err
}

// Delete removes the connector and its tasks; its offsets stay.
func (c *Client) Delete(ctx context.Context, name string) error {
	_, err := c.do(ctx, http.MethodDelete, connectorPath(name), nil, nil)
	return err
}

// Pause pauses the connector and its tasks; they keep their resources.
// Connect applies it asynchronously: poll Status for PAUSED.
func (c *Client) Pause(ctx context.Context, name string) error {
	_, err := c.do(ctx, http.MethodPut, connectorPath(name, "pause"), nil, nil)
	return err
}

// Resume resumes a paused or stopped connector.
func (c *Client) Resume(ctx context.Context, name string) error {
	_, err := c.do(ctx, http.MethodPut, connectorPath(name, "resume"), nil, nil)
	return err
}

// Stop stops the connector and shuts its tasks down; its offsets can then
// be altered or reset.
func (c *Client) Stop(ctx context.Context, name string) error {
	_, err := c.do(ctx, http.MethodPut, connectorPath(name, "stop"), nil, nil)
	return err
}

// Restart restarts the connector, with its tasks if includeTasks, only
// the failed ones if onlyFailed. The status Connect answers with (the
// instances it will restart, RESTARTING) is nil when it answers none.
func (c *Client) Restart(ctx context.Context, name string, includeTasks, onlyFailed bool) (*ConnectorStatus, error) {
	q := url.Values{}
	q.Set("includeTasks", strconv.FormatBool(includeTasks))
	q.Set("onlyFailed", strconv.FormatBool(onlyFailed))
	var st ConnectorStatus
	if _, err := c.do(ctx, http.MethodPost, connectorPath(name, "restart")+"?"+q.Encode(), nil, &st); err != nil {
		return nil, err
	}
	if st.Name == "" {
		return nil, nil
	}
	return &st, nil
}

// Status is the connector's and its tasks' states.
func (c *Client) Status(ctx context.Context, name string) (ConnectorStatus, error) {
	var st ConnectorStatus
	_, err := c.do(ctx, http.MethodGet, connectorPath(name, "status"), nil, &st)
	return st, err
}

// Offsets are a connector's committed offsets (KIP-875). Partition and
// offset are the connector's own maps; numbers are json.Number.
type Offsets struct {
	Offsets []Offset `json:"offsets"`
}

// Offset is one source partition's offset, or a sink's topic partition.
// A nil Offset in AlterOffsets removes the partition's offset.
type Offset struct {
	Partition map[string]any `json:"partition"`
	Offset    map[string]any `json:"offset"`
}

// MirrorSourceOffset is a MirrorSourceConnector's offset: the last copied
// record's offset in a source topic partition of the cluster with that
// alias; the copy goes on from the next.
func MirrorSourceOffset(sourceAlias, topic string, partition int32, offset int64) Offset {
	return Offset{
		Partition: map[string]any{"cluster": sourceAlias, "topic": topic, "partition": partition},
		Offset:    map[string]any{"offset": offset},
	}
}

// MirrorSourcePosition is a MirrorSourceConnector's offset read back.
type MirrorSourcePosition struct {
	Cluster   string
	Topic     string
	Partition int32
	Offset    int64
}

// MirrorSource reads o in MirrorSourceConnector's shape; it fails on any
// other shape.
func (o Offset) MirrorSource() (MirrorSourcePosition, error) {
	var p MirrorSourcePosition
	var ok bool
	if p.Cluster, ok = o.Partition["cluster"].(string); !ok {
		return p, fmt.Errorf("connect: offset partition %v has no cluster alias: not a MirrorSourceConnector offset", o.Partition)
	}
	if p.Topic, ok = o.Partition["topic"].(string); !ok {
		return p, fmt.Errorf("connect: offset partition %v has no topic: not a MirrorSourceConnector offset", o.Partition)
	}
	part, err := integer(o.Partition["partition"])
	if err != nil {
		return p, fmt.Errorf("connect: offset partition %v: partition: %w", o.Partition, err)
	}
	p.Partition = int32(part)
	if p.Offset, err = integer(o.Offset["offset"]); err != nil {
		return p, fmt.Errorf("connect: offset %v of %s-%d: %w", o.Offset, p.Topic, p.Partition, err)
	}
	return p, nil
}

func integer(v any) (int64, error) {
	switch n := v.(type) {
	case json.Number:
		return n.Int64()
	case int64:
		return n, nil
	case int32:
		return int64(n), nil
	case int:
		return int64(n), nil
	case float64:
		if n == float64(int64(n)) {
			return int64(n), nil
		}
	}
	return 0, fmt.Errorf("%v (%T) is not an integer", v, v)
}

// Offsets are the connector's committed offsets.
func (c *Client) Offsets(ctx context.Context, name string) (Offsets, error) {
	var o Offsets
	_, err := c.do(ctx, http.MethodGet, connectorPath(name, "offsets"), nil, &o)
	return o, err
}

// AlterOffsets sets (or, with a nil Offset, removes) the offsets of the
// given partitions; others keep theirs. The connector must be stopped
// (Stop) and is resumed with Resume. Connect's message is returned.
func (c *Client) AlterOffsets(ctx context.Context, name string, offsets []Offset) (string, error) {
	var m struct {
		Message string `json:"message"`
	}
	_, err := c.do(ctx, http.MethodPatch, connectorPath(name, "offsets"), Offsets{Offsets: offsets}, &m)
	return m.Message, err
}

// ResetOffsets removes every offset of a stopped connector: resumed, it
// starts as if new.
func (c *Client) ResetOffsets(ctx context.Context, name string) (string, error) {
	var m struct {
		Message string `json:"message"`
	}
	_, err := c.do(ctx, http.MethodDelete, connectorPath(name, "offsets"), nil, &m)
	return m.Message, err
}

// Validation is Connect's verdict on a connector configuration.
type Validation struct {
	Name       string            `json:"name"` // the plugin's class
	ErrorCount int               `json:"error_count"`
	Groups     []string          `json:"groups"`
	Configs    []ValidatedConfig `json:"configs"`
}

// ValidatedConfig is one setting: its definition and its checked value.
type ValidatedConfig struct {
	Definition ConfigDefinition `json:"definition"`
	Value      ConfigValue      `json:"value"`
}

// ConfigDefinition is how the plugin declares a setting.
type ConfigDefinition struct {
	Name          string  `json:"name"`
	Type          string  `json:"type"`
	Required      bool    `json:"required"`
	DefaultValue  *string `json:"default_value"`
	Importance    string  `json:"importance"`
	Documentation string  `json:"documentation"`
	Group         string  `json:"group"`
	DisplayName   string  `json:"display_name"`
}

// ConfigValue is a setting's value and what is wrong with it.
type ConfigValue struct {
	Name              string   `json:"name"`
	Value             *string  `json:"value"`
	RecommendedValues []string `json:"recommended_values"`
	Errors            []string `json:"errors"`
	Visible           bool     `json:"visible"`
}

// Errors are the settings with errors and their messages.
func (v Validation) Errors() map[string][]string {
	m := map[string][]string{}
	for _, c := range v.Configs {
		if len(c.Value.Errors) > 0 {
			m[c.Value.Name] = c.Value.Errors
		}
	}
	return m
}

// ValidateConfig asks the plugin (a connector class, full or simple name)
// to check a configuration without creating anything. An invalid
// configuration is not an error: see ErrorCount and Errors.
func (c *Client) ValidateConfig(ctx context.Context, class string, config map[string]string) (Validation, error) {
	var v Validation
	cfg := make(map[string]string, len(config)+1)
	for k, val := range config {
		cfg[k] = val
	}
	if _, ok := cfg["connector.class"]; !ok {
		cfg["connector.class"] = class
	}
	_, err := c.do(ctx, http.MethodPut, "/connector-plugins/"+url.PathEscape(class)+"/config/validate", cfg, &v)
	return v, err
}

// OverrideProbe is the producer setting OverridesRefused asks about.
const OverrideProbe = "producer.override.linger.ms"

// OverridesRefused asks whether the workers refuse per-connector client
// overrides (their connector.client.config.override.policy is not All):
// Connect validates a MirrorSourceConnector configuration that overrides
// one producer setting, creating nothing. It returns Connect's refusal, ""
// when overrides are allowed.
func (c *Client) OverridesRefused(ctx context.Context) (string, error) {
	v, err := c.ValidateConfig(ctx, MirrorSourceConnector, map[string]string{
		"name":                 "kmirror-override-probe",
		"source.cluster.alias": "source",
		"target.cluster.alias": "target",
		OverrideProbe:          "5",
	})
	if err != nil {
		return "", fmt.Errorf("ask Kafka Connect whether connectors may set client settings: %w", err)
	}
	errs := v.Errors()
	// Connect names the setting with its prefix; accept it bare too.
	msgs := slices.Concat(errs[OverrideProbe], errs[strings.TrimPrefix(OverrideProbe, "producer.override.")])
	return strings.Join(msgs, "; "), nil
}

// ExactlyOnceRefused asks whether the workers refuse exactly-once source
// connectors (KIP-618: their exactly.once.source.support is not enabled):
// Connect validates a MirrorSourceConnector configuration that requires
// exactly once (with the read_committed consumer MM2 needs for it),
// creating nothing. It returns Connect's refusal, "" when supported.
func (c *Client) ExactlyOnceRefused(ctx context.Context) (string, error) {
	v, err := c.ValidateConfig(ctx, MirrorSourceConnector, map[string]string{
		"name":                            "kmirror-exactly-once-probe",
		"source.cluster.alias":            "source",
		"target.cluster.alias":            "target",
		ExactlyOnceSupport:                "required",
		"source.consumer.isolation.level": "read_committed",
	})
	if err != nil {
		return "", fmt.Errorf("ask Kafka Connect whether it runs exactly-once source connectors: %w", err)
	}
	return strings.Join(v.Errors()[ExactlyOnceSupport], "; "), nil
}

// ExactlyOnceSupport is the source connector setting that asks for
// exactly-once delivery (KIP-618).
const ExactlyOnceSupport = "exactly.once.support"
