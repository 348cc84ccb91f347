package service_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/connect/connecttest"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/service/servicetest"
)

// connectCheckService is a service with the Kafka cluster west registered,
// for Connect clusters that write to it.
func connectCheckService(t *testing.T) *service.Service {
	t.Helper()
	_, db, box := servicetest.OpenStore(t, "")
	svc, err := service.New(service.Deps{Clusters: db, Users: db, Secrets: box, ConnectClusters: db})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AddCluster(context.Background(), cluster.Settings{Name: "west", BootstrapServers: []string{"127.0.0.1:9092"}}); err != nil {
		t.Fatal(err)
	}
	return svc
}

func TestCheckConnectCluster(t *testing.T) {
	type verdict struct{ ok, skipped, optional bool }
	tests := []struct {
		name    string
		urls    func(t *testing.T) []string
		ok      bool
		workers []bool // each URL's ok
		checks  map[string]verdict
		// texts each appear in the named check's verdict or fix.
		texts map[string][]string
	}{
		{
			name: "all fine",
			urls: func(t *testing.T) []string {
				return []string{connecttest.Start(t, connecttest.Worker{}), connecttest.Start(t, connecttest.Worker{})}
			},
			ok: true, workers: []bool{true, true},
			checks: map[string]verdict{"reachable": {ok: true}, "mirror_plugins": {ok: true}, "client_overrides": {ok: true}, "exactly_once": {optional: true}},
			texts: map[string][]string{"reachable": {"2 of 2 workers answer (Kafka Connect 4.1.0)"},
				"exactly_once": {"do not run exactly-once source connectors", "exactly-once source support", "at_least_once tasks only", "exactly.once.source.support=preparing"}},
		},
		{
			name: "exactly once",
			urls: func(t *testing.T) []string {
				return []string{connecttest.Start(t, connecttest.Worker{ExactlyOnce: true})}
			},
			ok: true, workers: []bool{true},
			checks: map[string]verdict{"reachable": {ok: true}, "mirror_plugins": {ok: true}, "client_overrides": {ok: true}, "exactly_once": {ok: true, optional: true}},
			texts:  map[string][]string{"exactly_once": {"exactly_once tasks can run here"}},
		},
		{
			name:    "unreachable",
			urls:    func(t *testing.T) []string { return []string{connecttest.DeadURL(t), connecttest.DeadURL(t)} },
			workers: []bool{false, false},
			checks:  map[string]verdict{"reachable": {}, "mirror_plugins": {skipped: true}, "client_overrides": {skipped: true}, "exactly_once": {skipped: true}},
			texts:   map[string][]string{"reachable": {"no worker answers", "that the worker runs"}},
		},
		{
			name: "one of two unreachable",
			urls: func(t *testing.T) []string {
				return []string{connecttest.DeadURL(t), connecttest.Start(t, connecttest.Worker{})}
			},
			ok: true, workers: []bool{false, true},
			checks: map[string]verdict{"reachable": {ok: true}, "mirror_plugins": {ok: true}, "client_overrides": {ok: true}, "exactly_once": {optional: true}},
			texts:  map[string][]string{"reachable": {"1 of 2 workers answer", "start the workers that do not answer"}},
		},
		{
			name: "credentials wanted",
			urls: func(t *testing.T) []string {
				return []string{connecttest.Start(t, connecttest.Worker{Status: http.StatusUnauthorized})}
			},
			workers: []bool{false},
			checks:  map[string]verdict{"reachable": {}, "mirror_plugins": {skipped: true}, "client_overrides": {skipped: true}, "exactly_once": {skipped: true}},
			texts:   map[string][]string{"reachable": {"user name and password, bearer token or client certificate"}},
		},
		{
			name: "workers of two Kafka clusters",
			urls: func(t *testing.T) []string {
				return []string{connecttest.Start(t, connecttest.Worker{KafkaClusterID: "a"}), connecttest.Start(t, connecttest.Worker{KafkaClusterID: "b"})}
			},
			workers: []bool{true, true},
			checks:  map[string]verdict{"reachable": {}, "mirror_plugins": {ok: true}, "client_overrides": {ok: true}, "exactly_once": {optional: true}},
			texts:   map[string][]string{"reachable": {"different Kafka clusters (a, b)"}},
		},
		{
			name: "plugins missing",
			urls: func(t *testing.T) []string {
				return []string{connecttest.Start(t, connecttest.Worker{Plugins: []string{connect.MirrorSourceConnector}})}
			},
			workers: []bool{true},
			checks:  map[string]verdict{"reachable": {ok: true}, "mirror_plugins": {}, "client_overrides": {skipped: true}, "exactly_once": {skipped: true}},
			texts:   map[string][]string{"mirror_plugins": {"missing: MirrorCheckpointConnector, MirrorHeartbeatConnector", "plugin.path"}},
		},
		{
			name: "no MirrorSourceConnector",
			urls: func(t *testing.T) []string {
				return []string{connecttest.Start(t, connecttest.Worker{Plugins: []string{}})}
			},
			workers: []bool{true},
			checks:  map[string]verdict{"reachable": {ok: true}, "mirror_plugins": {}, "client_overrides": {skipped: true}, "exactly_once": {skipped: true}},
			texts:   map[string][]string{"mirror_plugins": {"MirrorSourceConnector, MirrorCheckpointConnector, MirrorHeartbeatConnector"}},
		},
		{
			name: "overrides refused",
			urls: func(t *testing.T) []string {
				return []string{connecttest.Start(t, connecttest.Worker{RefuseOverrides: true})}
			},
			workers: []bool{true},
			checks:  map[string]verdict{"reachable": {ok: true}, "mirror_plugins": {ok: true}, "client_overrides": {}, "exactly_once": {optional: true}},
			texts: map[string][]string{"client_overrides": {"refuse", "'None' policy does not allow 'linger.ms'",
				"connector.client.config.override.policy=All"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			svc := connectCheckService(t)
			urls := tt.urls(t)
			if _, err := svc.AddConnectCluster(ctx, service.ConnectClusterSettings{Name: "c1", URLs: urls, KafkaCluster: "west"}); err != nil {
				t.Fatal(err)
			}
			res, err := svc.CheckConnectCluster(ctx, "c1")
			if err != nil {
				t.Fatal(err)
			}
			if res.OK != tt.ok || res.Name != "c1" || res.KafkaCluster != "west" {
				t.Errorf("ok = %v, name %q, kafka cluster %q; want ok %v", res.OK, res.Name, res.KafkaCluster, tt.ok)
			}
			if len(res.Workers) != len(tt.workers) {
				t.Fatalf("workers = %+v, want %d", res.Workers, len(tt.workers))
			}
			for i, w := range res.Workers {
				if w.URL != urls[i] || w.OK != tt.workers[i] || (w.OK == (w.Error != "")) {
					t.Errorf("worker %d = %+v, want %s ok %v (an error exactly when not ok)", i, w, urls[i], tt.workers[i])
				}
			}
			if len(res.Checks) != 4 {
				t.Fatalf("checks = %+v, want 4", res.Checks)
			}
			for _, c := range res.Checks {
				want, ok := tt.checks[c.Name]
				if !ok {
					t.Errorf("unexpected check %q", c.Name)
					continue
				}
				if c.OK != want.ok || c.Skipped != want.skipped || c.Optional != want.optional || c.Verdict == "" {
					t.Errorf("%s = %+v, want ok %v skipped %v optional %v and a verdict", c.Name, c, want.ok, want.skipped, want.optional)
				}
				if !c.OK && !c.Skipped && c.Fix == "" {
					t.Errorf("%s failed without saying what to do: %+v", c.Name, c)
				}
				for _, s := range tt.texts[c.Name] {
					if !strings.Contains(c.Verdict+" "+c.Fix, s) {
						t.Errorf("%s = %q / %q, want it to say %q", c.Name, c.Verdict, c.Fix, s)
					}
				}
			}
		})
	}
}

func TestCheckConnectClusterAccess(t *testing.T) {
	ctx := context.Background()
	svc := connectCheckService(t)
	if _, err := svc.CheckConnectCluster(ctx, "nope"); !service.IsCode(err, service.CodeNotFound) {
		t.Fatalf("unknown: %v, want not found", err)
	}
	url := connecttest.Start(t, connecttest.Worker{})
	if _, err := svc.AddConnectCluster(ctx, service.ConnectClusterSettings{Name: "c1", URLs: []string{url}, KafkaCluster: "west"}); err != nil {
		t.Fatal(err)
	}
	// Whoever may see the cluster may check it.
	viewer := service.WithActor(ctx, service.Actor{Name: "v", Role: service.RoleViewer})
	if res, err := svc.CheckConnectCluster(viewer, "c1"); err != nil || !res.OK {
		t.Fatalf("viewer: %+v, %v", res, err)
	}
	stranger := service.WithActor(ctx, service.Actor{Name: "x", Role: "nobody"})
	if _, err := svc.CheckConnectCluster(stranger, "c1"); !service.IsCode(err, service.CodeForbidden) {
		t.Fatalf("unknown role: %v, want forbidden", err)
	}
}
