package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/connect/connecttest"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// serveDemo runs `kmirror serve --demo` and returns its URL.
func serveDemo(t *testing.T) (base string, stderr *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout syncBuffer
	stderr = &syncBuffer{}
	env := map[string]string{"KMIRROR_ADMIN_PASSWORD": "demo-password-1", "KMIRROR_TOKEN": testToken}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--demo"},
			func(k string) string { return env[k] }, &stdout, stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	})
	checkFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		select {
		case err := <-done:
			t.Fatalf("serve ended early: %v\n%s", err, stderr.String())
		default:
		}
		if base = regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(stdout.String()); base == "" {
			return errString("no URL printed yet")
		}
		return nil
	})
	return base, stderr
}

// cli runs an admin command against base with the test token.
func cli(t *testing.T, base string, args ...string) (string, error) {
	t.Helper()
	return cliEnv(t, base, nil, args...)
}

// cliEnv is cli with more environment variables set.
func cliEnv(t *testing.T, base string, env map[string]string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append(args, "--server", base)
	err := run(context.Background(), args, func(k string) string {
		if k == "KMIRROR_TOKEN" {
			return testToken
		}
		return env[k]
	}, &out, &errOut)
	return out.String() + errOut.String(), err
}

// serve --demo stores the demo task like any other, and the admin commands
// see and steer it over the JSON API.
func TestAdminCommandsOnTheDemoTask(t *testing.T) {
	base, _ := serveDemo(t)
	out, err := cli(t, base, "instance", "list")
	if err != nil || !strings.Contains(out, "east") || !strings.Contains(out, "1/18") {
		t.Fatalf("instance list: %v\n%s", err, out)
	}
	checkFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		out, err := cli(t, base, "task", "list")
		if err != nil {
			return err
		}
		if !regexp.MustCompile(`demo-orders\s+east \(A\)\s+push\s+west \(B\)\s+embedded\s+RUNNING\s+[1-9]`).MatchString(out) {
			return errString("demo task not replicating yet:\n" + out)
		}
		return nil
	})
	if out, err := cli(t, base, "task", "pause", "demo-orders"); err != nil || !strings.Contains(out, "PAUSED") {
		t.Fatalf("pause: %v\n%s", err, out)
	}
	if out, err := cli(t, base, "task", "show", "demo-orders", "-o", "json"); err != nil || !strings.Contains(out, `"desired_state": "paused"`) {
		t.Fatalf("show: %v\n%s", err, out)
	}
	if out, err := cli(t, base, "task", "resume", "demo-orders"); err != nil || !strings.Contains(out, "demo-orders") {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	out, err = cli(t, base, "instance", "remove", "east")
	if err == nil || !strings.Contains(err.Error(), "cluster_in_use") {
		t.Fatalf("remove an instance in use: %v\n%s", err, out)
	}
	out, err = cli(t, base, "task", "show", "nope")
	if err == nil || !strings.Contains(err.Error(), "not_found") {
		t.Fatalf("show unknown: %v\n%s", err, out)
	}
	var noToken bytes.Buffer
	err = run(context.Background(), []string{"task", "list", "--server", base}, func(string) string { return "" }, &noToken, &noToken)
	if err == nil || !strings.Contains(err.Error(), "KMIRROR_TOKEN") {
		t.Fatalf("without a token: %v", err)
	}
	// A viewer's token reads but cannot steer: the CLI hears the API's 403.
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/tokens", strings.NewReader(`{"name":"dash","role":"viewer"}`))
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var created struct{ Token string }
	if err := json.NewDecoder(resp.Body).Decode(&created); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create a viewer token: %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	asViewer := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(context.Background(), append(args, "--server", base), func(k string) string {
			if k == "KMIRROR_TOKEN" {
				return created.Token
			}
			return ""
		}, &out, &out)
		return out.String(), err
	}
	if out, err := asViewer("task", "list"); err != nil || !strings.Contains(out, "demo-orders") {
		t.Fatalf("viewer task list: %v\n%s", err, out)
	}
	if out, err := asViewer("task", "pause", "demo-orders"); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("viewer pause: %v\n%s", err, out)
	}
	if out, err := cli(t, base, "task", "delete", "demo-orders"); err != nil || !strings.Contains(out, "deleted") {
		t.Fatalf("delete: %v\n%s", err, out)
	}
}

