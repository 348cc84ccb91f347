package connectplan

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/task"
)

var registered = []Registered{{Name: "east", BootstrapServers: []string{"e1:9092", "e2:9092"}}, {Name: "west", BootstrapServers: []string{"w1:9092"}}}

// hand is an MM2 source connector as someone deploys it by hand, east A
// -> west B.
func hand(extra map[string]string) map[string]map[string]string {
	src := map[string]string{
		"connector.class":                  connect.MirrorSourceConnector,
		"source.cluster.alias":             "A",
		"target.cluster.alias":             "B",
		"source.cluster.bootstrap.servers": "e2:9092, e1:9092",
		"target.cluster.bootstrap.servers": "w1:9092",
		"topics":                           `orders,pay\.v1`,
		"tasks.max":                        "4",
		"key.converter":                    byteArrayConverter,
		"value.converter":                  byteArrayConverter,
		"header.converter":                 byteArrayConverter,
	}
	for k, v := range extra {
		if v == "" {
			delete(src, k)
		} else {
			src[k] = v
		}
	}
	return map[string]map[string]string{"mm2-src": src}
}

func adopt(configs map[string]map[string]string, current string) (task.Task, task.FieldErrors) {
	flows := GroupMM2(configs)
	if len(flows) != 1 {
		panic("want one flow")
	}
	return Adopt(AdoptInput{Flow: flows[0], Configs: configs, Clusters: registered, Name: "t1", Current: current, Engine: "embedded"})
}

func TestAdoptMapsEachSetting(t *testing.T) {
	base := task.Rules{Direction: task.DirectionPush, Topics: []string{"orders", "pay.v1"}, Tasks: 4, RenameTopics: true,
		ReplicationFactor: 2, StartOffset: task.StartEarliest, Compression: "none"}
	for _, tc := range []struct {
		name    string
		extra   map[string]string
		current string
		rules   func(r *task.Rules)
		check   func(t *testing.T, tk task.Task)
	}{
		{name: "defaults, current is the source: push", current: "east", rules: func(*task.Rules) {}},
		{name: "current is the target: pull", current: "west", rules: func(r *task.Rules) { r.Direction = task.DirectionPull },
			check: func(t *testing.T, tk task.Task) {
				if tk.Current != (task.Current{Cluster: "west", Alias: "B"}) || tk.Peer.Cluster != "east" || tk.Peer.Alias != "A" {
					t.Errorf("sides %+v %+v", tk.Current, tk.Peer)
				}
			}},
		{name: "no current given: the target's instance", rules: func(r *task.Rules) { r.Direction = task.DirectionPull }},
		{name: "identity policy", current: "east", extra: map[string]string{"replication.policy.class": identityPolicy},
			rules: func(r *task.Rules) { r.RenameTopics = false }},
		{name: "regex entries", current: "east", extra: map[string]string{"topics": `orders, pay\..*`},
			rules: func(r *task.Rules) { r.Topics, r.TopicsRegex = nil, `orders|pay\..*` }},
		{name: "unset topics: every topic", current: "east", extra: map[string]string{"topics": ""},
			rules: func(r *task.Rules) { r.Topics, r.TopicsRegex = nil, ".*" }},
		{name: "replication factor, compression, latest", current: "east",
			extra: map[string]string{"replication.factor": "3", "producer.override.compression.type": "zstd", "source.consumer.auto.offset.reset": "latest"},
			rules: func(r *task.Rules) { r.ReplicationFactor, r.Compression, r.StartOffset = 3, "zstd", task.StartLatest }},
		{name: "unregistered target: peer by address", current: "east", extra: map[string]string{"target.cluster.bootstrap.servers": "x1:9092,x2:9092"},
			rules: func(*task.Rules) {},
			check: func(t *testing.T, tk task.Task) {
				if tk.Peer.ConfigType != task.PeerByAddress || !reflect.DeepEqual(tk.Peer.Address, []string{"x1:9092", "x2:9092"}) {
					t.Errorf("peer %+v", tk.Peer)
				}
			}},
		{name: "unregistered SSL target with inline PEM: peer by address with its certificate", current: "east", extra: map[string]string{
			"target.cluster.bootstrap.servers": "x1:9093", "target.cluster.security.protocol": "SSL",
			"target.cluster.ssl.truststore.type": "PEM", "target.cluster.ssl.truststore.certificates": "CA-PEM",
			"target.cluster.ssl.keystore.type": "PEM", "target.cluster.ssl.keystore.certificate.chain": "CHAIN-PEM",
			"target.cluster.ssl.keystore.key": "KEY-PEM", "target.cluster.ssl.key.password": "kp"},
			rules: func(*task.Rules) {},
			check: func(t *testing.T, tk task.Task) {
				p := tk.Peer
				if p.ConfigType != task.PeerByAddress || p.SecurityProtocol != "SSL" || p.CAPEM != "CA-PEM" ||
					p.ClientCertPEM != "CHAIN-PEM" || p.ClientKeyPEM != "KEY-PEM" || p.ClientKeyPassword != "kp" {
					t.Errorf("peer %+v", p)
				}
			}},
		{name: "one shared broker matches", current: "east", extra: map[string]string{"source.cluster.bootstrap.servers": "e1:9092"}, rules: func(*task.Rules) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk, probs := adopt(hand(tc.extra), tc.current)
			if len(probs) > 0 {
				t.Fatalf("problems: %v", probs)
			}
			want := base
			tc.rules(&want)
			if !reflect.DeepEqual(tk.Rules, want) {
				t.Errorf("rules\n got %+v\nwant %+v", tk.Rules, want)
			}
			if tc.check != nil {
				tc.check(t, tk)
			}
		})
	}
}

