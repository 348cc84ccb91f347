package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/task"
)

// Row keys, in report order.
const (
	keyProducerPerf    = "producer-perf"
	keyConsumerPerf    = "consumer-perf"
	keyBareSarama      = "bare-sarama"
	keyBareFranz       = "bare-franz"
	keyKmirrorTypical  = "kmirror-typical"
	keyKmirrorDefaults = "kmirror-defaults"
	keyKmirrorEOS      = "kmirror-eos"
	keyKmirrorEOS100   = "kmirror-eos-100ms"
	keyMM2             = "mm2"
	keyMM2Tuned        = "mm2-tuned"
	keyMM2Connect      = "mm2-connect"
)

// copierKeys lists every row; -only picks among them (the load,
// producer-perf, always runs).
func copierKeys() []string {
	return []string{keyProducerPerf, keyConsumerPerf, keyBareSarama, keyBareFranz, keyKmirrorTypical, keyKmirrorEOS, keyKmirrorEOS100, keyKmirrorDefaults, keyMM2, keyMM2Tuned, keyMM2Connect}
}

// describe says what each row is, for the report.
var describe = map[string]string{
	keyProducerPerf:    "Kafka ProducerPerformance into the source (acks=all, batch.size 256 KiB, linger 5 ms); this is also the load",
	keyConsumerPerf:    "Kafka ConsumerPerformance reading the source topic (fetch rate, join time excluded)",
	keyBareSarama:      "bare copy on sarama: 2 workers of partition consumers -> async producer, acks=all, 1 MiB/5 ms batches, nothing else",
	keyBareFranz:       "bare copy on franz-go: 2 workers of direct consumer -> producer, acks=all (idempotent), linger 5 ms, nothing else",
	keyKmirrorTypical:  "kmirror engine, typical task: rename, source header, consumer offset sync, tasks 2",
	keyKmirrorDefaults: "kmirror engine, the original product's defaults: identity names, tasks 2, no header, no offset sync",
	keyKmirrorEOS:      "as `kmirror-typical`, exactly once (delivery exactly_once, transactions every 1 s, the default); measured read committed",
	keyKmirrorEOS100:   "as `kmirror-eos`, transactions every 100 ms",
	keyMM2:             "MirrorMaker 2 dedicated mode, the typical task's settings: default (rename) policy, tasks.max 2, acks=all, sync.group.offsets on, checkpoints on",
	keyMM2Tuned:        "as `mm2`, with the best client settings of the sweep (bench/results/2026-12-02-mm2.md): " + strings.Join(mm2Tuning, ", "),
	keyMM2Connect:      "MirrorMaker 2 connectors on a distributed Kafka Connect cluster (" + strconv.Itoa(connectWorkers) + " workers, " + strconv.Itoa(connectHeapMB) + " MiB heaps, writing to the target), deployed by kmirror's Connect engine (connectplan) from the typical task without the source header (refused on Connect): rename, consumer offset sync, tasks 2; producer tuned per connector (connectplan.ProducerTuning, the workers allow overrides); CPU and RSS are the workers' summed",
}

// mm2Tuning is the mm2-tuned row's client settings, the best of a sweep
// on the 1 KiB scenario (-mm2-try; every setting tried and its figures are
// in bench/results/2026-12-02-mm2.md). "producer." settings go to the
// producer writing to the target, "consumer." ones to the consumer reading
// the source, the rest to the top level of mm2.properties.
//
// Connect's worker producer sends one request at a time per broker
// (max.in.flight.requests.per.connection=1) of at most batch.size (16 KiB
// by default) per partition: larger batches are what lifts MM2 most.
// Larger ones still, bigger consumer polls and fetches, idempotence with 5
// requests in flight, or tasks.max 6 did no better (more CPU and RSS).
var mm2Tuning = []string{
	"producer.batch.size=262144",
	"producer.linger.ms=5",
}

// mm2Variant is a row of MM2 with other client settings (-mm2-try), for
// sweeping them side by side in one run.
type mm2Variant struct {
	name     string
	settings []string
}

