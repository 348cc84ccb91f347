package connectplan

// Adoption is Build in reverse: MirrorMaker 2 connectors someone deployed
// on a Connect cluster by hand, read back as the kmirror task that does
// the same copy. Every setting is mapped, accepted as kmirror's own
// behaviour, or a problem naming the setting and why: none is silently
// dropped (docs/CONNECT.md, "Adopting MirrorMaker 2 connectors").

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/policy"
	"github.com/kmirror/kmirror/internal/task"
)

// Registered is a registered Kafka cluster as adoption matches it: by its
// bootstrap servers.
type Registered struct {
	Name             string
	BootstrapServers []string
}

// MM2Flow is one MirrorSourceConnector and the checkpoint and heartbeat
// connectors of the same source -> target aliases on a Connect cluster:
// what one adopted task replaces.
type MM2Flow struct {
	SourceAlias string `json:"source_alias"`
	TargetAlias string `json:"target_alias"`
	// Source is the MirrorSourceConnector's name; "" when the pair has
	// only checkpoint or heartbeat connectors (not adoptable).
	Source     string `json:"source_connector"`
	Checkpoint string `json:"checkpoint_connector,omitempty"`
	Heartbeat  string `json:"heartbeat_connector,omitempty"`
}

// Connectors are the flow's connector names, source first.
func (f MM2Flow) Connectors() []string {
	var out []string
	for _, n := range []string{f.Source, f.Checkpoint, f.Heartbeat} {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

// IsKmirrors says whether a connector name is one kmirror deploys
// (kmirror.<task>.<A>-<B>.<role>): those are tasks already.
func IsKmirrors(name string) bool {
	if !strings.HasPrefix(name, task.GroupPrefix) {
		return false
	}
	for _, role := range []string{RoleSource, RoleCheckpoint, RoleHeartbeat} {
		if strings.HasSuffix(name, "."+role) {
			return true
		}
	}
	return false
}

// GroupMM2 groups the MirrorMaker 2 connectors among configs (by name) that
// kmirror did not create into flows, one per MirrorSourceConnector, ordered
// by aliases and name. The checkpoint and heartbeat connectors of a pair
// with no source connector make a flow with Source "".
func GroupMM2(configs map[string]map[string]string) []MM2Flow {
	type pair struct{ src, dst string }
	sources := map[pair][]string{}
	checkpoints, heartbeats := map[pair]string{}, map[pair]string{}
	names := make([]string, 0, len(configs))
	for n := range configs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := configs[n]
		if IsKmirrors(n) {
			continue
		}
		p := pair{c["source.cluster.alias"], c["target.cluster.alias"]}
		switch c["connector.class"] {
		case connect.MirrorSourceConnector:
			sources[p] = append(sources[p], n)
		case connect.MirrorCheckpointConnector:
			if _, ok := checkpoints[p]; !ok {
				checkpoints[p] = n
			}
		case connect.MirrorHeartbeatConnector:
			if _, ok := heartbeats[p]; !ok {
				heartbeats[p] = n
			}
		}
	}
	var out []MM2Flow
	seen := map[pair]bool{}
	add := func(p pair, src string) {
		seen[p] = true
		out = append(out, MM2Flow{SourceAlias: p.src, TargetAlias: p.dst, Source: src, Checkpoint: checkpoints[p], Heartbeat: heartbeats[p]})
	}
	for p, srcs := range sources {
		for _, s := range srcs {
			add(p, s)
		}
	}
	for _, m := range []map[pair]string{checkpoints, heartbeats} {
		for p := range m {
			if !seen[p] {
				add(p, "")
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.SourceAlias != b.SourceAlias {
			return a.SourceAlias < b.SourceAlias
		}
		if a.TargetAlias != b.TargetAlias {
			return a.TargetAlias < b.TargetAlias
		}
		return a.Source < b.Source
	})
	return out
}

// AdoptInput is what Adopt reads: the flow, every connector's config by
// name, the registered clusters, and the adopted task's name, current
// instance ("" picks the target's registered cluster, else the source's)
// and engine.
type AdoptInput struct {
	Flow     MM2Flow
	Configs  map[string]map[string]string
	Clusters []Registered
	Name     string
	Current  string
	Engine   string
}

// MM2 defaults (MirrorSourceConfig, DefaultTopicFilter) for what a
// connector leaves unset.
const (
	mm2DefaultTopics            = ".*"
	mm2DefaultReplicationFactor = 2
	mm2DefaultSeparator         = "."
	mm2DefaultGroupsExclude     = "console-consumer-.*,connect-.*,__.*"
	mm2DefaultOffsetLagMax      = 100
)

// acceptedExcludes are topics.exclude values adoption keeps kmirror's own
// filter for: MM2's defaults (current and pre-3.0 blacklist) and what
// kmirror deployed before its filter came from the policy; the flow's own
// (topicsExclude) is accepted too. They leave out internal topics, as
// policy.IsInternal does, and MM2's also names ending in ".replica", which
// kmirror copies when selected (docs/CONNECT.md says so).
var acceptedExcludes = map[string]bool{
	"":                                  true,
	`mm2.*\.internal,.*\.replica,__.*`:  true,
	`.*[\-\.]internal,.*\.replica,__.*`: true,
	`.*internal,__.*,mm2-.*,kmirror-.*,.*\.replica`: true,
	`mm2.*\.internal, .*\.replica, __.*`:            true,
}

// Adopt is the task that continues in.Flow's copy. The problems (nil when
// none) name the MM2 setting, as "<setting>", and why it does not map;
// the task is still filled as far as it maps, for showing.
func Adopt(in AdoptInput) (task.Task, task.FieldErrors) {
	var probs task.FieldErrors
	problem := func(setting, format string, a ...any) {
		probs = append(probs, task.FieldError{Field: setting, Message: fmt.Sprintf(format, a...)})
	}
	f := in.Flow
	t := task.Task{Name: in.Name, Type: task.TypeKafkaReplication, Engine: in.Engine}
	if f.Source == "" {
		problem("connector.class", "MM2 connectors %s copy %s -> %s without a MirrorSourceConnector: nothing to adopt (delete them, or deploy the source connector)", strings.Join(f.Connectors(), ", "), f.SourceAlias, f.TargetAlias)
		return t, probs
	}
	src := in.Configs[f.Source]
	known := map[string]bool{}
	get := func(c map[string]string, key string) string {
		known[key] = true
		return strings.TrimSpace(c[key])
	}

	// Clusters and direction.
	sourceCluster, sp := matchCluster(get(src, "source.cluster.bootstrap.servers"), in.Clusters)
	targetCluster, tp := matchCluster(get(src, "target.cluster.bootstrap.servers"), in.Clusters)
	if sp != "" {
		problem("source.cluster.bootstrap.servers", "%s", sp)
	}
	if tp != "" {
		problem("target.cluster.bootstrap.servers", "%s", tp)
	}
	current := in.Current
	if current == "" {
		current = targetCluster
		if current == "" {
			current = sourceCluster
		}
	}
	var peerBootstrap, peerSecurity string
	switch {
	case current != "" && current == sourceCluster:
		t.Rules.Direction = task.DirectionPush
		t.Current = task.Current{Cluster: current, Alias: f.SourceAlias}
		t.Peer = task.Peer{Alias: f.TargetAlias, ConfigType: task.PeerByCluster, Cluster: targetCluster}
		peerBootstrap, peerSecurity = src["target.cluster.bootstrap.servers"], "target.cluster.security.protocol"
	case current != "" && current == targetCluster:
		t.Rules.Direction = task.DirectionPull
		t.Current = task.Current{Cluster: current, Alias: f.TargetAlias}
		t.Peer = task.Peer{Alias: f.SourceAlias, ConfigType: task.PeerByCluster, Cluster: sourceCluster}
		peerBootstrap, peerSecurity = src["source.cluster.bootstrap.servers"], "source.cluster.security.protocol"
	case in.Current != "":
		problem("current", "instance %q is neither side of %s -> %s (source %s, target %s): name the registered instance of one side, or register it with these bootstrap servers", in.Current, f.SourceAlias, f.TargetAlias, orNone(sourceCluster), orNone(targetCluster))
	default:
		problem("current", "neither side of %s -> %s is a registered instance: register one of them (with the bootstrap servers MM2 uses) first", f.SourceAlias, f.TargetAlias)
	}
	if t.Rules.Direction != "" && t.Peer.Cluster == "" {
		// The other side by address: plain connections, and TLS whose
		// certificates are inline PEM in the config; SASL credentials
		// may be references kmirror cannot read.
		t.Peer = task.Peer{Alias: t.Peer.Alias, ConfigType: task.PeerByAddress, Address: splitList(peerBootstrap), SecurityProtocol: cluster.Plaintext}
		side := strings.TrimSuffix(peerSecurity, "security.protocol")
		switch sec := strings.ToUpper(strings.TrimSpace(src[peerSecurity])); sec {
		case "", cluster.Plaintext:
		case cluster.SSL:
			t.Peer.SecurityProtocol = cluster.SSL
			adoptInlineTLS(&t.Peer, src, side, problem)
		default:
			problem(peerSecurity, "the peer at %s connects with %s, and its credentials cannot be read from the connector (they may be references): register that cluster as an instance first, so it is matched by its bootstrap servers", peerBootstrap, sec)
		}
	}

	// What is copied.
	topics, tp2 := ParseTopics(get(src, "topics"))
	if tp2 != "" {
		problem("topics", "%s", tp2)
	}
	t.Rules.Topics, t.Rules.TopicsRegex = topics.Names, topics.Regex
	for _, key := range []string{"topics.exclude", "topics.blacklist"} {
		if v := get(src, key); !acceptedExcludes[v] && v != topicsExclude(f.TargetAlias) {
			problem(key, "%s=%q leaves out other topics than MM2's default (internal topics): kmirror always leaves out internal topics and nothing else; narrow topics to what should be copied and remove %s", key, v, key)
		}
	}
	switch v := get(src, "topic.filter.class"); v {
	case "", "org.apache.kafka.connect.mirror.DefaultTopicFilter":
	default:
		problem("topic.filter.class", "custom topic filter %s: kmirror selects topics by name or regex only", v)
	}

	// How.
	t.Rules.Tasks = 1 // MM2's default tasks.max
	if v := get(src, "tasks.max"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			problem("tasks.max", "%q is not a positive number", v)
		} else {
			t.Rules.Tasks = n
		}
	}
	switch v := get(src, "replication.policy.class"); v {
	case "", renamePolicy:
		t.Rules.RenameTopics = true
		if sep := get(src, "replication.policy.separator"); sep != "" && sep != mm2DefaultSeparator {
			problem("replication.policy.separator", "separator %q: kmirror names renamed topics <alias>.<topic> only", sep)
		}
	case identityPolicy:
	default:
		problem("replication.policy.class", "replication policy %s is not one kmirror knows (DefaultReplicationPolicy renames topics, IdentityReplicationPolicy keeps names): its target topic names cannot be reproduced", v)
	}
	known["replication.policy.separator"] = true
	t.Rules.ReplicationFactor = mm2DefaultReplicationFactor
	if v := get(src, "replication.factor"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || (n < 1 && n != -1) {
			problem("replication.factor", "%q is not a replication factor (a positive number or -1)", v)
		} else {
			t.Rules.ReplicationFactor = n
		}
	}
	t.Rules.StartOffset = task.StartEarliest
	switch v := strings.ToLower(get(src, "source.consumer.auto.offset.reset")); v {
	case "", "earliest":
	case "latest":
		t.Rules.StartOffset = task.StartLatest
	default:
		problem("source.consumer.auto.offset.reset", "%q: kmirror starts partitions without progress at earliest or latest only", v)
	}
	t.Rules.Compression = "none"
	if v := get(src, "producer.override.compression.type"); v != "" {
		t.Rules.Compression = strings.ToLower(v)
	}

	// Consumer offsets.
	// The other connectors repeat the source's settings (as Build writes
	// them): those are read already; a different value is a problem.
	asSource := func(c map[string]string, read map[string]bool) map[string]bool {
		for k, v := range c {
			if known[k] && v == src[k] {
				read[k] = true
			}
		}
		return read
	}
	if f.Checkpoint != "" {
		cp := in.Configs[f.Checkpoint]
		cknown := map[string]bool{}
		cget := func(key string) string { cknown[key] = true; return strings.TrimSpace(cp[key]) }
		emit := cget("emit.checkpoints.enabled") != "false" // MM2's default: true
		sync := cget("sync.group.offsets.enabled") == "true"
		switch {
		case sync && emit:
			t.Rules.SyncConsumerOffsets = true
		case emit:
			problem("sync.group.offsets.enabled", "checkpoint connector %s emits checkpoints without committing them to the target's groups; kmirror's consumer-offset sync does both: set sync.group.offsets.enabled=true on it first, or delete it to adopt without offset sync", f.Checkpoint)
		case sync:
			problem("emit.checkpoints.enabled", "checkpoint connector %s syncs group offsets without emitting checkpoints; kmirror's consumer-offset sync does both: set emit.checkpoints.enabled=true on it first, or delete it to adopt without offset sync", f.Checkpoint)
		}
		if v := cget("groups"); v != "" && v != ".*" {
			problem("groups", "checkpoint connector %s syncs groups %q only; kmirror syncs every group but its own and tools': remove groups from it first, or delete it to adopt without offset sync", f.Checkpoint, v)
		}
		if v := cget("groups.exclude"); v != "" && v != mm2DefaultGroupsExclude && v != groupsExclude {
			problem("groups.exclude", "checkpoint connector %s leaves out groups %q; kmirror leaves out its own and tools' groups only: remove groups.exclude from it first, or delete it to adopt without offset sync", f.Checkpoint, v)
		}
		probs = append(probs, unmapped(f.Checkpoint, cp, asSource(cp, cknown))...)
	}
	if f.Heartbeat != "" {
		probs = append(probs, unmapped(f.Heartbeat, in.Configs[f.Heartbeat], asSource(in.Configs[f.Heartbeat], map[string]bool{}))...)
	}
	probs = append(probs, unmapped(f.Source, src, known)...)
	// Settings kmirror's connectors do not carry, which would change what
	// the adopted copy does.
	if strings.EqualFold(strings.TrimSpace(src["sync.topic.configs.enabled"]), "false") {
		problem("sync.topic.configs.enabled", "connector %s leaves the target topics' configurations alone; kmirror keeps them in step with the source's, as MirrorMaker 2 does by default, so adopting would start changing them: remove sync.topic.configs.enabled=false from it first if that is wanted, or keep running MM2", f.Source)
	}
	heartbeats := src["emit.heartbeats.enabled"]
	if f.Heartbeat != "" {
		heartbeats = in.Configs[f.Heartbeat]["emit.heartbeats.enabled"]
	}
	if strings.EqualFold(strings.TrimSpace(heartbeats), "false") {
		problem("emit.heartbeats.enabled", "MirrorMaker 2 emits no heartbeats for %s -> %s; kmirror's task always does (MM2's default), so adopting would start writing the heartbeats topic on the target: remove emit.heartbeats.enabled=false first if that is wanted, or keep running MM2", f.SourceAlias, f.TargetAlias)
	}
	if v := strings.TrimSpace(src["offset.lag.max"]); v != "" && in.Engine != task.EngineEmbedded {
		// The embedded engine translates exactly whatever this says; MM2
		// on Connect writes a sync every offset.lag.max records (its
		// default 100), the precision of its translation.
		if n, err := strconv.Atoi(v); err == nil && n < mm2DefaultOffsetLagMax {
			problem("offset.lag.max", "connector %s writes an offset sync every %d records; kmirror's connectors keep MirrorMaker 2's default (%d), so groups would translate less precisely on Kafka Connect: adopt onto the embedded engine (exact translation), or remove offset.lag.max from it first", f.Source, n, mm2DefaultOffsetLagMax)
		}
	}
	// Offset syncs stay where MM2 kept them: anywhere else MM2 (then
	// kmirror's) would start a new topic, and the groups of partitions
	// with no new record would not translate until new syncs came.
	if at, err := mm2SyncsAt(src); err != nil {
		problem("offset-syncs.topic.location", "%s", err.Error())
	} else if t.Rules.SyncConsumerOffsets && t.Rules.Direction != "" {
		if flows := t.Flows(); len(flows) == 1 && location(flows[0]) != at {
			t.Rules.OffsetSyncsAt = at
		}
	}
	return t, probs
}

// mm2SyncsAt is where an MM2 source connector keeps its offset syncs
// (offset-syncs.topic.location, MM2's default source).
func mm2SyncsAt(src map[string]string) (string, error) {
	switch at := strings.ToLower(strings.TrimSpace(src["offset-syncs.topic.location"])); at {
	case "":
		return task.OffsetSyncsAtSource, nil
	case task.OffsetSyncsAtSource, task.OffsetSyncsAtTarget:
		return at, nil
	default:
		return "", fmt.Errorf("%q is not a location MirrorMaker 2 knows: source or target", at)
	}
}

// adoptInlineTLS reads a TLS peer's CA and client certificate from the
// connector's config (side is "source.cluster." or "target.cluster."):
// only inline PEM maps (ssl.truststore.type / ssl.keystore.type PEM); a
// keystore or truststore file lives on the workers, where kmirror cannot
// read it, and a config-provider reference is not the value.
func adoptInlineTLS(p *task.Peer, c map[string]string, side string, problem func(field, format string, a ...any)) {
	get := func(k string) string { return strings.TrimSpace(c[side+k]) }
	for _, k := range []string{"ssl.keystore.location", "ssl.truststore.location"} {
		if get(k) != "" {
			problem(side+k, "the peer's TLS material is a file on the workers (%s), which kmirror cannot read: give it inline as PEM (ssl.keystore.type=PEM with ssl.keystore.certificate.chain and ssl.keystore.key; ssl.truststore.type=PEM with ssl.truststore.certificates), or register that cluster as an instance first", get(k))
		}
	}
	inline := func(typeKey string, keys ...string) (map[string]string, bool) {
		if get(typeKey) == "" {
			return nil, false
		}
		if !strings.EqualFold(get(typeKey), "PEM") {
			problem(side+typeKey, "%s=%s: only PEM given inline maps", typeKey, get(typeKey))
			return nil, false
		}
		out := map[string]string{}
		for _, k := range keys {
			v := get(k)
			if strings.HasPrefix(v, "${") {
				problem(side+k, "%s is a config-provider reference, which only the workers can resolve: give the value, or register that cluster as an instance first", k)
				return nil, false
			}
			out[k] = v
		}
		return out, true
	}
	if v, ok := inline("ssl.truststore.type", "ssl.truststore.certificates"); ok {
		p.CAPEM = v["ssl.truststore.certificates"]
	}
	if v, ok := inline("ssl.keystore.type", "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.key.password"); ok {
		p.ClientCertPEM, p.ClientKeyPEM, p.ClientKeyPassword = v["ssl.keystore.certificate.chain"], v["ssl.keystore.key"], v["ssl.key.password"]
	}
}

// unmapped checks the settings Adopt did not read: the ones kmirror sets
// its own way are fine, any other is a problem.
func unmapped(connector string, c map[string]string, read map[string]bool) task.FieldErrors {
	var out task.FieldErrors
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if read[k] {
			continue
		}
		if msg := settingVerdict(k, c[k]); msg != "" {
			out = append(out, task.FieldError{Field: k, Message: fmt.Sprintf("connector %s: %s", connector, msg)})
		}
	}
	return out
}

