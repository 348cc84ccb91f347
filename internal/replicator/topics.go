package replicator

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/policy"
)

// Source topic configs never copied, as MM2's default config filter: they
// are about the source cluster's operation, not the data.
var configsNotCopied = map[string]bool{
	"follower.replication.throttled.replicas": true,
	"leader.replication.throttled.replicas":   true,
	"message.timestamp.difference.max.ms":     true,
	"message.timestamp.type":                  true,
	"unclean.leader.election.enable":          true,
	"min.insync.replicas":                     true,
}

// defaultMaxMessageBytes is Kafka's default max.message.bytes, used when the
// target does not say.
const defaultMaxMessageBytes = 1048588

// planner discovers the flow's topics and makes the target match the source:
// topics created, partitions added, topic-level configs synced.
type planner struct {
	flow     Flow
	src, dst sarama.Client
	srcAdmin sarama.ClusterAdmin
	dstAdmin sarama.ClusterAdmin
	log      *slog.Logger
	// applied remembers the source config values last set on each target
	// topic, so only source changes are applied and settings made only on
	// the target survive.
	applied map[string]map[string]string
	// targetIDs are the target topics' ids seen so far (Replicator's).
	targetIDs map[string]string
}

// plan is the result of one planning round.
type plan struct {
	Topics     []policy.Pair
	Partitions []Partition
	Conflicts  []string
	// Unavailable says, per topic, why its copy waits this round (its
	// target topic could not be created).
	Unavailable []string
	// Gone are target topics deleted under the copy: left out of this
	// round, so the workers writing to them stop before the next round
	// creates them again (a produce retried into the new topic would put
	// records ahead of the copy that makes it whole).
	Gone []string
}

