package apitest

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
	"github.com/kmirror/kmirror/internal/task"
)

// peerByAddress is a task's peer reaching s by address, in the API's shape.
func peerByAddress(t *testing.T, alias string, s cluster.Settings) map[string]any {
	t.Helper()
	b, err := json.Marshal(task.Peer{Alias: alias, ConfigType: task.PeerByAddress}.WithSettings(s))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Tasks copy record by record over every way of reaching a cluster that
// needs more than a password: the current cluster registered with one, the
// peer given by address with another, pull, push and both ways. The
// connectivity check passes first; no secret reaches an answer or the log.
func TestTasksReplicateOverClientCertificatesAndOAuth(t *testing.T) {
	east, west := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	must := func(s cluster.Settings, err error) cluster.Settings {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	cases := []struct {
		name          string
		current, peer cluster.Settings
		direction     task.Direction
	}{
		{"pull: SSL certificate here, OAUTHBEARER over SASL_SSL there",
			must(east.SettingsWithCert(cluster.SSL, "")), must(west.SettingsOAuth(cluster.SASLSSL, kafkatest.AliceOAuth)), task.DirectionPull},
		{"push: OAUTHBEARER over SASL_PLAINTEXT here, SASL_SSL with a certificate there",
			must(east.SettingsOAuth(cluster.SASLPlaintext, kafkatest.AliceOAuth)), must(west.SettingsWithCert(kafkatest.ListenerMTLS, cluster.MechanismSCRAMSHA512)), task.DirectionPush},
		{"bidirectional: SSL certificate here, OAUTHBEARER and a certificate there",
			must(east.SettingsWithCert(cluster.SSL, "")), oauthWithCert(t, west), task.DirectionBidirectional},
	}
	for _, tc := range cases {
		t.Run(string(tc.direction), func(t *testing.T) {
			t.Logf("%s", tc.name)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			s := newServer(t)
			s.register("east", tc.current)
			name := "sec-" + string(tc.direction)

			// What flows: east's topic to west (push, both), west's to east
			// (pull, both); renamed by the source alias.
			type flow struct {
				src, dst       cluster.Settings
				srcTopic, dstT string
				srcAlias       string
			}
			var flows []flow
			var topics []string
			if tc.direction != task.DirectionPull {
				tp := kafkatest.NewTopic(t, east, 3, nil)
				flows = append(flows, flow{tc.current, tc.peer, tp, "A." + tp, "A"})
				topics = append(topics, tp)
			}
			if tc.direction != task.DirectionPush {
				tp := kafkatest.NewTopic(t, west, 3, nil)
				flows = append(flows, flow{tc.peer, tc.current, tp, "B." + tp, "B"})
				topics = append(topics, tp)
			}
			const n = 1500
			for _, f := range flows {
				if _, err := e2e.Produce(ctx, f.src, f.srcTopic, 3, n, 100); err != nil {
					t.Fatal(err)
				}
			}
			body := map[string]any{
				"name": name, "type": "kafka-replication",
				"current": map[string]any{"cluster": "east", "alias": "A"},
				"peer":    peerByAddress(t, "B", tc.peer),
				"rules": map[string]any{"direction": tc.direction, "topics": topics, "tasks": 2, "rename_topics": true,
					"add_source_header": true, "start_offset": "earliest", "compression": "lz4"},
			}
			var answers []string
			code, res := s.call(http.MethodPost, "/api/v1/connectivity", body)
			raw, _ := json.Marshal(res)
			answers = append(answers, string(raw))
			if code != http.StatusOK || res["ok"] != true {
				t.Fatalf("connectivity: %d %s", code, raw)
			}
			code, res = s.call(http.MethodPost, "/api/v1/tasks", body)
			raw, _ = json.Marshal(res)
			answers = append(answers, string(raw))
			if code != http.StatusCreated {
				t.Fatalf("create: %d %s", code, raw)
			}
			for _, f := range flows {
				if _, err := e2e.WaitFor(ctx, f.dst, f.dstT, n, nil); err != nil {
					_, st := s.call(http.MethodGet, "/api/v1/tasks/"+name, nil)
					t.Fatalf("wait for %s: %v\nstatus: %v", f.dstT, err, st)
				}
				r, err := e2e.Verify(ctx, f.src, f.srcTopic, f.dst, f.dstT, e2e.VerifyOptions{SourceAlias: f.srcAlias})
				if err != nil {
					t.Fatal(err)
				}
				if !r.OK() {
					t.Fatalf("%s: %v", f.dstT, r)
				}
				t.Logf("%s: %v", f.dstT, r)
			}
			code, res = s.call(http.MethodGet, "/api/v1/tasks/"+name, nil)
			raw, _ = json.Marshal(res)
			answers = append(answers, string(raw))
			if st, _ := res["status"].(map[string]any); code != http.StatusOK || st["state"] != "RUNNING" {
				t.Fatalf("status: %d %s", code, raw)
			}
			_, res = s.call(http.MethodGet, "/api/v1/clusters/east", nil)
			raw, _ = json.Marshal(res)
			answers = append(answers, string(raw))

			secrets := append(secretsOf(tc.current), secretsOf(tc.peer)...)
			for _, a := range answers {
				for _, sec := range secrets {
					if strings.Contains(a, sec) {
						t.Fatalf("an answer holds a secret: %s", a)
					}
				}
			}
			for _, sec := range secrets {
				if strings.Contains(s.logs.String(), sec) {
					t.Fatal("the log holds a secret")
				}
			}
		})
	}
}

// oauthWithCert reaches c's MTLS listener with OAUTHBEARER and Alice's
// certificate.
func oauthWithCert(t *testing.T, c *kafkatest.Cluster) cluster.Settings {
	t.Helper()
	s, err := c.SettingsWithCert(kafkatest.ListenerMTLS, cluster.MechanismOAuthBearer)
	if err != nil {
		t.Fatal(err)
	}
	o, err := c.SettingsOAuth(cluster.SASLSSL, kafkatest.AliceOAuth)
	if err != nil {
		t.Fatal(err)
	}
	s.Username, s.Password, s.OAuth = "", "", o.OAuth
	return s
}

// secretsOf are the secret values of s to look for in answers and logs: a
// key is looked for by a line of its base64.
func secretsOf(s cluster.Settings) []string {
	x := s.Secrets()
	key := x.ClientKeyPEM
	x.ClientKeyPEM = ""
	out := x.Values()
	if lines := strings.Split(key, "\n"); len(lines) > 2 {
		out = append(out, lines[1])
	}
	return out
}

// A task whose source refuses its client certificate, or whose token
// endpoint refuses its secret, shows FAILED with the reason and its kind
// within seconds: not a hung task or a healthy-looking stall. (Creating a
// task already refuses a peer it cannot reach; the source, a registered
// cluster, is first reached when the task runs.)
func TestTaskFailsNamingARefusedCertificateOrToken(t *testing.T) {
	east, west := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	other, err := kafkatest.NewCA("another CA", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := other.ClientCert(kafkatest.Alice)
	if err != nil {
		t.Fatal(err)
	}
	badCert, err := east.SettingsWithCert(cluster.SSL, "")
	if err != nil {
		t.Fatal(err)
	}
	badCert.ClientCertPEM, badCert.ClientKeyPEM = foreign.ChainPEM, foreign.KeyPEM
	badSecret, err := east.SettingsOAuth(cluster.SASLSSL, kafkatest.AliceOAuth)
	if err != nil {
		t.Fatal(err)
	}
	badSecret.OAuth.ClientSecret = "not-the-secret"
	for _, tc := range []struct {
		name, kind string
		current    cluster.Settings
		says       []string
	}{
		{"certificate", "certificate", badCert, []string{"did not accept the client certificate", "CN=alice"}},
		{"token", "credentials", badSecret, []string{"could not get an OAuth token", "invalid_client"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			s := newServer(t)
			s.register("east", tc.current)
			topic := kafkatest.NewTopic(t, east, 1, nil)
			name := "refused-" + tc.name
			body := map[string]any{
				"name": name, "type": "kafka-replication",
				"current": map[string]any{"cluster": "east", "alias": "A"},
				"peer":    peerByAddress(t, "B", west.Settings(cluster.Plaintext, "")),
				"rules": map[string]any{"direction": "push", "topics": []string{topic}, "tasks": 1, "rename_topics": true,
					"start_offset": "earliest", "compression": "none"},
			}
			if code, res := s.call(http.MethodPost, "/api/v1/tasks", body); code != http.StatusCreated {
				t.Fatalf("create: %d %v", code, res)
			}
			var last map[string]any
			for ctx.Err() == nil {
				_, last = s.call(http.MethodGet, "/api/v1/tasks/"+name, nil)
				st, _ := last["status"].(map[string]any)
				flows, _ := st["flows"].([]any)
				if st["state"] == "FAILED" && len(flows) == 1 {
					f := flows[0].(map[string]any)
					reason := st["reason"].(string) + " " + f["reason"].(string)
					for _, w := range tc.says {
						if !strings.Contains(reason, w) {
							t.Fatalf("reason %q does not say %q", reason, w)
						}
					}
					if f["error_kind"] != tc.kind {
						t.Fatalf("error kind %v, want %s", f["error_kind"], tc.kind)
					}
					t.Logf("FAILED: %s", reason)
					return
				}
				time.Sleep(500 * time.Millisecond)
			}
			t.Fatalf("no FAILED status naming the cause: %v", last)
		})
	}
}

// One-minute OAuth tokens under a copy of two and a half minutes: tokens
// are fetched again before they end and connections re-authenticate
// (the brokers end a session with its token), so every record is copied
// once, in order, with no restart of the flow. It counts its own client's
// tokens, and it is 150 s of waiting at 60 records a second: it runs in the
// package's parallel phase, which starts after the sequential Connect tests
// (about 600 s in CI), when the replicator package's load-sensitive tests
// have ended (see TestPlannedSwitchoverOnConnect for when they did not).
func TestShortLivedTokensUnderALongCopy(t *testing.T) {
	if testing.Short() {
		t.Skip("a 150 s copy: the full run's")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	east, west := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	current, err := east.SettingsOAuth(cluster.SASLSSL, kafkatest.AliceShortOAuth)
	if err != nil {
		t.Fatal(err)
	}
	peer, err := west.SettingsOAuth(cluster.SASLPlaintext, kafkatest.AliceShortOAuth)
	if err != nil {
		t.Fatal(err)
	}
	idp, err := kafkatest.Identity()
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(t)
	s.register("east", current)
	topic := kafkatest.NewTopic(t, east, 3, nil)
	name := "short-tokens"
	body := map[string]any{
		"name": name, "type": "kafka-replication",
		"current": map[string]any{"cluster": "east", "alias": "A"},
		"peer":    peerByAddress(t, "B", peer),
		"rules": map[string]any{"direction": "push", "topics": []string{topic}, "tasks": 2, "rename_topics": true,
			"start_offset": "earliest", "compression": "lz4"},
	}
	if code, res := s.call(http.MethodPost, "/api/v1/tasks", body); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, res)
	}
	issuedBefore := idp.IssuedTo(kafkatest.AliceShortOAuth.ID)
	// 150 rounds of 60 records a second: bounded in count (9,000) and time.
	const rounds, perRound = 150, 60
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for i := range rounds {
		if _, err := e2e.Produce(ctx, east.Settings(cluster.Plaintext, ""), topic, 3, perRound, 100); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		<-tick.C
	}
	if _, err := e2e.WaitFor(ctx, peer, "A."+topic, rounds*perRound, nil); err != nil {
		_, st := s.call(http.MethodGet, "/api/v1/tasks/"+name, nil)
		t.Fatalf("wait for the copy: %v\nstatus: %v", err, st)
	}
	rep, err := e2e.Verify(ctx, east.Settings(cluster.Plaintext, ""), topic, peer, "A."+topic, e2e.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("copy under short-lived tokens: %v", rep)
	}
	_, res := s.call(http.MethodGet, "/api/v1/tasks/"+name, nil)
	st, _ := res["status"].(map[string]any)
	flows, _ := st["flows"].([]any)
	if st["state"] != "RUNNING" || len(flows) != 1 {
		t.Fatalf("status: %v", res)
	}
	f := flows[0].(map[string]any)
	if f["restarts"] != float64(0) || f["recopied"] != float64(0) {
		t.Fatalf("the flow restarted %v times, recopied %v records: re-authentication must not cost a restart", f["restarts"], f["recopied"])
	}
	// Every client (both sides, admin, consumers, producers) asked for a
	// new token at least once during the copy.
	issued := idp.IssuedTo(kafkatest.AliceShortOAuth.ID) - issuedBefore
	if issued < 4 {
		t.Fatalf("%d tokens issued during a 150 s copy with 60 s tokens: they were not refreshed", issued)
	}
	t.Logf("%v; %d tokens issued during the copy, 0 restarts", rep, issued)
}