func (v mm2Variant) key() string { return "mm2-try-" + v.name }

// parseMM2Variant reads "name:key=value,key=value".
func parseMM2Variant(s string) (mm2Variant, error) {
	name, list, ok := strings.Cut(s, ":")
	if !ok || !regexp.MustCompile(`^[a-z0-9-]+$`).MatchString(name) {
		return mm2Variant{}, fmt.Errorf("-mm2-try %q: want name:key=value,key=value with a name of a-z, 0-9 and -", s)
	}
	v := mm2Variant{name: name}
	for _, kv := range strings.Split(list, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		if k, _, ok := strings.Cut(kv, "="); !ok || strings.TrimSpace(k) == "" {
			return mm2Variant{}, fmt.Errorf("-mm2-try %q: %q is not key=value", s, kv)
		}
		v.settings = append(v.settings, kv)
	}
	return v, nil
}

// rowKeys are copierKeys with the -mm2-try rows after mm2: the report's
// order.
func (h *harness) rowKeys() []string {
	var keys []string
	for _, k := range copierKeys() {
		keys = append(keys, k)
		if k == keyMM2 {
			for _, v := range h.cfg.mm2Try {
				keys = append(keys, v.key())
			}
		}
	}
	return keys
}

func (h *harness) describeRow(k string) string {
	for _, v := range h.cfg.mm2Try {
		if v.key() == k {
			return "as `mm2`, with " + strings.Join(v.settings, ", ")
		}
	}
	return describe[k]
}

// workers is every copier's parallelism: kmirror's tasks, MM2's tasks.max
// and the bare copiers' consumer+producer pairs.
const workers = 2

// copier is a row measured by copying: how to start it and where its
// records land.
type copier struct {
	key       string
	precreate bool // the harness creates the target topics (bare copiers)
	target    func(sc scenario, source string) string
	start     func(h *harness, sc scenario, topics []string, phase string) (copyRun, error)
}

// Source aliases: kmirror and MM2 name renamed target topics
// "<alias>.<topic>".
const (
	aliasKmirror = "km"
	aliasEOS     = "ke"
	aliasEOS100  = "kf"
	aliasTarget  = "tgt"
	aliasConnect = "kc"
)

// mm2Alias is a MirrorMaker 2 row's source alias. One per row and
// scenario: dedicated MM2 keeps its progress in the target's
// mm2-offsets.<alias>.internal, and a row sharing another's alias would
// resume where that one stopped and copy nothing.
func mm2Alias(key string, sc scenario) string {
	switch key {
	case keyMM2:
		return "mm" + sc.id()
	case keyMM2Tuned:
		return "mt" + sc.id()
	default:
		return "mx" + strings.TrimPrefix(key, "mm2-try-") + "-" + sc.id()
	}
}

func mm2Target(key string) func(scenario, string) string {
	return func(sc scenario, t string) string { return mm2Alias(key, sc) + "." + t }
}