func TestUserAndTokenCommands(t *testing.T) {
	base, _ := serveDemo(t)
	old := stdin
	t.Cleanup(func() { stdin = old })
	stdin = strings.NewReader("olga-password-1\n")
	if out, err := cli(t, base, "user", "add", "--name", "olga", "--role", "operator"); err != nil || !strings.Contains(out, "olga added as operator") {
		t.Fatalf("user add: %v\n%s", err, out)
	}
	if out, err := cli(t, base, "user", "list"); err != nil || !regexp.MustCompile(`olga\s+operator`).MatchString(out) {
		t.Fatalf("user list: %v\n%s", err, out)
	}
	stdin = strings.NewReader("short\n")
	if out, err := cli(t, base, "user", "add", "--name", "ines"); err == nil || !strings.Contains(err.Error(), "password") {
		t.Fatalf("short password: %v\n%s", err, out)
	}
	out, err := cli(t, base, "token", "create", "--name", "ci", "--role", "viewer")
	tok := strings.TrimSpace(out)
	if err != nil || !strings.HasPrefix(tok, "kmirror_") || strings.Contains(tok, "\n") {
		t.Fatalf("token create: %v\n%s", err, out)
	}
	if out, err := cli(t, base, "token", "list"); err != nil || !regexp.MustCompile(`ci\s+viewer`).MatchString(out) || strings.Contains(out, tok) {
		t.Fatalf("token list: %v\n%s", err, out)
	}
	if out, err := cli(t, base, "token", "revoke", "ci"); err != nil || !strings.Contains(out, "revoked") {
		t.Fatalf("token revoke: %v\n%s", err, out)
	}
	if out, err := cli(t, base, "user", "remove", "olga"); err != nil || !strings.Contains(out, "removed") {
		t.Fatalf("user remove: %v\n%s", err, out)
	}
}

// A task exported from the console (its password masked) and created again
// with the CLI is refused, asking for the password, as the console does.
func TestCLIRefusesAMaskedPassword(t *testing.T) {
	base, _ := serveDemo(t)
	exported := `{"name": "from-export", "type": "kafka-replication",
	  "current": {"cluster": "east", "alias": "A"},
	  "peer": {"alias": "C", "config_type": "address", "address": ["127.0.0.1:9"], "security_protocol": "SASL_PLAINTEXT",
	           "sasl_mechanism": "PLAIN", "username": "u", "password": "********"},
	  "rules": {"direction": "push", "topics": ["orders-copy"]}}`
	path := filepath.Join(t.TempDir(), "task.json")
	if err := os.WriteFile(path, []byte(exported), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := cli(t, base, "task", "create", "-f", path)
	if err == nil || !strings.Contains(err.Error()+out, "peer.password") || !strings.Contains(err.Error()+out, "masked") {
		t.Fatalf("create from a masked export: %v\n%s", err, out)
	}
}

// Connect clusters and an instance's Smart Connect switch, over the CLI.
func TestConnectClusterCommands(t *testing.T) {
	base, _ := serveDemo(t)
	if out, err := cli(t, base, "connect-cluster", "add", "--name", "c 1", "--url", "ftp://h", "--kafka-cluster", "west"); err == nil ||
		!strings.Contains(err.Error(), "name:") || !strings.Contains(err.Error(), "urls:") {
		t.Fatalf("bad add: %v\n%s", err, out)
	}
	out, err := cli(t, base, "connect-cluster", "add", "--name", "c1", "--url", "http://127.0.0.1:8083,http://127.0.0.1:8084", "--kafka-cluster", "west")
	if err != nil || !strings.Contains(out, "c1") || !strings.Contains(out, "west") {
		t.Fatalf("add: %v\n%s", err, out)
	}
	if out, err := cli(t, base, "connect-cluster", "list"); err != nil || !strings.Contains(out, "http://127.0.0.1:8084") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	if out, err := cli(t, base, "connect-cluster", "adopt", "c1", "--task", "t1"); err == nil || !strings.Contains(err.Error(), "--connector") {
		t.Fatalf("adopt without --connector: %v\n%s", err, out)
	}
	if out, err := cli(t, base, "connect-cluster", "mm2", "nope"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("mm2 of an unregistered Connect cluster: %v\n%s", err, out)
	}
	if out, err := cli(t, base, "instance", "smart-connect", "west", "--enable", "--engine", "connect:c1", "-o", "json"); err != nil || !strings.Contains(out, `"connect:c1"`) {
		t.Fatalf("smart-connect: %v\n%s", err, out)
	}
	if out, err := cli(t, base, "connect-cluster", "remove", "c1"); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("remove while the default engine: %v\n%s", err, out)
	}
	if _, err := cli(t, base, "instance", "smart-connect", "west", "--enable"); err != nil {
		t.Fatal(err)
	}
	if out, err := cli(t, base, "connect-cluster", "remove", "c1"); err != nil {
		t.Fatalf("remove: %v\n%s", err, out)
	}
	if out, err := cli(t, base, "connect-cluster", "show", "c1"); err == nil {
		t.Fatalf("show after remove: %s", out)
	}
}