// keptOwn are settings kmirror sets itself for the same copy (Build), so
// an adopted connector's value for them does not change what is copied.
var keptOwn = map[string]bool{
	"name": true, "connector.class": true, "source.cluster.alias": true, "target.cluster.alias": true,
	"source.cluster.bootstrap.servers": true, "target.cluster.bootstrap.servers": true,
	"tasks.max": true, "sync.topic.acls.enabled": true, "sync.topic.configs.enabled": true,
	"emit.offset-syncs.enabled": true, "offset-syncs.topic.location": true,
	"source.consumer.isolation.level": true, "consumer.override.isolation.level": true,
	"producer.override.bootstrap.servers": true, "config.action.reload": true,
	"errors.log.enable": true, "errors.log.include.messages": true, "offset.lag.max": true,
	// kmirror's own producer tuning (ProducerTuning) takes their place:
	// batching changes the speed, not what is copied.
	"producer.override.batch.size": true, "producer.override.linger.ms": true,
	// kmirror's own request cap (MaxRequestBytes) takes its place.
	"producer.override.max.request.size": true,
}

// keptOwnPrefixes: client security and connection settings (kmirror uses
// the registered clusters' own), refresh intervals and internal topics'
// replication factors.
var keptOwnPrefixes = []string{
	"source.cluster.security.", "target.cluster.security.", "source.cluster.sasl.", "target.cluster.sasl.",
	"source.cluster.ssl.", "target.cluster.ssl.", "producer.override.security.", "producer.override.sasl.",
	"producer.override.ssl.", "refresh.", "emit.checkpoints.", "sync.group.offsets.",
	"checkpoints.topic.", "heartbeats.topic.", "offset-syncs.topic.", "admin.timeout.", "emit.heartbeats.",
}