func (h *harness) copiers() []copier {
	prefixed := func(prefix string) func(scenario, string) string {
		return func(_ scenario, t string) string { return prefix + t }
	}
	bare := func(role, prefix string) func(*harness, scenario, []string, string) (copyRun, error) {
		return func(h *harness, sc scenario, topics []string, phase string) (copyRun, error) {
			argv := []string{h.self, "-src", h.srcBoot, "-dst", h.dstBoot, "-prefix", prefix, "-topics", strings.Join(topics, ","),
				"-partitions", strconv.Itoa(h.partitionsOf(sc)), "-workers", strconv.Itoa(workers)}
			return h.children.start(role, filepath.Join(h.work, role+"-"+sc.id()+"-"+phase+".log"), argv, []string{childEnv + "=" + role})
		}
	}
	list := []copier{
		{key: keyConsumerPerf},
		{key: keyBareSarama, precreate: true, target: prefixed("sarama."), start: bare(roleSarama, "sarama.")},
		{key: keyBareFranz, precreate: true, target: prefixed("franz."), start: bare(roleFranz, "franz.")},
		{key: keyKmirrorTypical, target: prefixed(aliasKmirror + "."), start: startKmirror(kmirrorTypical)},
		{key: keyKmirrorEOS, target: prefixed(aliasEOS + "."), start: startKmirror(kmirrorEOS)},
		{key: keyKmirrorEOS100, target: prefixed(aliasEOS100 + "."), start: startKmirror(kmirrorEOS100)},
		{key: keyMM2, target: mm2Target(keyMM2), start: mm2With(keyMM2, nil)},
		{key: keyKmirrorDefaults, target: prefixed(""), start: startKmirror(kmirrorDefaults)},
	}
	// -mm2-try rows run whatever -only says: they were asked for by name.
	for _, v := range h.cfg.mm2Try {
		list = append(list, copier{key: v.key(), target: mm2Target(v.key()), start: mm2With(v.key(), v.settings)})
	}
	return append(list,
		copier{key: keyMM2Tuned, target: mm2Target(keyMM2Tuned), start: mm2With(keyMM2Tuned, h.cfg.mm2Tuned)},
		copier{key: keyMM2Connect, target: prefixed(aliasConnect + "."), start: startConnectTask},
	)
}

// exactlyOnceRow says whether a row copies exactly once (its target holds
// transaction markers besides the records).
func exactlyOnceRow(key string) bool { return key == keyKmirrorEOS || key == keyKmirrorEOS100 }

// kmirror rows' tasks.
type kmirrorRow int

const (
	kmirrorDefaults kmirrorRow = iota
	kmirrorTypical
	kmirrorEOS
	kmirrorEOS100
)

// startKmirror writes a spec with one push task and runs it on kmirror's
// engine in a child process.
func startKmirror(row kmirrorRow) func(*harness, scenario, []string, string) (copyRun, error) {
	return func(h *harness, sc scenario, topics []string, phase string) (copyRun, error) {
		name := "bench-defaults-" + sc.id()
		alias := aliasKmirror
		rules := task.Rules{Direction: task.DirectionPush, Topics: topics, Tasks: workers,
			StartOffset: task.StartEarliest, Compression: "none", ReplicationFactor: int(h.rf())}
		if row != kmirrorDefaults {
			name = "bench-typical-" + sc.id()
			rules.RenameTopics, rules.AddSourceHeader, rules.SyncConsumerOffsets = true, true, true
		}
		switch row {
		case kmirrorEOS:
			name, alias = "bench-eos-"+sc.id(), aliasEOS
			rules.Delivery = task.DeliveryExactlyOnce
		case kmirrorEOS100:
			name, alias = "bench-eos100-"+sc.id(), aliasEOS100
			rules.Delivery, rules.TransactionIntervalMs = task.DeliveryExactlyOnce, 100
		case kmirrorDefaults, kmirrorTypical: // at least once
		}
		spec := service.Spec{
			Clusters: []cluster.Settings{
				{Name: "source", BootstrapServers: []string{h.srcBoot}, SecurityProtocol: cluster.Plaintext},
				{Name: "target", BootstrapServers: []string{h.dstBoot}, SecurityProtocol: cluster.Plaintext},
			},
			Tasks: []task.Task{{
				Name: name, Type: task.TypeKafkaReplication,
				Current: task.Current{Cluster: "source", Alias: alias},
				// A target alias per task keeps each run's offset syncs in
				// its own topic.
				Peer:  task.Peer{Alias: aliasTarget + "-" + name, ConfigType: task.PeerByCluster, Cluster: "target"},
				Rules: rules,
			}},
		}
		b, err := json.MarshalIndent(spec, "", "  ")
		if err != nil {
			return nil, err
		}
		specPath := filepath.Join(h.work, name+"-"+phase+".json")
		if err := os.WriteFile(specPath, b, 0o600); err != nil {
			return nil, err
		}
		argv := []string{h.self, "-f", specPath}
		if h.cfg.bufferMemory != "" {
			argv = append(argv, "-buffer-memory", h.cfg.bufferMemory)
		}
		if h.cfg.profile {
			argv = append(argv,
				"-cpuprofile", filepath.Join(h.cfg.out, name+"-"+phase+".cpu.pprof"),
				"-memprofile", filepath.Join(h.cfg.out, name+"-"+phase+".allocs.pprof"))
		}
		return h.children.start(name, filepath.Join(h.work, name+"-"+phase+".log"), argv, []string{childEnv + "=" + roleKmirror})
	}
}

