// Package kafkatest runs real Apache Kafka brokers for kmirror's tests and for
// developers (cmd/kafka-up): it fetches the Kafka jars with Maven into a cache
// outside the repository, starts independent single-node KRaft clusters on
// 127.0.0.1 with PLAINTEXT, SASL_PLAINTEXT and SASL_SSL listeners, and hands
// out cluster.Settings for every listener and SASL mechanism.
//
// Invariants:
//   - A broker never outlives the process that started it: the JVM gets
//     SIGKILL from the kernel when its parent dies (Pdeathsig), and Stop sends
//     SIGTERM then SIGKILL.
//   - Ports are picked at run time; nothing assumes a fixed port is free.
//   - The jar cache is shared by concurrent processes (go test runs packages in
//     parallel): one fetch at a time under a file lock, published by an atomic
//     rename, so a reader sees a complete directory or none.
//   - Keys and certificates are made at start and live only in the cluster's
//     temporary directory; the repository holds no jar, key or certificate.
//
// Tests use it through TestMain:
//
//	func TestMain(m *testing.M) { kafkatest.Main(m, 1) }
//
//	func TestX(t *testing.T) {
//		c := kafkatest.Shared(t, 0)
//		topic := kafkatest.NewTopic(t, c, 3, nil)
//		cfg, _ := c.Settings(cluster.SASLSSL, cluster.MechanismSCRAMSHA512).Config("test")
//		...
//	}
package kafkatest