func (p *planner) run() (plan, error) {
	srcTrouble, err := refreshAll(p.src)
	if err != nil {
		return plan{}, fmt.Errorf("read source topics: %w", err)
	}
	if _, err := refreshAll(p.dst); err != nil {
		return plan{}, fmt.Errorf("read target topics: %w", err)
	}
	srcTopics, err := p.src.Topics()
	if err != nil {
		return plan{}, fmt.Errorf("list source topics: %w", err)
	}
	pairs, conflicts := p.flow.Policy.Select(srcTopics)
	out := plan{Topics: pairs, Conflicts: conflicts}
	// A source topic the brokers answered about with an error (a partition
	// without a leader, a topic being created or denied) is reported; its
	// partitions that could be read are planned and wait alone for the rest.
	for _, e := range srcTrouble {
		if errors.Is(e, sarama.ErrLeaderNotAvailable) {
			// Its partitions are planned; those without a leader wait
			// alone in their worker and show once they waited long
			// enough, so a leader election of seconds does not flap.
			continue
		}
		msg := fmt.Sprintf("source metadata: %v (the flow's other topics go on)", e)
		out.Unavailable = append(out.Unavailable, msg)
		p.log.Warn("source topic metadata incomplete", "error", e)
	}
	if len(pairs) == 0 {
		return out, nil
	}
	srcConfigs, err := topicConfigs(p.srcAdmin, sources(pairs), true)
	if err != nil {
		return plan{}, fmt.Errorf("describe source topic configs: %w", err)
	}
	dstTopics, err := p.dst.Topics()
	if err != nil {
		return plan{}, fmt.Errorf("list target topics: %w", err)
	}
	existing := make(map[string]bool, len(dstTopics))
	for _, t := range dstTopics {
		existing[t] = true
	}
	// A target topic that cannot be created (no rights, a policy of the
	// target, a name it refuses) stops only its own copy: it is tried again
	// every round, with its reason in the status, while the rest go on.
	var missing []newTopic
	gone := map[string]bool{}
	for _, pair := range pairs {
		if existing[pair.Target] {
			continue
		}
		if id := p.targetIDs[pair.Target]; id != "" {
			gone[pair.Target] = true
			delete(p.targetIDs, pair.Target)
			out.Gone = append(out.Gone, pair.Target)
			p.log.Warn("target topic deleted under the copy; its copy stops and the topic is created again at the next round", "topic", pair.Target, "topic_id", id)
			continue
		}
		parts, err := p.src.Partitions(pair.Source)
		if err != nil {
			return plan{}, fmt.Errorf("partitions of source topic %s: %w", pair.Source, err)
		}
		missing = append(missing, newTopic{pair, int32(len(parts)), srcConfigs[pair.Source]})
	}
	// All in one request: the broker answers once they are all created,
	// where one request a topic waited for each in turn (50 topics, 10 s).
	createErrs := p.createAll(missing)
	p.awaitLeaders(missing, createErrs)
	ready := pairs[:0:0]
	for _, pair := range pairs {
		if gone[pair.Target] {
			continue
		}
		if !existing[pair.Target] {
			if err := createErrs[pair.Target]; err != nil {
				out.Unavailable = append(out.Unavailable, fmt.Sprintf("%s: %v (tried again at every topic refresh; the flow's other topics go on)", pair.Source, err))
				p.log.Warn("target topic not created; its copy waits", "topic", pair.Target, "error", err)
				continue
			}
			ready = append(ready, pair)
			continue
		}
		ready = append(ready, pair)
		parts, err := p.src.Partitions(pair.Source)
		if err != nil {
			return plan{}, fmt.Errorf("partitions of source topic %s: %w", pair.Source, err)
		}
		n := int32(len(parts))
		tparts, err := p.dst.Partitions(pair.Target)
		if err != nil {
			return plan{}, fmt.Errorf("partitions of target topic %s: %w", pair.Target, err)
		}
		if int32(len(tparts)) < n {
			p.log.Info("adding partitions to target topic", "topic", pair.Target, "from", len(tparts), "to", n)
			if err := p.dstAdmin.CreatePartitions(pair.Target, n, nil, false); err != nil && !errors.Is(err, sarama.ErrInvalidPartitions) {
				return plan{}, fmt.Errorf("add partitions to target topic %s (%d -> %d): %w", pair.Target, len(tparts), n, err)
			}
		}
	}
	pairs = ready
	if len(pairs) == 0 {
		return out, nil
	}
	if err := p.dst.RefreshMetadata(targets(pairs)...); err != nil && !onlyTopicTrouble(err) {
		return plan{}, fmt.Errorf("refresh target topics: %w", err)
	}
	dstConfigs, err := topicConfigs(p.dstAdmin, targets(pairs), false)
	if err != nil {
		return plan{}, fmt.Errorf("describe target topic configs: %w", err)
	}
	ids, err := topicIDs(p.src, sources(pairs))
	if err != nil {
		return plan{}, fmt.Errorf("read source topic ids: %w", err)
	}
	tids, err := topicIDs(p.dst, targets(pairs))
	if err != nil {
		return plan{}, fmt.Errorf("read target topic ids: %w", err)
	}
	for _, pair := range pairs {
		id := tids[pair.Target]
		if known := p.targetIDs[pair.Target]; known != "" && id != "" && known != id {
			p.log.Warn("target topic created again under the copy", "topic", pair.Target, "topic_id", id, "was", known)
		}
		if id != "" {
			p.targetIDs[pair.Target] = id
		}
	}
	for _, pair := range pairs {
		p.syncConfigs(pair, srcConfigs[pair.Source], dstConfigs[pair.Target])
		maxBytes := defaultMaxMessageBytes
		if v, err := strconv.Atoi(dstConfigs[pair.Target]["max.message.bytes"]); err == nil && v > 0 {
			maxBytes = v
		}
		parts, err := p.src.Partitions(pair.Source)
		if err != nil {
			return plan{}, fmt.Errorf("partitions of source topic %s: %w", pair.Source, err)
		}
		for _, id := range parts {
			out.Partitions = append(out.Partitions, Partition{Source: pair.Source, Target: pair.Target, Partition: id, MaxBytes: maxBytes,
				TopicID: ids[pair.Source], TargetTopicID: tids[pair.Target]})
		}
	}
	return out, nil
}

// refreshAll reads every topic's metadata. When the brokers answered but
// some topics came with errors of their own (no leader for a partition,
// unknown yet, not authorized), sarama keeps what it could read and reports
// the topics together; those come back as trouble and the refresh counts as
// done, so one topic's trouble never stops a whole planning round. Any other
// failure (no broker reachable) is err.
func refreshAll(c sarama.Client) (trouble []error, err error) {
	err = c.RefreshMetadata()
	if err == nil {
		return nil, nil
	}
	if !onlyTopicTrouble(err) {
		return nil, err
	}
	var multi interface{ Unwrap() []error }
	errors.As(err, &multi)
	return multi.Unwrap(), nil
}

// onlyTopicTrouble reports whether a metadata refresh error is only the
// brokers' answers about single topics (each a Kafka error code).
func onlyTopicTrouble(err error) bool {
	var multi interface{ Unwrap() []error }
	if !errors.As(err, &multi) {
		return false
	}
	errs := multi.Unwrap()
	for _, e := range errs {
		var kerr sarama.KError
		if !errors.As(e, &kerr) {
			return false
		}
	}
	return len(errs) > 0
}

