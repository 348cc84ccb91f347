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
	"refresh.topics.enabled": true, "refresh.topics.interval.seconds": true, "refresh.groups.enabled": true, "refresh.groups.interval.seconds": true,
	"emit.heartbeats.enabled": true, "emit.heartbeats.interval.seconds": true, "emit.checkpoints.enabled": true, "emit.checkpoints.interval.seconds": true,
	"sync.topic.configs.enabled": true, "sync.topic.configs.interval.seconds": true, "sync.topic.acls.enabled": true, "sync.topic.acls.interval.seconds": true,
	"sync.group.offsets.enabled": true, "sync.group.offsets.interval.seconds": true,
	"errors.tolerance": true, "errors.log.enable": true, "errors.log.include.messages": true, "errors.retry.timeout": true,
	"errors.retry.delay.max.ms": true, "errors.deadletterqueue.topic.name": true,
}

// settingValueShown is the allow-list: exact keys only, so a key merely
// starting like a harmless one ("emit.secret") stays hidden. A dedicated
// MM2's "A." or "A->B." before a listed key is allowed: whatever the
// first segment is, the rest is a listed harmless key.
func settingValueShown(key string) bool {
	if shownConnector[key] || clientShown(key) {
		return true
	}
	_, rest, ok := strings.Cut(key, ".")
	return ok && (shownConnector[rest] || clientShown(rest))
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
// echoes a secret back. A line whose key cannot be read is blanked. The
// key ends as java.util.Properties ends it: at the first unescaped '=',
// ':' or white space. removed says a value was taken out.
func RedactedProperties(text string) (string, bool) {
	lines := strings.Split(text, "\n")
	removed, blanking := false, false
	for i, line := range lines {
		if blanking { // a continuation line of a hidden value
			blanking = continues(line)
			lines[i] = ""
			continue
		}
		trimmed := strings.TrimLeft(line, " \t\f")
		if strings.TrimSpace(trimmed) == "" || trimmed[0] == '#' || trimmed[0] == '!' {
			continue
		}
		key, value := splitProperty(trimmed)
		if key == "" || (!settingValueShown(key) && strings.TrimSpace(value) != "") {
			removed = true
			blanking = continues(line)
			lines[i] = key + " ="
			if key == "" {
				lines[i] = ""
			}
		}
	}
	return strings.Join(lines, "\n"), removed
}

// continues says a properties line goes on on the next one: it ends in an
// odd number of backslashes.
func continues(line string) bool {
	line = strings.TrimRight(line, "\r")
	n := len(line) - len(strings.TrimRight(line, `\`))
	return n%2 == 1
}

// splitProperty splits a properties line (leading white space gone) into
// its key, unescaped, and the rest after the separator.
func splitProperty(line string) (key, value string) {
	var k strings.Builder
	i := 0
	for ; i < len(line); i++ {
		c := line[i]
		if c == '\\' && i+1 < len(line) {
			i++
			k.WriteByte(line[i])
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			break
		}
		k.WriteByte(c)
	}
	rest := strings.TrimLeft(line[i:], " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	return k.String(), rest
}