var byteConverters = map[string]bool{"key.converter": true, "value.converter": true, "header.converter": true}

// settingVerdict is "" for a setting kmirror reproduces its own way, else
// why adopting would change the copy.
func settingVerdict(key, value string) string {
	if keptOwn[key] {
		return ""
	}
	for _, p := range keptOwnPrefixes {
		if strings.HasPrefix(key, p) {
			return ""
		}
	}
	switch {
	case byteConverters[key]:
		if value == byteArrayConverter {
			return ""
		}
		return fmt.Sprintf("%s=%s changes the bytes MM2 wrote; kmirror copies keys, values and headers byte for byte (ByteArrayConverter), so the target would hold records in two formats: keep running MM2, or adopt into a new target", key, value)
	case key == "transforms" || strings.HasPrefix(key, "transforms."):
		if strings.TrimSpace(value) == "" && key == "transforms" {
			return ""
		}
		return "transforms change records on the way; kmirror copies them unchanged: remove the transforms first, or keep running MM2"
	case key == "predicates" || strings.HasPrefix(key, "predicates."):
		if strings.TrimSpace(value) == "" && key == "predicates" {
			return ""
		}
		return "predicates decide which transforms apply; kmirror applies none: remove them first"
	}
	// A viewer reads this message: the value only for a known harmless key.
	return fmt.Sprintf("%s has no kmirror equivalent, so the adopted task would not honour it: remove it from the connector first, or keep running MM2", ShowSetting(key, value))
}

