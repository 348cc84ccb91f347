package connectplan

import (
	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/connect"
)

// Connector is one connector to deploy: its name and configuration.
type Connector struct {
	Name   string
	Config map[string]string
	// Flow is the flow it serves ("A->B"), for the status.
	Flow string
	// Copy is set on the connector whose offsets are the flow's progress.
	Copy *Copy
	// Held: kmirror keeps it stopped (Connect's STOPPED state, its offsets
	// kept), as a way back holds the forward copy (docs/SWITCHOVER.md).
	Held bool
	// StartAt is, per source partition ("topic/partition"), the next offset
	// a connector created now copies from: a way back starts at the
	// switchover's point. Applied only when the connector is created.
	StartAt map[string]int64
	// Skip is, per source partition ("topic/partition"), the stretch the
	// copy must never copy: what a way back wrote to this flow's source. A
	// connector whose offset stands inside it is moved past it.
	Skip map[string]Stretch
}

// Stretch is the offsets [From, To) of a partition.
type Stretch struct{ From, To int64 }

// Cluster is a registered Connect cluster, ready to connect to.
type Cluster struct {
	Name   string
	Client connect.Config
	// Plan carries what the connector configs depend on: the Kafka cluster
	// the workers write to, a config provider for secrets.
	KafkaCluster   string
	ConfigProvider string
	// OverridesAllowed says the workers accept per-connector producer
	// overrides (connector.client.config.override.policy=All).
	OverridesAllowed bool
	// ExactlyOnceRefusal is why the workers cannot run exactly-once source
	// connectors (KIP-618), "" when they can.
	ExactlyOnceRefusal string
	// AutoRestart: the engine restarts the failed connectors and tasks of
	// kmirror's tasks here, with back-off.
	AutoRestart bool
	// Kafka is how to reach KafkaCluster, where the status poll reads the
	// workers' group to see a worker die (see poller); without bootstrap
	// servers only the registered URLs are asked.
	Kafka cluster.Settings
}

// Copy says what a connector copies, so its progress can be shown: set on
// each flow's MirrorSourceConnector, whose offsets are the flow's progress.
type Copy struct {
	// Source is the cluster it reads, for the partitions' end offsets.
	Source cluster.Settings
	// TargetTopic names the target topic of a source topic.
	TargetTopic func(source string) string
	// Selects says whether the flow copies a source topic, so partitions
	// with nothing copied yet (no offset on Connect) show their lag too.
	Selects func(source string) bool
}