// connect-cluster check prints every verdict and fails a script when the
// Connect cluster is not usable.
func TestConnectClusterCheckCommand(t *testing.T) {
	base, _ := serveDemo(t)
	for _, tc := range []struct {
		name   string
		worker connecttest.Worker
		ok     bool
		want   []string
	}{
		{"good", connecttest.Worker{}, true, []string{"reachable", "ok", "1 of 1 workers answer (Kafka Connect 4.1.0)",
			"exactly_once", "no (optional)", "the workers do not run exactly-once source connectors", "is usable"}},
		{"strict", connecttest.Worker{RefuseOverrides: true}, false,
			[]string{"client_overrides", "FAILED", "to do: set connector.client.config.override.policy=All", "is NOT usable"}},
	} {
		if out, err := cli(t, base, "connect-cluster", "add", "--name", tc.name, "--url", connecttest.Start(t, tc.worker), "--kafka-cluster", "west"); err != nil {
			t.Fatalf("add %s: %v\n%s", tc.name, err, out)
		}
		out, err := cli(t, base, "connect-cluster", "check", tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("check %s: error %v, want ok %v\n%s", tc.name, err, tc.ok, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("check %s does not say %q:\n%s", tc.name, w, out)
			}
		}
	}
	if out, err := cli(t, base, "connect-cluster", "check", "good", "-o", "json"); err != nil || !strings.Contains(out, `"ok": true`) {
		t.Errorf("check -o json: %v\n%s", err, out)
	}
	if out, err := cli(t, base, "connect-cluster", "check"); err == nil {
		t.Errorf("check without a name: %s", out)
	}
}