// matchCluster is the registered cluster whose bootstrap servers are the
// same set as list ("" when none), or a problem: none given, or several
// match.
func matchCluster(list string, clusters []Registered) (string, string) {
	want := addrSet(splitList(list))
	if len(want) == 0 {
		return "", "not set: MM2 needs both clusters' bootstrap servers"
	}
	var exact, overlap []string
	for _, c := range clusters {
		have := addrSet(c.BootstrapServers)
		shared := 0
		for a := range want {
			if have[a] {
				shared++
			}
		}
		switch {
		case shared == len(want) && shared == len(have):
			exact = append(exact, c.Name)
		case shared > 0:
			overlap = append(overlap, c.Name)
		}
	}
	switch {
	case len(exact) == 1:
		return exact[0], ""
	case len(exact) > 1:
		return "", fmt.Sprintf("%s match registered instances %s alike: keep one of them", list, strings.Join(exact, ", "))
	case len(overlap) == 1:
		return overlap[0], ""
	case len(overlap) > 1:
		return "", fmt.Sprintf("%s share brokers with registered instances %s: give the instances' bootstrap servers exactly as MM2 lists them", list, strings.Join(overlap, ", "))
	}
	return "", ""
}

func addrSet(list []string) map[string]bool {
	m := map[string]bool{}
	for _, a := range list {
		if a = strings.ToLower(strings.TrimSpace(a)); a != "" {
			m[a] = true
		}
	}
	return m
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "not registered"
	}
	return s
}

