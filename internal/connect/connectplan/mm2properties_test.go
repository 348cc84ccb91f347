package connectplan

import (
	"strings"
	"testing"
)

const sampleMM2 = `# MirrorMaker 2, dedicated mode
clusters = east, west
east.bootstrap.servers = e1:9092,e2:9092
west.bootstrap.servers = w1:9092
west.security.protocol = SASL_SSL
west.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required \
    username="rep" password="${file:/etc/secrets.properties:west}";
east->west.enabled = true
east->west.topics = orders, pay\\.v1
west->east.enabled = false
tasks.max = 4
offset.storage.replication.factor = 1
east.offset.storage.replication.factor = 1
replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy
sync.group.offsets.enabled = true
`

func TestParseMM2Properties(t *testing.T) {
	flows, err := ParseMM2Properties(sampleMM2)
	if err != nil {
		t.Fatal(err)
	}
	if len(flows) != 1 || flows[0].SourceAlias != "east" || flows[0].TargetAlias != "west" {
		t.Fatalf("flows %+v, want east->west only", flows)
	}
	f := flows[0]
	if f.Source != "MirrorSourceConnector" || f.Checkpoint != "MirrorCheckpointConnector" || f.Heartbeat != "MirrorHeartbeatConnector" ||
		f.OffsetsTopic != "mm2-offsets.east.internal" {
		t.Fatalf("flow %+v", f.MM2Flow)
	}
	cfg := f.Configs[f.Source]
	for k, want := range map[string]string{
		"source.cluster.alias":             "east",
		"target.cluster.alias":             "west",
		"source.cluster.bootstrap.servers": "e1:9092,e2:9092",
		"target.cluster.bootstrap.servers": "w1:9092",
		"target.cluster.security.protocol": "SASL_SSL",
		"target.cluster.sasl.jaas.config":  `org.apache.kafka.common.security.plain.PlainLoginModule required username="rep" password="${file:/etc/secrets.properties:west}";`,
		"topics":                           `orders, pay\.v1`,
		"tasks.max":                        "4",
		"replication.policy.class":         identityPolicy,
		"sync.group.offsets.enabled":       "true",
		"connector.class":                  "org.apache.kafka.connect.mirror.MirrorSourceConnector",
	} {
		if cfg[k] != want {
			t.Errorf("%s = %q, want %q", k, cfg[k], want)
		}
	}
	for _, k := range []string{"clusters", "east->west.enabled", "west->east.enabled", "east.bootstrap.servers", "offset.storage.replication.factor", "source.cluster.offset.storage.replication.factor"} {
		if _, ok := cfg[k]; ok {
			t.Errorf("%s leaked into the flow's configuration", k)
		}
	}
}

func TestParseMM2PropertiesRefusals(t *testing.T) {
	for _, c := range []struct{ name, text, part string }{
		{"one cluster", "clusters = a\n", "fewer than two"},
		{"nothing enabled", "clusters = a, b\n", "no flow is enabled"},
		{"unknown alias", "clusters = a, b\na->b.enabled = true\nc->a.enabled = true\n", `cluster "c"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseMM2Properties(c.text)
			if err == nil || !strings.Contains(err.Error(), c.part) {
				t.Fatalf("got %v, want an error saying %q", err, c.part)
			}
		})
	}
}

func FuzzParseMM2Properties(f *testing.F) {
	f.Add(sampleMM2)
	f.Add("clusters = a, b\na->b.enabled = true\nb->a.enabled = TRUE\n")
	f.Add("clusters = a, b\na->b.enabled = true\na.sasl.jaas.config = x password=\"${env:NOPE}\";\n")
	f.Fuzz(func(t *testing.T, text string) {
		flows, err := ParseMM2Properties(text)
		if err != nil {
			return
		}
		for _, fl := range flows {
			c := fl.Configs[fl.Source]
			if fl.SourceAlias == fl.TargetAlias || c["source.cluster.alias"] != fl.SourceAlias || c["target.cluster.alias"] != fl.TargetAlias {
				t.Fatalf("flow %+v", fl)
			}
		}
	})
}

// A flow read from mm2.properties adopts as connectors on Connect do.
func TestAdoptMM2Properties(t *testing.T) {
	flows, err := ParseMM2Properties(sampleMM2)
	if err != nil {
		t.Fatal(err)
	}
	f := flows[0]
	tk, probs := Adopt(AdoptInput{Flow: f.MM2Flow, Configs: f.Configs, Name: "imported", Current: "west",
		Clusters: []Registered{{Name: "east", BootstrapServers: []string{"e1:9092", "e2:9092"}}, {Name: "west", BootstrapServers: []string{"w1:9092"}}}})
	if len(probs) > 0 {
		t.Fatalf("problems: %v", probs)
	}
	r := tk.Rules
	if tk.Current.Cluster != "west" || tk.Peer.Cluster != "east" || r.Direction != "pull" || r.Tasks != 4 || r.RenameTopics ||
		!r.SyncConsumerOffsets || len(r.Topics) != 2 || r.Topics[1] != "pay.v1" {
		t.Fatalf("task %+v", tk)
	}
}

// MirrorMaker keeps a flow's progress in its target's worker offsets topic:
// a top-level offset.storage.topic over the target's own, else
// mm2-offsets.<source>.internal (MirrorMakerConfig.workerConfig).
func TestParseMM2PropertiesOffsetsTopic(t *testing.T) {
	base := "clusters = east, west\neast.bootstrap.servers = e:9092\nwest.bootstrap.servers = w:9092\neast->west.enabled = true\n"
	for _, c := range []struct{ name, extra, want string }{
		{"default", "", "mm2-offsets.east.internal"},
		{"target's", "west.offset.storage.topic = west-offsets\n", "west-offsets"},
		{"source's is not the flow's", "east.offset.storage.topic = east-offsets\n", "mm2-offsets.east.internal"},
		{"top-level", "offset.storage.topic = shared-offsets\n", "shared-offsets"},
		{"top-level over the target's", "offset.storage.topic = shared-offsets\nwest.offset.storage.topic = west-offsets\n", "shared-offsets"},
	} {
		t.Run(c.name, func(t *testing.T) {
			flows, err := ParseMM2Properties(base + c.extra)
			if err != nil {
				t.Fatal(err)
			}
			if got := flows[0].OffsetsTopic; got != c.want {
				t.Fatalf("offsets topic %q, want %q", got, c.want)
			}
		})
	}
}
