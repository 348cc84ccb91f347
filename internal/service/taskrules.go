package service

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/policy"
	"github.com/kmirror/kmirror/internal/task"
	"github.com/kmirror/kmirror/internal/topicoverlap"
)

// Task limits (docs/TASKS.md, Task fields) and bounds that keep absurd values out of the store.
const (
	maxTaskTopics    = 20
	maxTopicMappings = 20
	// maxTaskParallelism bounds rules.tasks: every task of a flow is a worker
	// with its own Kafka connections, a bidirectional task doubles them, and
	// workers beyond the topics' partition count only sit idle.
	maxTaskParallelism = 64
	// maxReplicationFactor is Kafka's own limit (the protocol carries it as a
	// 16-bit number); the target's broker count, checked at create time, is
	// the real bound.
	maxReplicationFactor = math.MaxInt16
	maxTopicNameLength   = 249 // Kafka's limit
	// An exactly-once transaction's interval: a commit costs a round trip
	// to the coordinator and a marker per partition, so far below 100 ms
	// the commits are the work; past a minute readers with read_committed
	// wait that long, and a crash copies that much again.
	minTransactionIntervalMs = 100
	maxTransactionIntervalMs = 60000
	maxTopicsRegexLength     = 1000
)

var (
	taskNameRE  = regexp.MustCompile(`^[A-Za-z0-9_-]{4,64}$`)
	aliasRE     = regexp.MustCompile(`^[A-Za-z0-9_-]{1,20}$`)
	topicNameRE = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)
)

var compressions = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// trimmed is strings.TrimSpace for the task's string enums.
func trimmed[S ~string](s S) S { return S(strings.TrimSpace(string(s))) }

// NormalizeTask trims what users paste with stray spaces, drops empty list
// entries and rows (the console sends blank ones), and fills the defaults the
// console shows (type, start offset earliest, compression none, protocol
// PLAINTEXT for a peer by address; tasks and replication factor take theirs
// when decoded, so that an explicit 0 is refused, not replaced). It never
// changes a password, and never turns add_source_header on: JSON cannot tell
// an explicit false from a missing field, so the bidirectional default is the
// console's to pre-check, and ValidateTask refuses a bidirectional task with
// neither rename nor header. It is idempotent.
func NormalizeTask(t task.Task) task.Task {
	ts := strings.TrimSpace
	t.Name = ts(t.Name)
	t.Type = ts(t.Type)
	t.Current.Cluster = ts(t.Current.Cluster)
	t.Current.Alias = ts(t.Current.Alias)

	p := &t.Peer
	p.Alias = ts(p.Alias)
	p.ConfigType = trimmed(p.ConfigType)
	p.Cluster = ts(p.Cluster)
	// A peer's address and authentication take a registered cluster's
	// normalization, without its default protocol (filled below for a
	// peer by address only).
	ns := NormalizeCluster(p.Settings())
	ns.SecurityProtocol = ts(p.SecurityProtocol)
	*p = p.WithSettings(ns)
	if p.ConfigType == "" {
		// Infer only when unambiguous; with both or neither given the
		// validator asks.
		switch {
		case p.Cluster != "" && len(p.Address) == 0:
			p.ConfigType = task.PeerByCluster
		case p.Cluster == "" && len(p.Address) > 0:
			p.ConfigType = task.PeerByAddress
		}
	}
	if p.ConfigType == task.PeerByAddress && p.SecurityProtocol == "" {
		p.SecurityProtocol = cluster.Plaintext
	}

	r := &t.Rules
	r.Direction = trimmed(r.Direction)
	r.Topics = trimList(r.Topics)
	// Topic names hold no spaces, so surrounding blanks are never meant.
	r.TopicsRegex = ts(r.TopicsRegex)
	r.StartOffset = trimmed(r.StartOffset)
	r.Compression = ts(r.Compression)
	r.Delivery = trimmed(r.Delivery)
	if r.Delivery == task.DeliveryAtLeastOnce {
		// The default, stored as left out: a task's JSON (and so a
		// duplicate's comparison) does not depend on how it was asked.
		r.Delivery = ""
	}
	var maps []task.Mapping
	for _, m := range r.TopicMappings {
		m.Source, m.Target = ts(m.Source), ts(m.Target)
		if m.Source != "" || m.Target != "" {
			maps = append(maps, m)
		}
	}
	r.TopicMappings = maps
	// Not WithDefaults: a 0 tasks or replication factor here was sent
	// explicitly (decoding fills omitted numbers), and is the validator's to
	// refuse, not to replace.
	if t.Type == "" {
		t.Type = task.TypeKafkaReplication
	}
	if r.StartOffset == "" {
		r.StartOffset = task.StartEarliest
	}
	if r.Compression == "" {
		r.Compression = "none"
	}
	return t
}