func TestAdoptNamesWhatDoesNotMap(t *testing.T) {
	for _, tc := range []struct {
		name          string
		extra         map[string]string
		current       string
		field, saying string
	}{
		{"unknown policy", map[string]string{"replication.policy.class": "com.acme.Policy"}, "east", "replication.policy.class", "not one kmirror knows"},
		{"separator", map[string]string{"replication.policy.separator": "_"}, "east", "replication.policy.separator", "separator"},
		{"transforms", map[string]string{"transforms": "r", "transforms.r.type": "x"}, "east", "transforms", "transforms change records"},
		{"exclude", map[string]string{"topics.exclude": "secret.*"}, "east", "topics.exclude", "leaves out other topics"},
		{"string converter", map[string]string{"value.converter": "org.apache.kafka.connect.storage.StringConverter"}, "east", "value.converter", "byte for byte"},
		{"unknown setting", map[string]string{"producer.override.acks": "1"}, "east", "producer.override.acks", "no kmirror equivalent"},
		{"unknown secret setting, value not shown", map[string]string{"source.consumer.sasl.jaas.config": "x password=\"hunter2\";"}, "east", "source.consumer.sasl.jaas.config", "(value not shown)"},
		{"Java-only regex", map[string]string{"topics": `(?=a).*`}, "east", "topics", "does not read"},
		{"POSIX class", map[string]string{"topics": `[[:alpha:]]+`}, "east", "topics", "POSIX"},
		{"current neither side", nil, "south", "current", "neither side"},
		{"nothing registered", map[string]string{"source.cluster.bootstrap.servers": "q:1", "target.cluster.bootstrap.servers": "r:1"}, "", "current", "register one"},
		{"secured peer by address", map[string]string{"target.cluster.bootstrap.servers": "x:9093", "target.cluster.security.protocol": "SASL_SSL"}, "east", "target.cluster.security.protocol", "register that cluster"},
		{"peer keystore file", map[string]string{"target.cluster.bootstrap.servers": "x:9093", "target.cluster.security.protocol": "SSL",
			"target.cluster.ssl.keystore.location": "/etc/kafka/client.p12"}, "east", "target.cluster.ssl.keystore.location", "a file on the workers"},
		{"peer key as a reference", map[string]string{"target.cluster.bootstrap.servers": "x:9093", "target.cluster.security.protocol": "SSL",
			"target.cluster.ssl.keystore.type": "PEM", "target.cluster.ssl.keystore.certificate.chain": "C", "target.cluster.ssl.keystore.key": "${file:/s:key}"}, "east", "target.cluster.ssl.keystore.key", "config-provider reference"},
		{"peer PKCS12 inline", map[string]string{"target.cluster.bootstrap.servers": "x:9093", "target.cluster.security.protocol": "SSL",
			"target.cluster.ssl.keystore.type": "PKCS12"}, "east", "target.cluster.ssl.keystore.type", "only PEM"},
		{"bad tasks.max", map[string]string{"tasks.max": "zero"}, "east", "tasks.max", "positive"},
		{"bad offset reset", map[string]string{"source.consumer.auto.offset.reset": "none"}, "east", "source.consumer.auto.offset.reset", "earliest or latest"},
		{"custom filter", map[string]string{"topic.filter.class": "com.acme.F"}, "east", "topic.filter.class", "custom topic filter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, probs := adopt(hand(tc.extra), tc.current)
			for _, p := range probs {
				if p.Field == tc.field && strings.Contains(p.Message, tc.saying) {
					return
				}
			}
			t.Errorf("want a problem on %s saying %q, got %v", tc.field, tc.saying, probs)
		})
	}
}

