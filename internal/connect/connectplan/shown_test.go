package connectplan

import (
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/connect/connecttest"
)

func TestShowSettingHidesEveryCredential(t *testing.T) {
	for k, v := range connecttest.Credentials("s3cr3t", "A.", "B.") {
		got := ShowSetting(k, v)
		if strings.Contains(got, "s3cr3t") || !strings.Contains(got, "(value not shown)") || !strings.HasPrefix(got, k) {
			t.Errorf("%s: shown as %q", k, got)
		}
	}
	// Keys that only start like harmless ones, or put a harmless family
	// after a first segment, stay hidden.
	for _, k := range []string{"emit.secret", "refresh.token", "sasl.emit.password", "s3.errors.password", "errors.deadletterqueue.context.password"} {
		if got := ShowSetting(k, "s3cr3t"); strings.Contains(got, "s3cr3t") {
			t.Errorf("%s: shown as %q", k, got)
		}
	}
	for _, tc := range []struct{ key, value string }{
		{"topics", "orders|payments"},
		{"tasks.max", "4"},
		{"source.cluster.bootstrap.servers", "a:9092"},
		{"target.producer.compression.type", "zstd"},
		{"producer.override.linger.ms", "5"},
		{"A.bootstrap.servers", "a:9092"},
		{"A->B.topics", "orders"},
		{"refresh.topics.interval.seconds", "60"},
		{"source.cluster.ssl.truststore.type", "PEM"},
	} {
		if got := ShowSetting(tc.key, tc.value); !strings.Contains(got, tc.value) {
			t.Errorf("%s: a harmless value hidden: %q", tc.key, got)
		}
	}
}

// The adoption's problems never carry a credential's value, whatever the
// connector holds.
func TestAdoptionNeverShowsACredential(t *testing.T) {
	src := map[string]string{
		"connector.class":                  "org.apache.kafka.connect.mirror.MirrorSourceConnector",
		"source.cluster.alias":             "A",
		"target.cluster.alias":             "B",
		"source.cluster.bootstrap.servers": "e1:9092,e2:9092",
		"target.cluster.bootstrap.servers": "w1:9092",
		"topics":                           "orders",
	}
	for k, v := range connecttest.Credentials("s3cr3t", "A.", "B.") {
		src[k] = v
	}
	_, problems := Adopt(AdoptInput{Flow: MM2Flow{SourceAlias: "A", TargetAlias: "B", Source: "mm2-src"},
		Configs: map[string]map[string]string{"mm2-src": src}, Clusters: []Registered{{Name: "east", BootstrapServers: []string{"e1:9092", "e2:9092"}},
			{Name: "west", BootstrapServers: []string{"w1:9092"}}}, Name: "adopted", Current: "east", Engine: "embedded"})
	if len(problems) == 0 {
		t.Fatal("no problem named: the secrets were taken silently")
	}
	for _, p := range problems {
		if strings.Contains(p.Message, "s3cr3t") {
			t.Errorf("%s: %s", p.Field, p.Message)
		}
	}
}