// connect-cluster add takes a client certificate and its key from files
// and a bearer token from the environment (or a file); the check reaches
// a worker that requires both, and no output shows the key or the token.
func TestConnectClusterAddWithClientCertificateAndToken(t *testing.T) {
	base, logs := serveDemo(t)
	ca := connecttest.NewCA(t)
	cert, key := ca.Issue(t, "kmirror")
	_, otherKey := ca.Issue(t, "other")
	const token = "cli-token-secret"
	url, serverCA := connecttest.StartTLS(t, connecttest.Worker{BearerToken: token}, ca)
	dir := t.TempDir()
	file := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	certFile, keyFile, otherKeyFile, caFile := file("cert.pem", cert), file("key.pem", key), file("other.pem", otherKey), file("ca.pem", serverCA)
	tokenFile := file("token", token+"\n")
	env := map[string]string{"KMIRROR_CONNECT_BEARER_TOKEN": token}
	add := []string{"connect-cluster", "add", "--name", "m1", "--url", url, "--kafka-cluster", "west", "--ca-file", caFile, "--client-cert-file", certFile}

	out, err := cliEnv(t, base, env, append(add, "--client-key-file", otherKeyFile)...)
	if err == nil || !strings.Contains(err.Error(), "client_key_pem: the private key does not belong to the client certificate") {
		t.Fatalf("a key of another certificate: %v\n%s", err, out)
	}
	if out, err := cliEnv(t, base, env, append(add, "--client-key-file", keyFile, "--bearer-token-file", tokenFile)...); err == nil ||
		!strings.Contains(err.Error(), "not both") {
		t.Fatalf("token from a file and the environment: %v\n%s", err, out)
	}
	out, err = cliEnv(t, base, env, append(add, "--client-key-file", keyFile)...)
	if err != nil || !strings.Contains(out, "bearer token, client certificate") {
		t.Fatalf("add: %v\n%s", err, out)
	}
	// The token from a file, with its line break, works as well.
	if out, err := cliEnv(t, base, nil, "connect-cluster", "add", "--name", "m2", "--url", url, "--kafka-cluster", "west", "--ca-file", caFile,
		"--client-cert-file", certFile, "--client-key-file", keyFile, "--bearer-token-file", tokenFile); err != nil {
		t.Fatalf("add with the token from a file: %v\n%s", err, out)
	}
	for _, name := range []string{"m1", "m2"} {
		out, err = cli(t, base, "connect-cluster", "check", name)
		if err != nil || !strings.Contains(out, "is usable") {
			t.Fatalf("check %s against a worker requiring the certificate and the token: %v\n%s", name, err, out)
		}
	}
	out, err = cli(t, base, "connect-cluster", "show", "m1", "-o", "json")
	if err != nil || !strings.Contains(out, `"client_key_set": true`) || !strings.Contains(out, `"bearer_token_set": true`) {
		t.Fatalf("show: %v\n%s", err, out)
	}
	if strings.Contains(out, token) || strings.Contains(out, "PRIVATE KEY") {
		t.Fatalf("show prints a secret:\n%s", out)
	}
	// Nor does the server's log, refusals and checks included.
	for _, secret := range []string{token, strings.Split(strings.TrimSpace(key), "\n")[1], strings.Split(strings.TrimSpace(otherKey), "\n")[1]} {
		if strings.Contains(logs.String(), secret) {
			t.Fatalf("the server's log holds a secret:\n%s", logs.String())
		}
	}
}

