package service_test

import (
	"context"
	"testing"

	"github.com/kmirror/kmirror/internal/account"
	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/kafkatest"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/service/servicetest"
)

// Kafka and Connect start only for the tests that ask for them (Lazy,
// LazyConnect); the in-process tests pay nothing. Test accounts' password
// hashes are cheap: these tests are about the service, not bcrypt.
func TestMain(m *testing.M) {
	account.UseTestHashCost()
	kafkatest.Main(m, 0)
}

// The check against real workers: one as the harness configures it
// (connector.client.config.override.policy=All), one with Connect's own
// default, None, which refuses what kmirror's connectors set.
func TestCheckConnectClusterOnRealConnect(t *testing.T) {
	kafka := kafkatest.Lazy(t, "kafka")
	for _, tc := range []struct {
		name      string
		opts      []kafkatest.ConnectOpt
		overrides bool
	}{
		{"harness", []kafkatest.ConnectOpt{kafkatest.Workers(1)}, true},
		{"none", []kafkatest.ConnectOpt{kafkatest.Workers(1),
			kafkatest.WorkerProps(map[string]string{"connector.client.config.override.policy": "None"})}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cc := kafkatest.LazyConnect(t, "check-"+tc.name, kafka, tc.opts...)
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("Connect worker logs:\n%s", cc.LogTails(40))
				}
			})
			ctx := context.Background()
			_, db, box := servicetest.OpenStore(t, "")
			svc, err := service.New(service.Deps{Clusters: db, Users: db, Secrets: box, ConnectClusters: db})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := svc.AddCluster(ctx, cluster.Settings{Name: "west", BootstrapServers: kafka.BootstrapServers(cluster.Plaintext)}); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.AddConnectCluster(ctx, service.ConnectClusterSettings{Name: "c1", URLs: cc.URLs(), KafkaCluster: "west"}); err != nil {
				t.Fatal(err)
			}
			res, err := svc.CheckConnectCluster(ctx, "c1")
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("check: %+v", res)
			if res.Version != cc.Version() || res.KafkaClusterID != kafka.ID() || res.OK != tc.overrides {
				t.Errorf("version %s, Kafka cluster id %s, ok %v; want %s, %s, %v", res.Version, res.KafkaClusterID, res.OK, cc.Version(), kafka.ID(), tc.overrides)
			}
			want := map[string]bool{service.ConnectCheckReachable: true, service.ConnectCheckMirrorPlugins: true, service.ConnectCheckClientOverrides: tc.overrides,
				service.ConnectCheckExactlyOnce: false} // the harness's workers run at least once
			for _, c := range res.Checks {
				if _, ok := want[c.Name]; !ok || c.OK != want[c.Name] || c.Skipped || c.Optional != (c.Name == service.ConnectCheckExactlyOnce) {
					t.Errorf("%s: %+v, want ok %v", c.Name, c, want[c.Name])
				}
			}
		})
	}
}