// Topics is MM2's topics setting read as a task's: Names when every entry
// is a literal topic name (dots escaped, as Build writes them), else one
// Regex matching what MM2's list does.
type Topics struct {
	Names []string
	Regex string
}

// literalEntry is a topic name with its dots escaped: [a-zA-Z0-9_-] and
// "\.".
var literalEntry = regexp.MustCompile(`^(?:[a-zA-Z0-9_-]|\\\.)+$`)

// ParseTopics reads MM2's topics list: comma-separated Java regexes, each
// matching a whole topic name, blanks around entries ignored (an unset
// list is MM2's default, every topic). The problem is "" or why the list
// cannot be a kmirror task's.
func ParseTopics(v string) (Topics, string) {
	entries := splitList(v)
	if strings.TrimSpace(v) == "" {
		entries = []string{mm2DefaultTopics}
	}
	if len(entries) == 0 {
		return Topics{}, "no topic: the list holds only commas"
	}
	names := make([]string, 0, len(entries))
	literal := true
	for _, e := range entries {
		if !literalEntry.MatchString(e) {
			literal = false
			break
		}
		names = append(names, strings.ReplaceAll(e, `\.`, "."))
	}
	if literal {
		return Topics{Names: dedupeNames(names)}, ""
	}
	// MM2 joins the entries with | and matches the whole name.
	re := strings.Join(entries, "|")
	if err := javaCompatible(re); err != nil {
		return Topics{Regex: re}, err.Error()
	}
	if _, err := policy.CompileTopicRegex(re); err != nil {
		return Topics{Regex: re}, fmt.Sprintf("%q is Java regex syntax kmirror (Go) does not read: %v; rewrite it without it", re, err)
	}
	return Topics{Regex: re}, ""
}