// mm2With runs MirrorMaker 2 in dedicated mode with the typical task's
// settings and then tuning (see mm2Tuning). The JVM options are those of
// connect-mirror-maker.sh and kafka-run-class.sh.
func mm2With(key string, tuning []string) func(*harness, scenario, []string, string) (copyRun, error) {
	return func(h *harness, sc scenario, topics []string, phase string) (copyRun, error) {
		return startMM2(h, sc, topics, mm2Alias(key, sc), key+"-"+sc.id()+"-"+phase, tuning)
	}
}

func startMM2(h *harness, sc scenario, topics []string, src, run string, tuning []string) (copyRun, error) {
	dst := "mm" + aliasTarget
	rf := strconv.Itoa(int(h.rf()))
	quoted := make([]string, len(topics))
	for i, t := range topics {
		quoted[i] = regexp.QuoteMeta(t)
	}
	props := []string{
		"clusters = " + src + ", " + dst,
		src + ".bootstrap.servers = " + h.srcBoot,
		dst + ".bootstrap.servers = " + h.dstBoot,
		src + "->" + dst + ".enabled = true",
		src + "->" + dst + ".topics = " + strings.Join(quoted, "|"),
		dst + "->" + src + ".enabled = false",
		dst + "->" + src + ".emit.heartbeats.enabled = false",
		"tasks.max = " + strconv.Itoa(workers),
		"replication.policy.class = org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
		"sync.group.offsets.enabled = true",
		"emit.checkpoints.enabled = true",
		// The run's replication factor for everything.
		"replication.factor = " + rf,
		"checkpoints.topic.replication.factor = " + rf,
		"heartbeats.topic.replication.factor = " + rf,
		"offset-syncs.topic.replication.factor = " + rf,
		"offset.storage.replication.factor = " + rf,
		"status.storage.replication.factor = " + rf,
		"config.storage.replication.factor = " + rf,
		// As kmirror produces: acks=all, no compression.
		dst + ".producer.acks = all",
		dst + ".producer.compression.type = none",
	}
	// Later lines win in a properties file.
	for _, kv := range tuning {
		k, v, _ := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case strings.HasPrefix(k, "producer."):
			k = dst + "." + k
		case strings.HasPrefix(k, "consumer."):
			k = src + "." + k
		}
		props = append(props, k+" = "+v)
	}
	conf := filepath.Join(h.work, run+".properties")
	if err := os.WriteFile(conf, []byte(strings.Join(props, "\n")+"\n"), 0o600); err != nil {
		return nil, err
	}
	log4j := filepath.Join(h.work, "log4j2.properties")
	if err := os.WriteFile(log4j, []byte(log4j2Properties), 0o600); err != nil {
		return nil, err
	}
	argv := append([]string{h.java, "-Xms256M", "-Xmx2G"}, h.jvmFlags(log4j)...)
	argv = append(argv, "org.apache.kafka.connect.mirror.MirrorMaker", conf)
	return h.children.start("mm2", filepath.Join(h.work, run+".log"), argv, nil)
}

// jvmFlags are kafka-run-class.sh's performance options; a smoke run
// (-quick), whose figures mean nothing and which CI runs beside other
// tests, gets the light runtime the test brokers have (kafkatest).
func (h *harness) jvmFlags(log4j string) []string {
	runtime := []string{"-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
		"-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15"}
	if h.cfg.quick {
		runtime = []string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"}
	}
	return append(runtime, "-Djava.awt.headless=true", "-Dlog4j2.configurationFile="+log4j, "-cp", h.jars.Classpath())
}

const log4j2Properties = `status = warn
name = bench
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
`