func TestAdoptCheckpointConnector(t *testing.T) {
	cp := func(extra map[string]string) map[string]map[string]string {
		c := hand(nil)
		conf := map[string]string{"connector.class": connect.MirrorCheckpointConnector, "source.cluster.alias": "A", "target.cluster.alias": "B",
			"source.cluster.bootstrap.servers": "e1:9092,e2:9092", "target.cluster.bootstrap.servers": "w1:9092"}
		for k, v := range extra {
			conf[k] = v
		}
		c["mm2-cp"] = conf
		c["mm2-hb"] = map[string]string{"connector.class": connect.MirrorHeartbeatConnector, "source.cluster.alias": "A", "target.cluster.alias": "B",
			"emit.heartbeats.interval.seconds": "5"}
		return c
	}
	tk, probs := adopt(cp(map[string]string{"sync.group.offsets.enabled": "true"}), "east")
	if len(probs) > 0 || !tk.Rules.SyncConsumerOffsets {
		t.Fatalf("sync on: %v %v", tk.Rules.SyncConsumerOffsets, probs)
	}
	if f := GroupMM2(cp(nil))[0]; f.Checkpoint != "mm2-cp" || f.Heartbeat != "mm2-hb" || !reflect.DeepEqual(f.Connectors(), []string{"mm2-src", "mm2-cp", "mm2-hb"}) {
		t.Errorf("flow %+v", f)
	}
	for extra, field := range map[string]string{
		"sync.group.offsets.enabled=false": "sync.group.offsets.enabled",
		"groups=app-.*":                    "groups",
		"groups.exclude=app-.*":            "groups.exclude",
	} {
		k, v, _ := strings.Cut(extra, "=")
		_, probs := adopt(cp(map[string]string{k: v}), "east")
		found := false
		for _, p := range probs {
			found = found || p.Field == field
		}
		if !found {
			t.Errorf("%s: want a problem on %s, got %v", extra, field, probs)
		}
	}
	tk, probs = adopt(cp(map[string]string{"emit.checkpoints.enabled": "false"}), "east")
	if len(probs) > 0 || tk.Rules.SyncConsumerOffsets {
		t.Errorf("a checkpoint connector doing nothing: %v %v", tk.Rules.SyncConsumerOffsets, probs)
	}
}