func trimList(in []string) []string {
	var out []string
	for _, s := range in {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// ValidateTask returns every rule of docs/TASKS.md, Task fields, that t breaks on its own; none
// means t may be stored as far as t alone goes (CheckAgainstTasks covers the
// rules involving other tasks, the store whether clusters exist and the
// target's broker count). t should be normalized first. It is pure and never
// panics. Problems about one topic mapping use the path
// rules.topic_mappings[i].source|target, i counting rows of the normalized
// task (blank rows dropped).
func ValidateTask(t task.Task) Problems {
	var p Problems
	switch {
	case t.Name == "":
		p.Add("name", "name is required")
	case !taskNameRE.MatchString(t.Name):
		p.Add("name", "name must be 4 to 64 characters of A-Z, a-z, 0-9, - and _")
	}
	switch t.Type {
	case task.TypeKafkaReplication:
	case "":
		p.Add("type", "type is required: use kafka-replication")
	default:
		p.Add("type", "type must be kafka-replication (Kafka data replication, the only preset type for now)")
	}

	switch {
	case t.Current.Cluster == "":
		p.Add("current.cluster", "current cluster is required: the name of a registered cluster")
	case !clusterNameRE.MatchString(t.Current.Cluster):
		p.Add("current.cluster", "current cluster must be the name of a registered cluster (1 to 64 characters of A-Z, a-z, 0-9, - and _)")
	}
	checkAlias(&p, "current.alias", "current alias", t.Current.Alias)
	checkAlias(&p, "peer.alias", "peer alias", t.Peer.Alias)
	if t.Peer.Alias != "" && t.Peer.Alias == t.Current.Alias {
		p.Add("peer.alias", "peer alias must differ from the current alias %q: aliases tell the two sides apart in topic names and source headers", t.Current.Alias)
	}
	validatePeer(&p, t)
	validateRules(&p, t)
	return p
}

func checkAlias(p *Problems, field, what, alias string) {
	switch {
	case alias == "":
		p.Add(field, "%s is required", what)
	case !aliasRE.MatchString(alias):
		p.Add(field, "%s must be 1 to 20 characters of A-Z, a-z, 0-9, - and _", what)
	}
}

// peerField maps a ValidateCluster field to the task's: the same name
// under peer., except the bootstrap servers, which a peer calls its address.
func peerField(clusterField string) string {
	if clusterField == "bootstrap_servers" {
		return "peer.address"
	}
	return "peer." + clusterField
}

// isConnectionField says whether a task field is needed to connect to its
// clusters (what a connectivity check needs sound).
func isConnectionField(field string) bool {
	switch field {
	case "current.cluster", "peer.config_type", "peer.cluster", "peer.address":
		return true
	case "peer.alias":
		return false
	}
	return strings.HasPrefix(field, "peer.")
}

func validatePeer(p *Problems, t task.Task) {
	peer := t.Peer
	switch peer.ConfigType {
	case task.PeerByAddress:
		if len(peer.Address) == 0 {
			p.Add("peer.address", "peer config type address needs the peer's bootstrap servers: one or more host:port, for example 10.0.0.5:9092")
		}
		if peer.Cluster != "" {
			p.Add("peer.cluster", "a peer given by address takes no cluster name: clear it, or choose config type cluster")
		}
		if peer.Password == task.PasswordMask {
			// An exported task masks its password; imported again as it is,
			// the mask would become the credential.
			p.Add("peer.password", "the password is masked (%s) as exported: give the peer's real password", task.PasswordMask)
		}
		// The same rules as a registered cluster, so a peer that works by
		// address also works once registered.
		asCluster := peer.Settings()
		asCluster.Name = "peer" // a valid name: the alias has its own rules
		for _, pr := range ValidateCluster(asCluster) {
			field := peerField(pr.Field)
			if pr.Field == "name" || (field == "peer.address" && len(peer.Address) == 0) {
				continue
			}
			p.Add(field, "peer: %s", pr.Message)
		}
	case task.PeerByCluster:
		switch {
		case peer.Cluster == "":
			p.Add("peer.cluster", "peer config type cluster needs the name of a registered cluster")
		case !clusterNameRE.MatchString(peer.Cluster):
			p.Add("peer.cluster", "peer cluster must be the name of a registered cluster (1 to 64 characters of A-Z, a-z, 0-9, - and _)")
		case peer.Cluster == t.Current.Cluster:
			p.Add("peer.cluster", "peer cluster must be another cluster than the current cluster %q: replicating a cluster into itself copies records forever", t.Current.Cluster)
		}
		// Refuse rather than ignore: the registered cluster's own address and
		// authentication are used, and the user may think these apply.
		if len(peer.Address) > 0 {
			p.Add("peer.address", "a peer given by cluster name uses that cluster's bootstrap servers: clear the address, or choose config type address")
		}
		for _, f := range []struct{ field, what, v string }{
			{"peer.security_protocol", "security protocol", peer.SecurityProtocol},
			{"peer.sasl_mechanism", "SASL mechanism", peer.SASLMechanism},
			{"peer.username", "username", peer.Username},
			{"peer.password", "password", peer.Password},
			{"peer.ca_pem", "CA certificate", peer.CAPEM},
			{"peer.client_cert_pem", "client certificate", peer.ClientCertPEM},
			{"peer.client_key_pem", "client key", peer.ClientKeyPEM},
			{"peer.client_key_password", "client key password", peer.ClientKeyPassword},
			{"peer.oauth", "OAuth settings", boolText(peer.OAuth != cluster.OAuth{})},
		} {
			if f.v != "" {
				p.Add(f.field, "a peer given by cluster name uses that cluster's own authentication: clear the %s, or choose config type address", f.what)
			}
		}
	case "":
		p.Add("peer.config_type", "peer config type is required: address (bootstrap servers given here) or cluster (a registered cluster)")
	default:
		p.Add("peer.config_type", "peer config type must be address (bootstrap servers given here) or cluster (a registered cluster)")
	}
}

func boolText(b bool) string {
	if b {
		return "set"
	}
	return ""
}

func validateRules(p *Problems, t task.Task) {
	r := t.Rules
	switch r.Direction {
	case task.DirectionPull, task.DirectionPush, task.DirectionBidirectional:
	case "":
		p.Add("rules.direction", "direction is required: pull (peer to current), push (current to peer) or bidirectional")
	default:
		p.Add("rules.direction", "direction must be pull (peer to current), push (current to peer) or bidirectional")
	}

	// Aliases of the clusters this task copies to: a topic named
	// "<alias>.x" came from that cluster and is never copied back to it.
	// Renaming prefixes topics with the alias each flow copies from.
	var targets, prefixes []string
	for _, f := range t.Flows() {
		targets = append(targets, f.TargetAlias)
		if r.RenameTopics {
			prefixes = append(prefixes, f.SourceAlias)
		}
	}

	var re *regexp.Regexp
	switch {
	case len(r.Topics) == 0 && r.TopicsRegex == "":
		p.Add("rules.topics", "choose the topics to replicate: a list of 1 to %d topic names, or a regular expression in topics_regex", maxTaskTopics)
	case len(r.Topics) > 0 && r.TopicsRegex != "":
		p.Add("rules.topics_regex", "give either a topic list or a regular expression, not both")
	case r.TopicsRegex != "":
		var msg string
		if re, msg = compileTopicsRegex(r.TopicsRegex); msg != "" {
			p.Add("rules.topics_regex", "%s", msg)
		} else if w, decided := regexWitness(r.TopicsRegex); decided && w == "" {
			p.Add("rules.topics_regex", "topics_regex matches no topic kmirror would replicate: topics ending in internal or starting with __, mm2- or kmirror- are never replicated")
		}
	default:
		if len(r.Topics) > maxTaskTopics {
			p.Add("rules.topics", "at most %d topics may be listed (%d given): use topics_regex to select more", maxTaskTopics, len(r.Topics))
		}
		seen := map[string]bool{}
		for _, tp := range r.Topics {
			switch msg := checkTopicName(tp); {
			case msg != "":
				p.Add("rules.topics", "%s", msg)
			case seen[tp]:
				p.Add("rules.topics", "topic %q is listed twice", tp)
			case policy.IsInternal(tp):
				p.Add("rules.topics", "%s", internalMsg(tp))
			default:
				checkCameFrom(p, "rules.topics", tp, targets)
				for _, a := range prefixes {
					if len(a)+1+len(tp) > maxTopicNameLength {
						p.Add("rules.topics", "topic %q renamed to %q would be longer than Kafka's %d characters: shorten it or turn rename topics off", tp, a+"."+shorten(tp), maxTopicNameLength)
						break
					}
				}
			}
			seen[tp] = true
		}
	}

	if r.Tasks < 1 {
		p.Add("rules.tasks", "tasks must be at least 1 (the default is %d)", task.DefaultTasks)
	} else if r.Tasks > maxTaskParallelism {
		p.Add("rules.tasks", "tasks must be at most %d: each task is a worker with its own Kafka connections (twice for bidirectional), and more tasks than partitions only sit idle", maxTaskParallelism)
	}
	if r.Direction == task.DirectionBidirectional && !r.RenameTopics && !r.AddSourceHeader {
		p.Add("rules.add_source_header", "a bidirectional task needs add source header or rename topics on: without either, records would be copied back and forth forever")
	}
	if r.ReplicationFactor < 1 && r.ReplicationFactor != task.DefaultReplicationFactor {
		p.Add("rules.replication_factor", "replication factor must be at least 1, or left out (-1) for the target cluster's default.replication.factor")
	} else if r.ReplicationFactor > maxReplicationFactor {
		p.Add("rules.replication_factor", "replication factor must be at most %d (Kafka's limit), and no more than the target cluster's broker count", maxReplicationFactor)
	}
	switch r.StartOffset {
	case task.StartEarliest, task.StartLatest:
	default:
		p.Add("rules.start_offset", "start offset must be earliest (oldest data first) or latest (only new data)")
	}
	if !contains(compressions, r.Compression) {
		p.Add("rules.compression", "compression must be none, gzip, snappy, lz4 or zstd")
	}
	switch r.OffsetSyncsAt {
	case "", task.OffsetSyncsAtSource, task.OffsetSyncsAtTarget:
	default:
		p.Add("rules.offset_syncs_at", "offset syncs at must be source or target (each flow's; as MirrorMaker 2's offset-syncs.topic.location), or left out for kmirror's layout (the current cluster)")
	}
	switch r.OnTargetTopicReplaced {
	case "", task.TargetReplacedRecopy, task.TargetReplacedContinue:
	default:
		p.Add("rules.on_target_topic_replaced", "on target topic replaced must be recopy (copy the topic again from the source, the default) or continue (go on from the progress; what the old topic held stays lost)")
	}
	switch r.Delivery {
	case "", task.DeliveryAtLeastOnce, task.DeliveryExactlyOnce:
	default:
		p.Add("rules.delivery", "delivery must be at_least_once (the default) or exactly_once (transactions on the target; its readers must use isolation.level=read_committed)")
	}
	switch {
	case r.TransactionIntervalMs == 0:
	case !r.ExactlyOnce():
		p.Add("rules.transaction_interval_ms", "transaction interval applies to exactly_once delivery only: leave it out, or set delivery to exactly_once")
	case r.TransactionIntervalMs < minTransactionIntervalMs || r.TransactionIntervalMs > maxTransactionIntervalMs:
		p.Add("rules.transaction_interval_ms", "transaction interval must be between %d and %d ms (the default is 1000): shorter commits too often, longer holds records from read_committed readers", minTransactionIntervalMs, maxTransactionIntervalMs)
	}
	validateMappings(p, t, re, targets)
}

func validateMappings(p *Problems, t task.Task, re *regexp.Regexp, targets []string) {
	r := t.Rules
	if len(r.TopicMappings) == 0 {
		return
	}
	if r.RenameTopics {
		p.Add("rules.rename_topics", "rename topics and topic mappings cannot be combined: turn rename topics off or remove the mappings")
	}
	if len(r.TopicMappings) > maxTopicMappings {
		p.Add("rules.topic_mappings", "at most %d topic mappings (%d given)", maxTopicMappings, len(r.TopicMappings))
	}
	// Target names of listed topics that no mapping renames: a mapping onto
	// one of them would mix two source topics in one target topic.
	mappedSrc := map[string]bool{}
	for _, m := range r.TopicMappings {
		mappedSrc[m.Source] = true
	}
	identity := map[string]bool{}
	for _, tp := range r.Topics {
		if !mappedSrc[tp] {
			identity[tp] = true
		}
	}
	sources := map[string]int{}
	targetsSeen := map[string]int{}
	collide := map[string]int{} // Kafka refuses topics differing only in '.' vs '_'
	for i, m := range r.TopicMappings {
		sf := fmt.Sprintf("rules.topic_mappings[%d].source", i)
		tf := fmt.Sprintf("rules.topic_mappings[%d].target", i)
		n := i + 1
		switch {
		case m.Source == "":
			p.Add(sf, "mapping %d needs a source topic", n)
		case checkTopicName(m.Source) != "":
			p.Add(sf, "%s", checkTopicName(m.Source))
		case policy.IsInternal(m.Source):
			p.Add(sf, "%s", internalMsg(m.Source))
		default:
			if j, dup := sources[m.Source]; dup {
				p.Add(sf, "source topic %q is already mapped by mapping %d: map each source topic once", m.Source, j+1)
			}
			sources[m.Source] = i
			// A mapping only names the target of a selected topic; it does
			// not select one (the original product: mappings customise target names).
			switch {
			case len(r.Topics) > 0 && r.TopicsRegex == "":
				if !contains(r.Topics, m.Source) {
					p.Add(sf, "source topic %q is not among the selected topics: add it to the topic list, or remove the mapping", m.Source)
				}
			case re != nil:
				if !re.MatchString(m.Source) {
					p.Add(sf, "source topic %q does not match topics_regex, so it is never replicated: fix the regex or remove the mapping", m.Source)
				}
			}
			checkCameFrom(p, sf, m.Source, targets)
		}
		switch {
		case m.Target == "":
			p.Add(tf, "mapping %d needs a target topic", n)
		case checkTopicName(m.Target) != "":
			p.Add(tf, "%s", checkTopicName(m.Target))
		case policy.IsInternal(m.Target):
			p.Add(tf, "target topic %q is an internal topic name (ending in internal, or starting with __, mm2- or kmirror-): choose another name", m.Target)
		default:
			key := strings.ReplaceAll(m.Target, ".", "_")
			if j, dup := targetsSeen[m.Target]; dup {
				p.Add(tf, "target topic %q is already the target of mapping %d: two source topics would mix in one target topic", m.Target, j+1)
			} else if j, dup := collide[key]; dup {
				p.Add(tf, "target topic %q collides with %q of mapping %d: Kafka does not allow topic names that differ only in '.' and '_'", m.Target, r.TopicMappings[j].Target, j+1)
			} else if identity[m.Target] && m.Target != m.Source {
				p.Add(tf, "target topic %q is also where listed topic %q is copied to: two source topics would mix in one target topic", m.Target, m.Target)
			}
			targetsSeen[m.Target] = i
			collide[key] = i
		}
	}
}

// checkCameFrom refuses a topic that the flows to targets would skip because
// its name says it came from there, so the user is not left wondering.
func checkCameFrom(p *Problems, field, topic string, targets []string) {
	for _, a := range targets {
		if a != "" && strings.HasPrefix(topic, a+".") {
			p.Add(field, "topic %q starts with %q: it was replicated from the cluster with alias %q and is never copied back to it", topic, a+".", a)
			return
		}
	}
}

// checkTopicName explains what makes name an invalid Kafka topic name, or
// returns "".
func checkTopicName(name string) string {
	switch {
	case name == "." || name == "..":
		return fmt.Sprintf("%q is not a valid Kafka topic name", name)
	case len(name) > maxTopicNameLength:
		return fmt.Sprintf("topic %q is longer than Kafka's %d characters", shorten(name), maxTopicNameLength)
	case !topicNameRE.MatchString(name):
		return fmt.Sprintf("topic %s is not a valid Kafka topic name: use 1 to %d characters of a-z, A-Z, 0-9, '.', '_' and '-'", strconv.QuoteToASCII(shorten(name)), maxTopicNameLength)
	}
	return ""
}

func internalMsg(topic string) string {
	if policy.IsHeartbeats(topic) {
		return fmt.Sprintf("topic %q is a heartbeats topic: every flow replicates heartbeats topics by itself, renamed as MirrorMaker 2 does, so a task does not name them", topic)
	}
	return fmt.Sprintf("topic %q is internal (its name ends in internal, or starts with __, mm2- or kmirror-): internal topics are never replicated", topic)
}

// shorten keeps messages readable when a user pastes something huge.
func shorten(s string) string {
	if len(s) <= 40 {
		return s
	}
	r := []rune(s)
	if len(r) <= 40 {
		return s
	}
	return string(r[:37]) + "..."
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }

// compileTopicsRegex compiles the regex as the replicator does (anchored:
// the whole topic name must match) or explains what is wrong in words.
func compileTopicsRegex(s string) (*regexp.Regexp, string) {
	if len(s) > maxTopicsRegexLength {
		return nil, fmt.Sprintf("topics_regex is longer than %d characters: use a topic list, or a shorter pattern", maxTopicsRegexLength)
	}
	re, err := policy.CompileTopicRegex(s)
	if err != nil {
		return nil, explainRegexError(s, err)
	}
	return re, ""
}

var backrefRE = regexp.MustCompile(`\\[1-9]`)

func explainRegexError(s string, err error) string {
	const rt = "kmirror uses Go's RE2 syntax"
	switch {
	case strings.Contains(s, "(?=") || strings.Contains(s, "(?!") || strings.Contains(s, "(?<=") || strings.Contains(s, "(?<!"):
		return "topics_regex uses lookahead or lookbehind ((?=, (?!, (?<=, (?<!), which is not supported: " + rt + "; list the topics or write the pattern without it"
	case backrefRE.MatchString(s):
		return "topics_regex uses a backreference (\\1), which is not supported: " + rt
	case strings.Contains(s, "(?>") || strings.Contains(s, "*+") || strings.Contains(s, "++") || strings.Contains(s, "?+"):
		return "topics_regex uses an atomic group or possessive quantifier, which is not supported: " + rt
	}
	return "topics_regex is not a valid regular expression (" + rt + "): " + err.Error()
}

// regexWitness finds a topic the regex selects that is not internal.
func regexWitness(regex string) (string, bool) {
	budget := topicoverlap.SearchLimit
	return topicoverlap.Find([]string{regex}, topicoverlap.Exclude{}, func(x string) bool { return checkTopicName(x) == "" && !policy.IsInternal(x) }, &budget)
}