// newTopic is a target topic to create: its pair, the source's partition
// count and its source topic-level configs.
type newTopic struct {
	pair       policy.Pair
	partitions int32
	configs    map[string]string
}

// createAll creates the target topics in as few CreateTopics requests as
// the target's controller takes (sarama's admin sends one a topic) and
// returns each topic's error, nil when it was created or exists. A topic
// refused (rights, a policy, a name) fails alone.
func (p *planner) createAll(todo []newTopic) map[string]error {
	errs := make(map[string]error, len(todo))
	for _, batch := range createBatches(todo) {
		p.createBatch(batch, errs)
	}
	if p.applied == nil {
		p.applied = map[string]map[string]string{}
	}
	for _, t := range todo {
		if errs[t.pair.Target] == nil {
			p.applied[t.pair.Target] = t.configs
		}
	}
	return errs
}

// createRecords bounds the metadata records one CreateTopics request makes
// the target's controller write: a KRaft controller refuses a request over
// 10,000 as a whole ("Unable to perform excessively large batch
// operation", POLICY_VIOLATION), so 500 topics of 20 partitions asked at
// once were never created and their copy waited for ever. Half of it,
// for margin.
const createRecords = 5000

// createBatches splits todo into requests of at most createRecords
// records each (a topic's: one for the topic, one a partition, one a
// config); a topic larger than that goes alone, as the controller's
// answer for it alone is the one to show.
func createBatches(todo []newTopic) [][]newTopic {
	var batches [][]newTopic
	var cur []newTopic
	n := 0
	for _, t := range todo {
		r := 1 + int(t.partitions) + len(t.configs)
		if len(cur) > 0 && n+r > createRecords {
			batches = append(batches, cur)
			cur, n = nil, 0
		}
		cur = append(cur, t)
		n += r
	}
	if len(cur) > 0 {
		batches = append(batches, cur)
	}
	return batches
}

// createBatch creates todo's topics in one CreateTopics request, setting
// each topic's error in errs.
func (p *planner) createBatch(todo []newTopic, errs map[string]error) {
	// A task without a replication factor leaves it to the target's
	// default.replication.factor: -1 asks the broker to apply it.
	rf := p.flow.ReplicationFactor
	if rf < 1 {
		rf = -1
	}
	details := make(map[string]*sarama.TopicDetail, len(todo))
	for _, t := range todo {
		entries := make(map[string]*string, len(t.configs))
		for k, v := range t.configs {
			entries[k] = &v
		}
		details[t.pair.Target] = &sarama.TopicDetail{NumPartitions: t.partitions, ReplicationFactor: rf, ConfigEntries: entries}
		p.log.Info("creating target topic", "topic", t.pair.Target, "partitions", t.partitions, "replication_factor", rf)
	}
	cfg := p.dst.Config()
	// The broker answers when every topic is created, or after the
	// timeout: several topics may take longer than the admin default (3 s),
	// and well less than the connection's read timeout.
	timeout := max(cfg.Admin.Timeout, min(createTimeout, cfg.Net.ReadTimeout-5*time.Second))
	// A controller that moved answers NotController: asked again, at most
	// twice more, for the topics it did not create.
	for attempt := 0; len(details) > 0; attempt++ {
		resp, err := createTopics(p.dst, sarama.NewCreateTopicsRequest(cfg.Version, details, timeout, false))
		retry := attempt < 2
		for topic := range details {
			terr := err
			if err == nil {
				if te, ok := resp.TopicErrors[topic]; !ok {
					terr = sarama.ErrIncompleteResponse
				} else if !errors.Is(te.Err, sarama.ErrNoError) && !errors.Is(te.Err, sarama.ErrTopicAlreadyExists) {
					terr = te
				}
			}
			if terr != nil && retry && (errors.Is(terr, sarama.ErrNotController) || errors.Is(terr, io.EOF)) {
				continue
			}
			if terr != nil {
				d := details[topic]
				terr = fmt.Errorf("create target topic %s (%d partitions, replication factor %d): %w", topic, d.NumPartitions, rf, terr)
			}
			errs[topic] = terr
			delete(details, topic)
		}
		if len(details) > 0 {
			_, _ = p.dst.RefreshController()
		}
	}
}