// What Build deploys, renamed as if deployed by hand, adopts back as the
// task it was built from.
func TestAdoptReversesBuild(t *testing.T) {
	for _, mod := range []func(*task.Task){
		func(*task.Task) {},
		func(tk *task.Task) {
			tk.Rules.RenameTopics, tk.Rules.Topics, tk.Rules.TopicsRegex = false, nil, `pay\..*|orders`
			tk.Rules.SyncConsumerOffsets, tk.Rules.Compression, tk.Rules.ReplicationFactor = false, "lz4", 3
		},
		func(tk *task.Task) { tk.Rules.Direction = task.DirectionPull },
	} {
		want := baseTask()
		mod(&want)
		on := onWest
		on.OverridesAllowed = true
		cs, err := Build(want, east, west, on)
		if err != nil {
			t.Fatal(err)
		}
		configs := map[string]map[string]string{}
		for _, c := range cs {
			configs[strings.TrimPrefix(c.Name, "kmirror.")] = c.Config
		}
		flows := GroupMM2(configs)
		if len(flows) != 1 {
			t.Fatalf("flows %+v", flows)
		}
		got, probs := Adopt(AdoptInput{Flow: flows[0], Configs: configs, Clusters: registered, Name: want.Name, Current: "east", Engine: want.Engine})
		if len(probs) > 0 {
			t.Fatalf("problems: %v", probs)
		}
		got.Peer.Password = ""
		if !reflect.DeepEqual(got, want) {
			t.Errorf("adopted\n got %+v\nwant %+v", got, want)
		}
	}
}

func TestGroupMM2LeavesKmirrorsConnectorsOut(t *testing.T) {
	configs := hand(nil)
	configs["kmirror.t1.A-B.source"] = configs["mm2-src"]
	configs["other"] = map[string]string{"connector.class": "io.confluent.S3Sink"}
	configs["lone-hb"] = map[string]string{"connector.class": connect.MirrorHeartbeatConnector, "source.cluster.alias": "C", "target.cluster.alias": "D"}
	flows := GroupMM2(configs)
	if len(flows) != 2 || flows[0].Source != "mm2-src" || flows[1].Source != "" || flows[1].Heartbeat != "lone-hb" {
		t.Fatalf("flows %+v", flows)
	}
	if _, probs := Adopt(AdoptInput{Flow: flows[1], Configs: configs, Clusters: registered}); len(probs) == 0 {
		t.Error("a flow without a source connector adopted")
	}
}

func TestParseTopics(t *testing.T) {
	for _, tc := range []struct {
		in      string
		names   []string
		regex   string
		problem string
	}{
		{in: "a", names: []string{"a"}},
		{in: ` a , b\.c ,, a`, names: []string{"a", "b.c"}},
		{in: "", regex: ".*"},
		{in: "a.b", regex: "a.b"},
		{in: `a,b.*`, regex: `a|b.*`},
		{in: ",", problem: "only commas"},
		{in: `x++`, problem: "does not read"},
		{in: `a\z`, problem: "Java"},
	} {
		got, problem := ParseTopics(tc.in)
		if (problem != "") != (tc.problem != "") || !strings.Contains(problem, tc.problem) {
			t.Errorf("%q: problem %q, want %q", tc.in, problem, tc.problem)
			continue
		}
		if tc.problem == "" && (!reflect.DeepEqual(got.Names, tc.names) && !(len(got.Names) == 0 && len(tc.names) == 0) || got.Regex != tc.regex) {
			t.Errorf("%q: %+v, want names %v regex %q", tc.in, got, tc.names, tc.regex)
		}
	}
}