// task move: refusals by field (422) and a failed move (502) are errors
// with the server's words, and the task stays where it was.
func TestTaskMoveCommand(t *testing.T) {
	base, _ := serveDemo(t)
	onEmbedded := func(name string) func() error {
		return func() error {
			out, err := cli(t, base, "task", "show", name)
			if err != nil {
				return err
			}
			if !regexp.MustCompile(name + `\s+east \(A\)\s+push\s+west \(B\)\s+embedded\s+RUNNING`).MatchString(out) {
				return errString(name + " not running on embedded:\n" + out)
			}
			return nil
		}
	}
	checkFor(t, 30*time.Second, 200*time.Millisecond, onEmbedded("demo-orders"))
	if out, err := cli(t, base, "connect-cluster", "add", "--name", "fake", "--url", connecttest.Start(t, connecttest.Worker{}), "--kafka-cluster", "west"); err != nil {
		t.Fatalf("add a Connect cluster: %v\n%s", err, out)
	}
	// The demo task adds the source header, which Connect cannot: refused
	// by that field. The next task does not, so its move reaches the engine.
	if out, err := cli(t, base, "task", "move", "demo-orders", "--engine", "connect:fake"); err == nil || !strings.Contains(err.Error(), "\n  rules.add_source_header: ") {
		t.Fatalf("move a task Connect cannot run: %v\n%s", err, out)
	}
	if _, err := cli(t, base, "task", "delete", "demo-orders"); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "task.json")
	if err := os.WriteFile(path, []byte(`{"name": "plain", "type": "kafka-replication", "engine": "embedded",
	  "current": {"cluster": "east", "alias": "A"}, "peer": {"alias": "B", "config_type": "cluster", "cluster": "west"},
	  "rules": {"direction": "push", "topics": ["orders"], "rename_topics": true, "replication_factor": 1}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := cli(t, base, "task", "create", "-f", path); err != nil {
		t.Fatalf("create: %v\n%s", err, out)
	}
	checkFor(t, 30*time.Second, 200*time.Millisecond, onEmbedded("plain"))
	for _, tc := range []struct {
		name string
		args []string
		want []string // in the error
	}{
		{"no engine", []string{"plain"}, []string{"--engine"}},
		{"no name", []string{"--engine", "embedded"}, []string{"one task name"}},
		{"same engine", []string{"plain", "--engine", "embedded"}, []string{"invalid_task", "\n  engine: ", "already"}},
		{"unknown Connect cluster", []string{"plain", "--engine", "connect:nope"}, []string{"invalid_task", "\n  engine: "}},
		{"bad engine", []string{"plain", "--engine", "spark"}, []string{"invalid_task", "\n  engine: "}},
		{"unknown task", []string{"nope", "--engine", "connect:fake"}, []string{"not_found"}},
		// The fake worker answers checks but cannot hold connectors.
		{"engine fails", []string{"plain", "--engine", "connect:fake"}, []string{"move_failed", "not moved to connect:fake", "stays on embedded"}},
	} {
		out, err := cli(t, base, append([]string{"task", "move"}, tc.args...)...)
		if err == nil {
			t.Errorf("%s: moved:\n%s", tc.name, out)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error does not say %q: %v", tc.name, w, err)
			}
		}
	}
	checkFor(t, 30*time.Second, 200*time.Millisecond, onEmbedded("plain"))
	if out, err := cli(t, base, "task", "list", "-o", "json"); err != nil || !strings.Contains(out, `"engine": "embedded"`) {
		t.Fatalf("list -o json: %v\n%s", err, out)
	}
}

// instance add takes a client certificate from files and OAuth settings
// from flags, secrets from the environment; a key that does not match is
// refused naming the field, and nothing is registered.
func TestInstanceAddWithClientCertificateAndOAuth(t *testing.T) {
	base, _ := serveDemo(t)
	dir := t.TempDir()
	ca, err := kafkatest.NewCA("cli CA", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	alice, err := ca.Issue(kafkatest.CertSpec{CommonName: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := ca.Issue(kafkatest.CertSpec{CommonName: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	certFile, aliceKey, bobKey := write("cert.pem", alice.ChainPEM), write("alice.key", alice.KeyPEM), write("bob.key", bob.KeyPEM)
	env := map[string]string{"KMIRROR_TOKEN": testToken, "KMIRROR_OAUTH_CLIENT_SECRET": "cli-oauth-secret"}
	run1 := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(context.Background(), append(args, "--server", base), func(k string) string { return env[k] }, &out, &out)
		return out.String(), err
	}
	out, err := run1("instance", "add", "--name", "mtls", "--bootstrap", "127.0.0.1:9093", "--security-protocol", "SSL",
		"--client-cert-file", certFile, "--client-key-file", bobKey)
	if err == nil || !strings.Contains(out+err.Error(), "client_key_pem") || !strings.Contains(out+err.Error(), "does not belong") {
		t.Fatalf("a key of another certificate: %v\n%s", err, out)
	}
	if out, err := run1("instance", "add", "--name", "mtls", "--bootstrap", "127.0.0.1:9093", "--security-protocol", "SSL",
		"--client-cert-file", certFile, "--client-key-file", aliceKey); err != nil {
		t.Fatalf("add with a certificate: %v\n%s", err, out)
	}
	if out, err := run1("instance", "add", "--name", "sso", "--bootstrap", "127.0.0.1:9094", "--security-protocol", "SASL_SSL",
		"--sasl-mechanism", "OAUTHBEARER", "--oauth-token-endpoint", "https://idp.example.com/token", "--oauth-client-id", "kmirror"); err != nil {
		t.Fatalf("add with OAuth: %v\n%s", err, out)
	}
	out, err = run1("instance", "list", "-o", "json")
	if err != nil || !strings.Contains(out, `"subject": "CN=alice,O=kmirror tests"`) || !strings.Contains(out, `"client_id": "kmirror"`) ||
		strings.Contains(out, "cli-oauth-secret") || strings.Contains(out, strings.Split(alice.KeyPEM, "\n")[1]) {
		t.Fatalf("list: %v\n%s", err, out)
	}
}
