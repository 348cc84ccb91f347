package main

import (
	"encoding/json"
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
	keyMM2             = "mm2"
)

// copierKeys lists every row; -only picks among them (the load,
// producer-perf, always runs).
func copierKeys() []string {
	return []string{keyProducerPerf, keyConsumerPerf, keyBareSarama, keyBareFranz, keyKmirrorTypical, keyKmirrorDefaults, keyMM2}
}

// describe says what each row is, for the report.
var describe = map[string]string{
	keyProducerPerf:    "Kafka ProducerPerformance into the source (acks=all, batch.size 256 KiB, linger 5 ms); this is also the load",
	keyConsumerPerf:    "Kafka ConsumerPerformance reading the source topic (fetch rate, join time excluded)",
	keyBareSarama:      "bare copy on sarama: 2 workers of partition consumers -> async producer, acks=all, 1 MiB/5 ms batches, nothing else",
	keyBareFranz:       "bare copy on franz-go: 2 workers of direct consumer -> producer, acks=all (idempotent), linger 5 ms, nothing else",
	keyKmirrorTypical:  "kmirror engine, typical task: rename, source header, consumer offset sync, tasks 2",
	keyKmirrorDefaults: "kmirror engine, the original product's defaults: identity names, tasks 2, no header, no offset sync",
	keyMM2:             "MirrorMaker 2 dedicated mode, the typical task's settings: default (rename) policy, tasks.max 2, acks=all, sync.group.offsets on, checkpoints on",
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
	start     func(h *harness, sc scenario, topics []string, phase string) (*proc, error)
}

// Source aliases: kmirror and MM2 name renamed target topics
// "<alias>.<topic>".
const (
	aliasKmirror = "km"
	aliasTarget  = "tgt"
)

func mm2Alias(sc scenario) string { return "mm" + sc.key }

func (h *harness) copiers() []copier {
	prefixed := func(prefix string) func(scenario, string) string {
		return func(_ scenario, t string) string { return prefix + t }
	}
	bare := func(role, prefix string) func(*harness, scenario, []string, string) (*proc, error) {
		return func(h *harness, sc scenario, topics []string, phase string) (*proc, error) {
			argv := []string{h.self, "-src", h.srcBoot, "-dst", h.dstBoot, "-prefix", prefix, "-topics", strings.Join(topics, ","),
				"-partitions", strconv.Itoa(h.cfg.partitions), "-workers", strconv.Itoa(workers)}
			return h.children.start(role, filepath.Join(h.work, role+"-"+sc.key+"-"+phase+".log"), argv, []string{childEnv + "=" + role})
		}
	}
	return []copier{
		{key: keyConsumerPerf},
		{key: keyBareSarama, precreate: true, target: prefixed("sarama."), start: bare(roleSarama, "sarama.")},
		{key: keyBareFranz, precreate: true, target: prefixed("franz."), start: bare(roleFranz, "franz.")},
		{key: keyKmirrorTypical, target: prefixed(aliasKmirror + "."), start: startKmirror(true)},
		{key: keyMM2, target: func(sc scenario, t string) string { return mm2Alias(sc) + "." + t }, start: startMM2},
		{key: keyKmirrorDefaults, target: prefixed(""), start: startKmirror(false)},
	}
}

// startKmirror writes a spec with one push task and runs it on kmirror's
// engine in a child process.
func startKmirror(typical bool) func(*harness, scenario, []string, string) (*proc, error) {
	return func(h *harness, sc scenario, topics []string, phase string) (*proc, error) {
		name := "bench-defaults-" + sc.key
		rules := task.Rules{Direction: task.DirectionPush, Topics: topics, Tasks: workers,
			StartOffset: task.StartEarliest, Compression: "none", ReplicationFactor: 1}
		if typical {
			name = "bench-typical-" + sc.key
			rules.RenameTopics, rules.AddSourceHeader, rules.SyncConsumerOffsets = true, true, true
		}
		spec := service.Spec{
			Clusters: []cluster.Settings{
				{Name: "source", BootstrapServers: []string{h.srcBoot}, SecurityProtocol: cluster.Plaintext},
				{Name: "target", BootstrapServers: []string{h.dstBoot}, SecurityProtocol: cluster.Plaintext},
			},
			Tasks: []task.Task{{
				Name: name, Type: task.TypeKafkaReplication,
				Current: task.Current{Cluster: "source", Alias: aliasKmirror},
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

// startMM2 runs MirrorMaker 2 in dedicated mode with the typical task's
// settings. The JVM options are those of connect-mirror-maker.sh and
// kafka-run-class.sh.
func startMM2(h *harness, sc scenario, topics []string, phase string) (*proc, error) {
	src, dst := mm2Alias(sc), "mm"+aliasTarget
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
		// One replica for everything on single-node clusters.
		"replication.factor = 1",
		"checkpoints.topic.replication.factor = 1",
		"heartbeats.topic.replication.factor = 1",
		"offset-syncs.topic.replication.factor = 1",
		"offset.storage.replication.factor = 1",
		"status.storage.replication.factor = 1",
		"config.storage.replication.factor = 1",
		// As kmirror produces: acks=all, no compression.
		dst + ".producer.acks = all",
		dst + ".producer.compression.type = none",
	}
	conf := filepath.Join(h.work, "mm2-"+sc.key+"-"+phase+".properties")
	if err := os.WriteFile(conf, []byte(strings.Join(props, "\n")+"\n"), 0o600); err != nil {
		return nil, err
	}
	log4j := filepath.Join(h.work, "log4j2.properties")
	if err := os.WriteFile(log4j, []byte(log4j2Properties), 0o600); err != nil {
		return nil, err
	}
	argv := append([]string{h.java, "-Xms256M", "-Xmx2G"}, jvmFlags(log4j, h.jars.Classpath())...)
	argv = append(argv, "org.apache.kafka.connect.mirror.MirrorMaker", conf)
	return h.children.start("mm2", filepath.Join(h.work, "mm2-"+sc.key+"-"+phase+".log"), argv, nil)
}

// jvmFlags are kafka-run-class.sh's performance options.
func jvmFlags(log4j, classpath string) []string {
	return []string{"-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
		"-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile=" + log4j, "-cp", classpath}
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
