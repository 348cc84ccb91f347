package connectplan

import (
	"fmt"
	"strings"
)

// ShowSetting is how a setting read from outside kmirror (a connector's
// config, an imported mm2.properties) may appear in a message, a page or
// a log: key=value only when the key is a known setting whose value is no
// credential, else the key alone with "(value not shown)". An allow-list,
// not a deny-list: a setting nobody thought of (a vendor's login module
// option, a config provider's parameter) is hidden by default.
func ShowSetting(key, value string) string {
	if settingValueShown(key) {
		return fmt.Sprintf("%s=%q", key, value)
	}
	return key + " (value not shown)"
}

// clientPrefixes are where MM2 and Connect take client settings: the
// source and target clusters' clients, a connector's overrides, and
// dedicated MM2's per-cluster "<alias>." (checked by settingValueShown).
var clientPrefixes = []string{
	"source.cluster.", "target.cluster.",
	"source.consumer.", "target.consumer.", "source.producer.", "target.producer.", "source.admin.", "target.admin.",
	"consumer.override.", "producer.override.", "admin.override.",
	"consumer.", "producer.", "admin.",
}

// shownClient are Kafka client settings whose values are never
// credentials: addresses, the protocol and mechanism names, tuning, and
// store types and file locations (a path, not the store's password).
var shownClient = map[string]bool{
	"bootstrap.servers": true, "security.protocol": true, "sasl.mechanism": true, "client.id": true,
	"compression.type": true, "batch.size": true, "linger.ms": true, "acks": true, "max.request.size": true,
	"buffer.memory": true, "enable.idempotence": true, "retries": true, "retry.backoff.ms": true,
	"delivery.timeout.ms": true, "request.timeout.ms": true, "max.in.flight.requests.per.connection": true,
	"isolation.level": true, "auto.offset.reset": true, "fetch.min.bytes": true, "fetch.max.bytes": true,
	"fetch.max.wait.ms": true, "max.poll.records": true, "max.partition.fetch.bytes": true,
	"session.timeout.ms": true, "heartbeat.interval.ms": true, "metadata.max.age.ms": true,
	"connections.max.idle.ms": true, "receive.buffer.bytes": true, "send.buffer.bytes": true,
	"ssl.endpoint.identification.algorithm": true, "ssl.protocol": true, "ssl.enabled.protocols": true,
	"ssl.keystore.type": true, "ssl.truststore.type": true, "ssl.keystore.location": true, "ssl.truststore.location": true,
	"sasl.login.callback.handler.class": true, "default.api.timeout.ms": true,
}

// shownConnector are MirrorMaker 2's and Connect's own connector settings
// whose values are no credentials.
var shownConnector = map[string]bool{
	"name": true, "connector.class": true, "tasks.max": true, "enabled": true, "clusters": true,
	"source.cluster.alias": true, "target.cluster.alias": true,
	"topics": true, "topics.exclude": true, "topics.blacklist": true, "groups": true, "groups.exclude": true, "groups.blacklist": true,
	"topic.filter.class": true, "group.filter.class": true, "config.property.filter.class": true, "config.properties.exclude": true,
	"replication.policy.class": true, "replication.policy.separator": true, "replication.factor": true,
	"replication.policy.internal.topic.separator.enabled": true,
	"offset.lag.max": true, "offset-syncs.topic.location": true, "offset-syncs.topic.replication.factor": true,
	"checkpoints.topic.replication.factor": true, "heartbeats.topic.replication.factor": true,
	"emit.offset-syncs.enabled": true, "heartbeats.replication.enabled": true, "add.source.alias.to.metrics": true,
	"key.converter": true, "value.converter": true, "header.converter": true,
	"transforms": true, "predicates": true, "config.action.reload": true,
	"exactly.once.support": true, "transaction.boundary": true, "consumer.poll.timeout.ms": true, "admin.timeout.ms": true,
}

// shownConnectorFamilies are connector setting families whose values are
// flags, intervals and topic names.
var shownConnectorFamilies = []string{"refresh.", "emit.", "sync.topic.", "sync.group.", "errors."}

func settingValueShown(key string) bool {
	// Dedicated MM2: "A.bootstrap.servers", "A->B.topics".
	if alias, rest, ok := strings.Cut(key, "."); ok && !strings.Contains(alias, "_") && rest != "" && !isClientPrefixRoot(alias) {
		if shownConnector[rest] || familyShown(rest) || clientShown(rest) {
			return true
		}
	}
	return shownConnector[key] || familyShown(key) || clientShown(key)
}

// isClientPrefixRoot is whether s begins a prefix of clientPrefixes or a
// family, so "source.cluster.x" is not read as alias "source".
func isClientPrefixRoot(s string) bool {
	switch s {
	case "source", "target", "consumer", "producer", "admin", "refresh", "emit", "sync", "errors", "offset", "replication",
		"topics", "groups", "topic", "group", "config", "checkpoints", "heartbeats", "key", "value", "header", "transaction",
		"exactly", "add", "tasks", "connector":
		return true
	}
	return false
}

func familyShown(key string) bool {
	for _, p := range shownConnectorFamilies {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

func clientShown(key string) bool {
	if shownClient[key] {
		return true
	}
	for _, p := range clientPrefixes {
		if rest, ok := strings.CutPrefix(key, p); ok && shownClient[rest] {
			return true
		}
	}
	return false
}

// RedactedProperties is a pasted mm2.properties to show again, the value
// of every setting not on the allow-list of harmless settings
// (ShowSetting) taken out, continuation lines included: a page never
// echoes a secret back. removed says one was.
func RedactedProperties(text string) (string, bool) {
	lines := strings.Split(text, "\n")
	removed, blanking := false, false
	for i, line := range lines {
		if blanking { // a continuation line of a hidden value
			blanking = strings.HasSuffix(strings.TrimRight(line, "\r"), `\`)
			lines[i] = ""
			continue
		}
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || trimmed[0] == '#' || trimmed[0] == '!' {
			continue
		}
		sep := strings.IndexAny(trimmed, "=:")
		if sep < 0 {
			continue
		}
		key := strings.TrimSpace(trimmed[:sep])
		if settingValueShown(key) || strings.TrimSpace(trimmed[sep+1:]) == "" {
			continue
		}
		removed = true
		blanking = strings.HasSuffix(strings.TrimRight(line, "\r"), `\`)
		lines[i] = trimmed[:sep+1]
	}
	return strings.Join(lines, "\n"), removed
}
