package connect

// The MirrorMaker 2 connector classes kmirror deploys. They ship with Apache
// Kafka's Connect (connect-mirror), but a vendor's distribution or a
// trimmed plugin.path may lack them.
const (
	MirrorSourceConnector     = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
	MirrorCheckpointConnector = "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"
	MirrorHeartbeatConnector  = "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector"
)

// MirrorConnectors are the three MirrorMaker 2 connector classes, in the
// order a flow needs them.
var MirrorConnectors = []string{MirrorSourceConnector, MirrorCheckpointConnector, MirrorHeartbeatConnector}