// awaitLeaders waits, up to leaderWait, until every partition of the
// topics just created has a leader in the target client's metadata: a
// partition copied before that has its first produce refused and backs
// off, and a thousand partitions each refreshing metadata for their topic
// spread the start of the copy over tens of seconds.
func (p *planner) awaitLeaders(created []newTopic, errs map[string]error) {
	var topics []string
	want := map[string]int{}
	for _, t := range created {
		if errs[t.pair.Target] == nil {
			topics = append(topics, t.pair.Target)
			want[t.pair.Target] = int(t.partitions)
		}
	}
	deadline := time.Now().Add(leaderWait)
	for len(topics) > 0 && time.Now().Before(deadline) {
		_ = p.dst.RefreshMetadata(topics...)
		waiting := topics[:0]
		for _, t := range topics {
			if parts, err := p.dst.WritablePartitions(t); err != nil || len(parts) < want[t] {
				waiting = append(waiting, t)
			}
		}
		if topics = waiting; len(topics) > 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// leaderWait bounds awaitLeaders: past it, partitions without a leader
// wait in their produce retries as after a leader election.
const leaderWait = 10 * time.Second

// createTimeout is how long the target's controller may take to create a
// round's topics.
const createTimeout = 20 * time.Second

// createTopics sends req to the target's controller.
func createTopics(client sarama.Client, req *sarama.CreateTopicsRequest) (*sarama.CreateTopicsResponse, error) {
	b, err := client.Controller()
	if err != nil {
		return nil, err
	}
	return b.CreateTopics(req)
}

// syncConfigs applies source topic-level configs that changed since they were
// last applied (or differ on first sight), with incremental alters so keys
// set only on the target are left alone. Failures are logged, not fatal:
// copying goes on with the target's settings.
func (p *planner) syncConfigs(pair policy.Pair, src, dst map[string]string) {
	if p.applied == nil {
		p.applied = map[string]map[string]string{}
	}
	last := p.applied[pair.Target]
	changes := map[string]sarama.IncrementalAlterConfigsEntry{}
	for k, v := range src {
		if dst[k] == v || (last != nil && last[k] == v) { // same, or unchanged on the source since applied
			continue
		}
		val := v
		changes[k] = sarama.IncrementalAlterConfigsEntry{Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &val}
	}
	if len(changes) > 0 {
		if err := p.dstAdmin.IncrementalAlterConfig(sarama.TopicResource, pair.Target, changes, false); err != nil {
			p.log.Warn("could not sync topic configs to target", "topic", pair.Target, "error", err)
			return
		}
		p.log.Info("synced topic configs to target", "topic", pair.Target, "configs", keys(changes))
	}
	p.applied[pair.Target] = src
}

// topicConfigs describes topics' configs. With onlyTopicLevel, it returns
// only what was set on the topic itself (what MM2 copies); otherwise the
// effective values, defaults included.
func topicConfigs(admin sarama.ClusterAdmin, topics []string, onlyTopicLevel bool) (map[string]map[string]string, error) {
	resources := make([]*sarama.ConfigResource, len(topics))
	for i, t := range topics {
		resources[i] = &sarama.ConfigResource{Type: sarama.TopicResource, Name: t}
	}
	results, err := admin.DescribeConfigs(resources, sarama.DescribeConfigsOptions{})
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[string]string, len(results))
	for _, r := range results {
		if r.ErrorCode != 0 {
			return nil, fmt.Errorf("topic %s: %w", r.Name, r.ErrorCode)
		}
		m := map[string]string{}
		for _, e := range r.Configs {
			if e.Sensitive || (onlyTopicLevel && (e.Source != sarama.SourceTopic || configsNotCopied[e.Name])) {
				continue
			}
			m[e.Name] = e.Value
		}
		out[r.Name] = m
	}
	return out, nil
}

func sources(pairs []policy.Pair) []string {
	out := make([]string, len(pairs))
	for i, p := range pairs {
		out[i] = p.Source
	}
	return out
}

func targets(pairs []policy.Pair) []string {
	out := make([]string, len(pairs))
	for i, p := range pairs {
		out[i] = p.Target
	}
	return out
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// topicIDs asks the cluster for the ids of topics (sarama's client keeps
// them to itself). A topic without one (an old cluster, or none known) is
// left out.
func topicIDs(client sarama.Client, topics []string) (map[string]string, error) {
	b := client.LeastLoadedBroker()
	if b == nil {
		return nil, sarama.ErrOutOfBrokers
	}
	if err := b.Open(client.Config()); err != nil && !errors.Is(err, sarama.ErrAlreadyConnected) {
		return nil, err
	}
	resp, err := b.GetMetadata(sarama.NewMetadataRequest(client.Config().Version, topics))
	if err != nil {
		return nil, err
	}
	ids := make(map[string]string, len(topics))
	for _, t := range resp.Topics {
		if errors.Is(t.Err, sarama.ErrNoError) && t.Uuid != (sarama.Uuid{}) {
			ids[t.Name] = t.Uuid.String()
		}
	}
	return ids, nil
}
