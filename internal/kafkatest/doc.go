// Package kafkatest runs real Apache Kafka brokers for kmirror's tests and for
// developers (cmd/kafka-up): it fetches the Kafka jars with Maven into a cache
// outside the repository, starts independent KRaft clusters on 127.0.0.1 with
// PLAINTEXT, SASL_PLAINTEXT and SASL_SSL listeners, and hands out
// cluster.Settings for every listener and SASL mechanism.
//
// A cluster is one node in both roles by default: the fast tests use those.
// Brokers(n) makes n brokers (node ids 1..n) and one KRaft controller (node
// id 100, a static quorum); the replication factors (default and internal
// topics) are n, MinInsyncReplicas sets min.insync.replicas, BrokerProps adds
// or overrides any server property (offsets.retention.minutes, log.roll.ms,
// log.cleaner.* ...). Every broker has log.retention.ms=-1 unless overridden:
// tests write records with old timestamps, which time retention would delete.
// Both kinds are the same Cluster: Settings, Bootstrap (comma-separated, one
// address per broker; BootstrapServers for Go clients), Admin, CAPEM,
// NewTopic (a replica on every broker; NewTopicRF for fewer) work on either.
// KillBroker, StopBroker and RestartBroker act on one broker by node id;
// Leader and InSyncReplicas tell where a partition lives now.
//
// StartConnect runs a distributed Kafka Connect cluster on a Cluster: N
// workers (ConnectDistributed from the same jars, one JVM each, 2 by
// default) in one group, their config, offset and status topics on that
// Kafka, ByteArrayConverter everywhere (MirrorMaker 2 copies bytes),
// client overrides allowed, and scheduled.rebalance.max.delay.ms at 10 s so
// a dead worker's tasks move soon. KillWorker, StopWorker and RestartWorker
// act on one worker; WorkerID maps a status's worker_id to a worker.
// LazyConnect shares one per package (Main closes it), NewConnect gives a
// test its own.
//
// Invariants:
//   - A broker never outlives the process that started it: each JVM gets
//     SIGKILL from the kernel when its parent dies (Pdeathsig), and Stop sends
//     SIGTERM then SIGKILL.
//   - Ports are picked at run time; nothing assumes a fixed port is free.
//   - The jar cache is shared by concurrent processes (go test runs packages in
//     parallel): one fetch at a time under a file lock, published by an atomic
//     rename, so a reader sees a complete directory or none.
//   - Keys and certificates are made at start and live only in the cluster's
//     temporary directory; the repository holds no jar, key or certificate.
//
// Tests use it through TestMain. Main starts n single-node clusters before
// the tests; Lazy starts a shared cluster of any shape when a test first asks
// for it by name, so packages that never ask pay nothing:
//
//	func TestMain(m *testing.M) { kafkatest.Main(m, 1) }
//
//	func TestX(t *testing.T) {
//		c := kafkatest.Shared(t, 0)
//		topic := kafkatest.NewTopic(t, c, 3, nil)
//		cfg, _ := c.Settings(cluster.SASLSSL, cluster.MechanismSCRAMSHA512).Config("test")
//		...
//	}
//
//	func TestY(t *testing.T) {
//		c := kafkatest.Lazy(t, "rf3", kafkatest.Brokers(3), kafkatest.MinInsyncReplicas(2))
//		topic := kafkatest.NewTopic(t, c, 1, nil) // RF 3
//		leader, _ := c.Leader(topic, 0)
//		_ = c.KillBroker(leader) // a new leader once the controller fences it
//		...
//	}
package kafkatest