func dedupeNames(names []string) []string {
	seen := map[string]bool{}
	out := names[:0]
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// Reverse is the flow among flows that copies the other way (source and
// target aliases swapped) with a source connector, or false.
func Reverse(f MM2Flow, flows []MM2Flow) (MM2Flow, bool) {
	for _, o := range flows {
		if o.Source != "" && o.SourceAlias == f.TargetAlias && o.TargetAlias == f.SourceAlias {
			return o, true
		}
	}
	return MM2Flow{}, false
}

// AdoptPair is the bidirectional task that continues in.Flow's copy and
// reverse's, its mirror image (MM2 run both ways between two clusters).
// Each flow is adopted as Adopt adopts it, and both must describe one
// task: the same two clusters, swapped, and the same rules, since a
// bidirectional task copies both ways alike. A difference is a problem on
// the setting, naming both connectors; each direction can still be adopted
// as its own task.
func AdoptPair(in AdoptInput, reverse MM2Flow) (task.Task, task.FieldErrors) {
	fwd, probs := Adopt(in)
	rin := in
	rin.Flow = reverse
	if rin.Current == "" {
		rin.Current = fwd.Current.Cluster // one side for both: the one chosen for in.Flow
	}
	rev, rprobs := Adopt(rin)
	for _, p := range rprobs {
		if !strings.HasPrefix(p.Message, "connector ") {
			p.Message = fmt.Sprintf("%s -> %s (connector %s): %s", reverse.SourceAlias, reverse.TargetAlias, reverse.Source, p.Message)
		}
		probs = append(probs, p)
	}
	t := fwd
	t.Rules.Direction = task.DirectionBidirectional
	if fwd.Rules.Direction == "" || rev.Rules.Direction == "" {
		return t, probs // the sides are not known: said above
	}
	both := fmt.Sprintf("%s copies %s -> %s and %s copies %s -> %s", in.Flow.Source, in.Flow.SourceAlias, in.Flow.TargetAlias,
		reverse.Source, reverse.SourceAlias, reverse.TargetAlias)
	if !reflect.DeepEqual(fwd.Current, rev.Current) || !reflect.DeepEqual(fwd.Peer, rev.Peer) {
		probs = append(probs, task.FieldError{Field: "target.cluster.bootstrap.servers", Message: fmt.Sprintf(
			"%s, but not between the same two clusters (%s and %s against %s and %s): give both connectors the same two clusters' bootstrap servers, or adopt each as its own task",
			both, fwd.Current.Cluster, peerName(fwd.Peer), rev.Current.Cluster, peerName(rev.Peer))})
	}
	// Where both halves keep their syncs, if alike: kmirror's layout for a
	// bidirectional task is each flow's source.
	fat, ferr := mm2SyncsAt(in.Configs[in.Flow.Source])
	rat, rerr := mm2SyncsAt(in.Configs[reverse.Source])
	t.Rules.OffsetSyncsAt = ""
	switch {
	case ferr != nil || rerr != nil || !fwd.Rules.SyncConsumerOffsets:
	case fat != rat:
		probs = append(probs, task.FieldError{Field: "offset-syncs.topic.location", Message: fmt.Sprintf(
			"%s, with their offset syncs at the %s and at the %s: a bidirectional task keeps both at the same side; make them equal on the connectors first, or adopt each as its own task", both, fat, rat)})
	case fat != task.OffsetSyncsAtSource:
		t.Rules.OffsetSyncsAt = fat
	}
	a, b := fwd.Rules, rev.Rules
	for _, d := range []struct {
		setting     string
		same        bool
		mine, other any
	}{
		{"topics", slices.Equal(a.Topics, b.Topics) && a.TopicsRegex == b.TopicsRegex, topicsOf(a), topicsOf(b)},
		{"tasks.max", a.Tasks == b.Tasks, a.Tasks, b.Tasks},
		{"replication.policy.class", a.RenameTopics == b.RenameTopics, policyOf(a), policyOf(b)},
		{"replication.factor", a.ReplicationFactor == b.ReplicationFactor, a.ReplicationFactor, b.ReplicationFactor},
		{"source.consumer.auto.offset.reset", a.StartOffset == b.StartOffset, a.StartOffset, b.StartOffset},
		{"producer.override.compression.type", a.Compression == b.Compression, a.Compression, b.Compression},
		{"sync.group.offsets.enabled", a.SyncConsumerOffsets == b.SyncConsumerOffsets, a.SyncConsumerOffsets, b.SyncConsumerOffsets},
	} {
		if !d.same {
			probs = append(probs, task.FieldError{Field: d.setting, Message: fmt.Sprintf(
				"%s, with %s %v and %v: a bidirectional task copies both ways alike; make them equal on the connectors first, or adopt each as its own task",
				both, d.setting, d.mine, d.other)})
		}
	}
	return t, probs
}

func peerName(p task.Peer) string {
	if p.ConfigType == task.PeerByCluster {
		return p.Cluster
	}
	return strings.Join(p.Address, ",")
}

func topicsOf(r task.Rules) string {
	if r.TopicsRegex != "" {
		return r.TopicsRegex
	}
	return strings.Join(r.Topics, ",")
}

func policyOf(r task.Rules) string {
	if r.RenameTopics {
		return "DefaultReplicationPolicy"
	}
	return "IdentityReplicationPolicy"
}
