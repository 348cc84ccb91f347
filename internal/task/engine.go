package task

import (
	"fmt"
	"strings"
)

// Engines a task can run on. The in-process engine is the default; a task
// on Kafka Connect runs as MirrorMaker 2 connectors on a registered Connect
// cluster (docs/CONNECT.md).
const (
	EngineEmbedded      = "embedded"
	EngineConnectPrefix = "connect:"
)

// ConnectEngine is the engine value for the Connect cluster name.
func ConnectEngine(name string) string { return EngineConnectPrefix + name }

// ConnectCluster names the Connect cluster the task runs on; ok is false for
// the in-process engine. It does not validate: see ParseEngine.
func (t Task) ConnectCluster() (name string, ok bool) {
	return strings.CutPrefix(t.Engine, EngineConnectPrefix)
}

// ParseEngine checks an engine value and returns the Connect cluster it
// names ("" for the in-process engine). The message says the rule, for the
// "engine" field.
func ParseEngine(v string) (connectCluster string, err error) {
	switch {
	case v == "" || v == EngineEmbedded:
		return "", nil
	case strings.HasPrefix(v, EngineConnectPrefix):
		name := strings.TrimPrefix(v, EngineConnectPrefix)
		if strings.TrimSpace(name) == "" {
			return "", fmt.Errorf(`"connect:" needs the name of a registered Kafka Connect cluster after it, e.g. "connect:west-connect"`)
		}
		return name, nil
	default:
		return "", fmt.Errorf(`must be "embedded" (the in-process engine, the default) or "connect:<name>" (a registered Kafka Connect cluster), not %q`, v)
	}
}

// EngineOrDefault is the task's engine as shown: "embedded" when it names
// none (tasks created before engines could be chosen).
func (t Task) EngineOrDefault() string {
	if t.Engine == "" {
		return EngineEmbedded
	}
	return t.Engine
}

// FieldError is an option an engine cannot honour: the field (as the API
// names it, e.g. "rules.topic_mappings") and why.
type FieldError struct {
	Field, Message string
}

// FieldErrors is what an engine says about a task it cannot run as
// configured, one entry per option.
type FieldErrors []FieldError

func (fe FieldErrors) Error() string {
	msgs := make([]string, len(fe))
	for i, e := range fe {
		msgs[i] = e.Field + ": " + e.Message
	}
	return strings.Join(msgs, "; ")
}