// Whatever MM2's topics list holds, ParseTopics selects the same topics
// MM2's filter does (each entry matching a whole name), or says why not.
func FuzzParseTopics(f *testing.F) {
	for _, s := range []string{"a", `a,b\.c`, "", ".*", `x,y.*, z`, "(a|b)", `a\z`, ",,", "[a-", "a{1,2}"} {
		f.Add(s, "a")
	}
	f.Fuzz(func(t *testing.T, list, topic string) {
		got, problem := ParseTopics(list)
		if problem != "" {
			return
		}
		if (got.Names == nil) == (got.Regex == "") {
			t.Fatalf("%q: names %v and regex %q: want exactly one", list, got.Names, got.Regex)
		}
		// MM2 (in Go's reading, where the syntax agrees): any entry
		// matches the whole name.
		mm2 := false
		entries := splitList(list)
		if strings.TrimSpace(list) == "" {
			entries = []string{".*"}
		}
		for _, e := range entries {
			re, err := regexp.Compile("^(?:" + e + ")$")
			if err != nil {
				return // a Java-only entry: not comparable here
			}
			mm2 = mm2 || re.MatchString(topic)
		}
		var ours bool
		if got.Regex != "" {
			ours = regexp.MustCompile("^(?:" + got.Regex + ")$").MatchString(topic)
		} else {
			for _, n := range got.Names {
				ours = ours || n == topic
			}
		}
		if ours != mm2 {
			t.Fatalf("list %q, topic %q: kmirror selects %v, MM2 %v (%+v)", list, topic, ours, mm2, got)
		}
	})
}

// pair is MM2 run both ways between east (A) and west (B): hand's A -> B
// and its mirror image B -> A, each with extra settings.
func pair(fwd, rev map[string]string) map[string]map[string]string {
	configs := hand(fwd)
	back := hand(map[string]string{"source.cluster.alias": "B", "target.cluster.alias": "A",
		"source.cluster.bootstrap.servers": "w1:9092", "target.cluster.bootstrap.servers": "e1:9092,e2:9092"})["mm2-src"]
	for k, v := range rev {
		if v == "" {
			delete(back, k)
		} else {
			back[k] = v
		}
	}
	configs["mm2-back"] = back
	return configs
}

func TestAdoptPair(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fwd, rev map[string]string
		current  string
		problems []string // fields
		sides    task.Current
	}{
		{name: "mirror images, current east", current: "east", sides: task.Current{Cluster: "east", Alias: "A"}},
		{name: "mirror images, current west", current: "west", sides: task.Current{Cluster: "west", Alias: "B"}},
		{name: "no current: the first flow's target for both", sides: task.Current{Cluster: "west", Alias: "B"}},
		{name: "rules differ", current: "east", rev: map[string]string{"tasks.max": "2", "topics": "orders"}, problems: []string{"topics", "tasks.max"}},
		{name: "another cluster back", current: "east", rev: map[string]string{"source.cluster.bootstrap.servers": "x9:9092"},
			problems: []string{"target.cluster.bootstrap.servers"}},
		{name: "a problem of the reverse names it", current: "east", rev: map[string]string{"transforms": "x"}, problems: []string{"transforms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			configs := pair(tc.fwd, tc.rev)
			flows := GroupMM2(configs)
			fwd := flows[0] // A -> B
			rev, ok := Reverse(fwd, flows)
			if !ok || rev.Source != "mm2-back" {
				t.Fatalf("reverse of %+v in %+v: %+v", fwd, flows, rev)
			}
			tk, probs := AdoptPair(AdoptInput{Flow: fwd, Configs: configs, Clusters: registered, Name: "t1", Current: tc.current, Engine: "embedded"}, rev)
			var fields []string
			for _, p := range probs {
				fields = append(fields, p.Field)
				if !strings.Contains(p.Message, "mm2-back") {
					t.Errorf("problem %s does not name the reverse connector: %s", p.Field, p.Message)
				}
			}
			if !reflect.DeepEqual(fields, tc.problems) {
				t.Fatalf("problems %v, want on %v: %v", fields, tc.problems, probs)
			}
			if len(tc.problems) > 0 {
				return
			}
			if tk.Rules.Direction != task.DirectionBidirectional || tk.Current != tc.sides || tk.Rules.Tasks != 4 || !tk.Rules.RenameTopics {
				t.Errorf("task %+v", tk)
			}
			names := []string{}
			for _, f := range tk.Flows() {
				names = append(names, f.Name())
			}
			if want := []string{fwd.SourceAlias + "->" + fwd.TargetAlias, rev.SourceAlias + "->" + rev.TargetAlias}; tc.sides.Alias == "B" {
				if !reflect.DeepEqual(names, []string{"B->A", "A->B"}) {
					t.Errorf("flows %v", names)
				}
			} else if !reflect.DeepEqual(names, want) {
				t.Errorf("flows %v, want %v", names, want)
			}
		})
	}
}

