package task

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/kmirror/kmirror/internal/cluster"
)

func TestResolve(t *testing.T) {
	registered := map[string]cluster.Settings{
		"east": {Name: "east", BootstrapServers: []string{"e:9092"}},
		"west": {Name: "west", BootstrapServers: []string{"w:9092"}, SecurityProtocol: cluster.SASLSSL},
	}
	lookup := func(n string) (cluster.Settings, bool) { s, ok := registered[n]; return s, ok }
	cases := []struct {
		name     string
		t        Task
		wantPeer cluster.Settings
		wantErr  bool
	}{
		{"peer by cluster", Task{Current: Current{Cluster: "east"}, Peer: Peer{Alias: "B", ConfigType: PeerByCluster, Cluster: "west"}},
			registered["west"], false},
		{"peer by address, PLAINTEXT by default", Task{Current: Current{Cluster: "east"}, Peer: Peer{Alias: "B", ConfigType: PeerByAddress, Address: []string{"p:9092"}}},
			cluster.Settings{Name: "B", BootstrapServers: []string{"p:9092"}, SecurityProtocol: cluster.Plaintext}, false},
		{"peer by address with credentials", Task{Current: Current{Cluster: "east"}, Peer: Peer{Alias: "B", ConfigType: PeerByAddress, Address: []string{"p:9093"},
			SecurityProtocol: cluster.SASLSSL, SASLMechanism: cluster.MechanismSCRAMSHA512, Username: "u", Password: "pw", CAPEM: "ca"}},
			cluster.Settings{Name: "B", BootstrapServers: []string{"p:9093"}, SecurityProtocol: cluster.SASLSSL, SASLMechanism: cluster.MechanismSCRAMSHA512, Username: "u", Password: "pw", CAPEM: "ca"}, false},
		{"unknown current cluster", Task{Current: Current{Cluster: "nope"}, Peer: Peer{ConfigType: PeerByCluster, Cluster: "west"}}, cluster.Settings{}, true},
		{"unknown peer cluster", Task{Current: Current{Cluster: "east"}, Peer: Peer{ConfigType: PeerByCluster, Cluster: "nope"}}, cluster.Settings{}, true},
		{"unknown config type", Task{Current: Current{Cluster: "east"}, Peer: Peer{ConfigType: "dns"}}, cluster.Settings{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cur, peer, err := c.t.Resolve(lookup)
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %v, want error %v", err, c.wantErr)
			}
			if c.wantErr {
				return
			}
			if cur.Name != "east" || !reflect.DeepEqual(peer, c.wantPeer) {
				t.Fatalf("current %v peer %+v, want %+v", cur, peer, c.wantPeer)
			}
		})
	}
}

func TestDefaultsAndTopicNames(t *testing.T) {
	got := Task{Current: Current{Alias: "A"}, Peer: Peer{Alias: "B"}}.WithDefaults()
	if got.Type != TypeKafkaReplication || got.Rules.Tasks != DefaultTasks || got.Rules.StartOffset != StartEarliest ||
		got.Rules.Compression != "none" || got.Rules.ReplicationFactor != DefaultReplicationFactor {
		t.Fatalf("defaults %+v", got.Rules)
	}
	if OffsetSyncsTopic(got.Peer.Alias) != "mm2-offset-syncs.B.internal" || CheckpointsTopic("A") != "A.checkpoints.internal" {
		t.Fatal("internal topic names are MM2's")
	}
}

// TestDecodeTellsOmittedFromZero: only an omitted number takes its default;
// a sent 0 stays 0 for the validator to refuse.
func TestDecodeTellsOmittedFromZero(t *testing.T) {
	cases := []struct {
		name, body        string
		wantTasks, wantRF int
		wantErr           bool
	}{
		{"omitted", `{"rules":{"direction":"push"}}`, DefaultTasks, DefaultReplicationFactor, false},
		{"no rules at all", `{"name":"x"}`, DefaultTasks, DefaultReplicationFactor, false},
		{"explicit zero", `{"rules":{"tasks":0,"replication_factor":0}}`, 0, 0, false},
		{"explicit negative", `{"rules":{"tasks":-3}}`, -3, DefaultReplicationFactor, false},
		{"explicit values", `{"rules":{"tasks":7,"replication_factor":3}}`, 7, 3, false},
		{"unknown rules field", `{"rules":{"taks":1}}`, 0, 0, true},
		{"unknown task field", `{"nmae":"x"}`, 0, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got Task
			err := json.Unmarshal([]byte(c.body), &got)
			if (err != nil) != c.wantErr {
				t.Fatalf("err %v, want error %v", err, c.wantErr)
			}
			if err == nil && (got.Rules.Tasks != c.wantTasks || got.Rules.ReplicationFactor != c.wantRF) {
				t.Fatalf("tasks %d replication factor %d, want %d %d", got.Rules.Tasks, got.Rules.ReplicationFactor, c.wantTasks, c.wantRF)
			}
		})
	}
}
