package kafkatest

import "fmt"

// jvmFlags are a broker's or a Connect worker's heap and runtime flags.
// With full, the runtime is production's (the optimising JIT, G1), as a
// benchmark needs (FullSpeed, ConnectFullSpeed). Tests get the JIT's
// first tier only and the serial collector: they wait on clocks and
// bounds, not on broker throughput, and CI runs on two cores where every
// JVM's compiler threads compete with the tests. Measured here
// (cmd/kafka-up, one 3-broker cluster with its controller, its first
// minute): 17.8 CPU-seconds against 28.7, serving after 5.2 s against 8.3 s.
func jvmFlags(heapMB int, full bool) []string {
	flags := []string{fmt.Sprintf("-Xms%dm", heapMB), fmt.Sprintf("-Xmx%dm", heapMB), "-Djava.awt.headless=true"}
	if full {
		return append(flags, "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
			"-XX:+ExplicitGCInvokesConcurrent")
	}
	return append(flags, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
}