// Offset syncs stay where MirrorMaker 2 kept them (its default: the
// source), whichever side is current: the adopted task says so where
// kmirror's own layout would differ, and its connectors keep the location.
func TestAdoptKeepsTheOffsetSyncsWhereTheyWere(t *testing.T) {
	withCheckpoints := func(location string) map[string]map[string]string {
		c := hand(map[string]string{"offset-syncs.topic.location": location})
		c["mm2-cp"] = map[string]string{"connector.class": connect.MirrorCheckpointConnector, "source.cluster.alias": "A", "target.cluster.alias": "B",
			"source.cluster.bootstrap.servers": "e2:9092, e1:9092", "target.cluster.bootstrap.servers": "w1:9092",
			"sync.group.offsets.enabled": "true", "offset-syncs.topic.location": location}
		return c
	}
	for _, c := range []struct {
		name, location, current, rule, deployed string
	}{
		{"default, pull", "", "west", task.OffsetSyncsAtSource, "source"},
		{"default, push", "", "east", "", "source"},
		{"target, pull", "target", "west", "", "target"},
		{"target, push", "target", "east", task.OffsetSyncsAtTarget, "target"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tk, probs := adopt(withCheckpoints(c.location), c.current)
			if len(probs) > 0 {
				t.Fatalf("problems: %v", probs)
			}
			if !tk.Rules.SyncConsumerOffsets || tk.Rules.OffsetSyncsAt != c.rule {
				t.Fatalf("rules %+v, want offset syncs at %q", tk.Rules, c.rule)
			}
			tk.Engine = task.ConnectEngine("wc")
			cs, err := Build(tk, east, west, onWest)
			if err != nil {
				t.Fatal(err)
			}
			if got := byName(cs)["kmirror.t1.A-B.source"]["offset-syncs.topic.location"]; got != c.deployed {
				t.Fatalf("deployed offset-syncs.topic.location %q, want %q", got, c.deployed)
			}
		})
	}
	if _, probs := adopt(withCheckpoints("nowhere"), "west"); len(probs) == 0 || probs[0].Field != "offset-syncs.topic.location" {
		t.Fatalf("an unknown location: %v", probs)
	}
}

// Settings kmirror's connectors would not carry are problems naming them,
// where they change what the adopted copy does.
func TestAdoptSaysWhatItWouldNotCarry(t *testing.T) {
	for _, c := range []struct {
		name, engine string
		extra        map[string]string
		problem      string
	}{
		{"configs left alone", "embedded", map[string]string{"sync.topic.configs.enabled": "false"}, "sync.topic.configs.enabled"},
		{"finer syncs on Connect", "connect:wc", map[string]string{"offset.lag.max": "10"}, "offset.lag.max"},
		{"finer syncs, embedded: exact anyway", "embedded", map[string]string{"offset.lag.max": "10"}, ""},
		{"coarser syncs on Connect", "connect:wc", map[string]string{"offset.lag.max": "500"}, ""},
		{"configs synced", "connect:wc", map[string]string{"sync.topic.configs.enabled": "true"}, ""},
		{"no heartbeats", "embedded", map[string]string{"emit.heartbeats.enabled": "false"}, "emit.heartbeats.enabled"},
	} {
		t.Run(c.name, func(t *testing.T) {
			configs := hand(c.extra)
			_, probs := Adopt(AdoptInput{Flow: GroupMM2(configs)[0], Configs: configs, Clusters: registered, Name: "t1", Current: "east", Engine: c.engine})
			var fields []string
			for _, p := range probs {
				fields = append(fields, p.Field)
			}
			if c.problem == "" && len(probs) > 0 || c.problem != "" && (len(probs) != 1 || probs[0].Field != c.problem) {
				t.Fatalf("problems on %v (%v), want %q", fields, probs, c.problem)
			}
		})
	}
}
