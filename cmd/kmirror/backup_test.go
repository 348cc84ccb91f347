package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/kafkatest"
	"github.com/kmirror/kmirror/internal/secrets"
	"github.com/kmirror/kmirror/internal/store"
)

// servingProcess is `kmirror serve` running in this process.
type servingProcess struct {
	base   string
	dir    string
	stderr *syncBuffer
	stop   func() error
}

// startServe runs serve on dir with extra flags until the test ends or
// stop is called.
func startServe(t *testing.T, dir string, flags ...string) servingProcess {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	env := map[string]string{"KMIRROR_TOKEN": testToken, "KMIRROR_ADMIN_PASSWORD": "backup-admin-password"}
	done := make(chan error, 1)
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", dir}, flags...)
	go func() { done <- run(ctx, args, func(k string) string { return env[k] }, &stdout, &stderr) }()
	stopped := false
	var stopErr error
	stop := func() error {
		if !stopped {
			stopped = true
			cancel()
			stopErr = <-done
		}
		return stopErr
	}
	t.Cleanup(func() { _ = stop() })
	var base string
	checkFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		select {
		case err := <-done:
			stopped, stopErr = true, err
			t.Fatalf("serve ended early: %v\n%s", err, stderr.String())
		default:
		}
		if base = regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(stdout.String()); base == "" {
			return errString("no URL printed yet")
		}
		return nil
	})
	return servingProcess{base: base, dir: dir, stderr: &stderr, stop: stop}
}

// apiCall sends body as JSON to the running serve's API with the test token.
func (s servingProcess) apiCall(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	var buf bytes.Buffer
	if body != nil {
		if err := json.NewEncoder(&buf).Encode(body); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest(method, s.base+strings.TrimPrefix(path, "/"), &buf)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	return resp.StatusCode, out.Bytes()
}

// addInstance registers an instance with a SASL password (sealed with the
// data directory's key).
func (s servingProcess) addInstance(t *testing.T, name string) {
	t.Helper()
	code, body := s.apiCall(t, http.MethodPost, "/api/v1/clusters",
		map[string]any{"name": name, "bootstrap_servers": []string{"127.0.0.1:1"}, "security_protocol": "SASL_PLAINTEXT",
			"sasl_mechanism": "PLAIN", "username": "u", "password": "instance-password"})
	if code != http.StatusCreated {
		t.Fatalf("add instance %s: %d %s", name, code, body)
	}
}

func (s servingProcess) instanceNames(t *testing.T) string {
	t.Helper()
	code, body := s.apiCall(t, http.MethodGet, "/api/v1/clusters", nil)
	if code != http.StatusOK {
		t.Fatalf("list instances: %d %s", code, body)
	}
	var out struct {
		Clusters []struct{ Name string } `json:"clusters"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	var names []string
	for _, c := range out.Clusters {
		names = append(names, c.Name)
	}
	return strings.Join(names, ",")
}

func runCmd(args ...string) (string, error) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, func(string) string { return "" }, &out, &errOut)
	return out.String() + errOut.String(), err
}

// backup runs beside serve; restore is refused until serve stops, then
// brings back the backed-up state, which the next serve starts with.
func TestBackupWhileServingRestoreAfterStopping(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, dir)
	s.addInstance(t, "east")
	file := filepath.Join(t.TempDir(), "kmirror-backup.db")
	out, err := runCmd("backup", "--data-dir", dir, file)
	if err != nil {
		t.Fatalf("backup while serving: %v\n%s", err, out)
	}
	if !strings.Contains(out, "secret.key") {
		t.Fatalf("backup does not say the key is kept apart:\n%s", out)
	}
	s.addInstance(t, "after-backup")

	out, err = runCmd("restore", "--data-dir", dir, file)
	if err == nil || !strings.Contains(err.Error(), "stop it first") {
		t.Fatalf("restore while serving: err = %v, want a refusal saying to stop serve\n%s", err, out)
	}
	if got := s.instanceNames(t); got != "after-backup,east" {
		t.Fatalf("instances after the refused restore: %s", got)
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	out, err = runCmd("restore", "--data-dir", dir, file)
	if err != nil {
		t.Fatalf("restore after stopping: %v\n%s", err, out)
	}
	if !strings.Contains(out, "all 1 stored passwords open") {
		t.Fatalf("restore into the original directory does not confirm the key:\n%s", out)
	}
	s = startServe(t, dir)
	if got := s.instanceNames(t); got != "east" {
		t.Fatalf("instances after the restore: %q, want east", got)
	}

	// Elsewhere without the key, or with another one, restore says the
	// passwords will not open.
	other := t.TempDir()
	_ = startServe(t, other).stop() // only its new secret.key is wanted
	for _, dir := range []string{t.TempDir(), other} {
		out, err := runCmd("restore", "--data-dir", dir, file)
		if err != nil {
			t.Fatalf("restore into %s: %v\n%s", dir, err, out)
		}
		if !strings.Contains(out, "WARNING: 1 of 1 stored passwords do not open") {
			t.Fatalf("restore into %s does not warn about the key:\n%s", dir, out)
		}
	}
}

func TestBackupAndRestoreNeedOneFile(t *testing.T) {
	for _, args := range [][]string{{"backup"}, {"restore"}, {"backup", "a", "b"}, {"restore", "--data-dir", t.TempDir()}} {
		if out, err := runCmd(args...); err == nil {
			t.Errorf("%q accepted:\n%s", args, out)
		}
	}
}

// A second serve on a data directory in use is refused, saying why.
func TestServeRefusesADataDirInUse(t *testing.T) {
	dir := t.TempDir()
	startServe(t, dir)
	_, err := runCmd("serve", "--listen", "127.0.0.1:0", "--data-dir", dir)
	if err == nil || !strings.Contains(err.Error(), "another kmirror") {
		t.Fatalf("second serve: err = %v, want a refusal naming the other kmirror", err)
	}
}

// A database migrated by a newer kmirror is left alone: serve stops at once
// with an error that says to use a newer kmirror, and writes nothing.
func TestServeRefusesANewerSchema(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	known, err := db.SchemaVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL().ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'from_a_newer_kmirror', 0)`, known+1); err != nil {
		t.Fatal(err)
	}
	db.Close()

	// As a process, as an operator would meet it: one line on stderr and
	// exit status 1.
	p := startKmirror(t, "serve", "--listen", "127.0.0.1:0", "--data-dir", dir)
	select {
	case err = <-p.done:
		p.done <- err
	case <-time.After(30 * time.Second):
		t.Fatalf("serve kept running on a newer schema:\n%s", p.stdout.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("serve ended with %v, want exit status 1", err)
	}
	msg := p.stderr.String()
	for _, want := range []string{"kmirror: database " + filepath.Join(dir, store.FileName), "knows only up to", "run a newer kmirror"} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr %q does not say %q", msg, want)
		}
	}
	if strings.Count(strings.TrimSpace(msg), "\n") != 0 {
		t.Errorf("stderr is more than the one error line:\n%s", msg)
	}
	if strings.Contains(p.stdout.String(), "kmirror console:") {
		t.Fatalf("serve got as far as listening:\n%s", p.stdout.String())
	}
	raw, err := sql.Open("sqlite3", filepath.Join(dir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var users int
	if err := raw.QueryRow(`SELECT COUNT(*) FROM users`).Scan(&users); err != nil || users != 0 {
		t.Fatalf("serve wrote to the newer database: %d users (err %v)", users, err)
	}
}

// SIGTERM stops a real serve process within stopLimit, exit status 0, and
// its data directory is free again for a restore.
func TestServeProcessStopsOnSIGTERMAndFreesTheDataDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "b.db")
	s := startServe(t, t.TempDir())
	s.addInstance(t, "east")
	if out, err := runCmd("backup", "--data-dir", s.dir, file); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}

	p := startKmirror(t, "serve", "--listen", "127.0.0.1:0", "--data-dir", dir, "--log-format", "json")
	checkFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		if !strings.Contains(p.stdout.String(), "kmirror console:") {
			return errString("not serving yet")
		}
		return nil
	})
	if out, err := runCmd("restore", "--data-dir", dir, file); err == nil {
		t.Fatalf("restore accepted while serve runs:\n%s", out)
	}
	took, err := p.terminate(t, stopLimit)
	if err != nil {
		t.Fatalf("serve exited with %v after SIGTERM\n%s", err, p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), `"msg":"kmirror stopped"`) {
		t.Fatalf("serve did not log its stop:\n%s", p.stderr.String())
	}
	t.Logf("serve stopped %s after SIGTERM", took.Round(time.Millisecond))
	if out, err := runCmd("restore", "--data-dir", dir, file); err != nil {
		t.Fatalf("restore after serve stopped: %v\n%s", err, out)
	}
}

// A restore says what it brings back — a deleted user, a revoked token —
// and what it removes, records itself in the audit log, and brings back
// no console session.
func TestRestoreSaysWhatItBringsBack(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateUser(ctx, store.User{Name: "olga", PasswordHash: "h", Role: "operator"}); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateUser(ctx, store.User{Name: "admin", PasswordHash: "old", Role: "admin"}); err != nil {
		t.Fatal(err)
	}
	olga, _ := db.User(ctx, "olga")
	if err := db.CreateToken(ctx, store.Token{Name: "ci", Role: "operator", TokenSHA256: "t1", CreatedBy: "olga", OwnerAccountID: olga.AccountID}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := db.CreateSession(ctx, "s1", olga.AccountID, now, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	file := filepath.Join(t.TempDir(), "b.db")
	if out, err := runCmd("backup", "--data-dir", dir, file); err != nil {
		t.Fatalf("backup: %v\n%s", err, out)
	}
	db, err = store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteUser(ctx, "olga"); err != nil { // its token goes with it
		t.Fatal(err)
	}
	// The admin's password changed since the backup: the restore brings
	// the older one back, and says so.
	if err := db.SetPassword(ctx, "admin", "new"); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateUser(ctx, store.User{Name: "pat", PasswordHash: "h", Role: "viewer"}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	out, err := runCmd("restore", "--data-dir", dir, file)
	if err != nil {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	for _, want := range []string{"brings back 1 users: olga", "brings back 1 tokens: ci", "brings back an older password, secret or settings of 1 users: admin",
		"removes 1 users: pat", "WARNING: users and tokens brought back", "signed out the 1 console session(s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("restore output lacks %q:\n%s", want, out)
		}
	}
	db, err = store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	es, _ := db.ListAudit(ctx, store.AuditFilter{Action: "restore"})
	if len(es) != 1 || es[0].Object != "b.db" || es[0].Outcome != "ok: brought back 1 users, brought back 1 tokens, brought back older 1 users, removed 1 users" || es[0].Actor != "system" {
		t.Fatalf("audit of the restore: %+v", es)
	}
	if _, err := db.SessionUser(ctx, "s1"); err == nil {
		t.Fatal("a session of the backup works after the restore")
	}
}

// A backup restored where the data directory's key is carries a cluster's
// client certificate, its sealed key and OAuth client secret whole.
func TestBackupKeepsClientCertificatesAndOAuth(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ca, err := kafkatest.NewCA("test CA", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Issue(kafkatest.CertSpec{CommonName: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	in := cluster.Settings{Name: "east", BootstrapServers: []string{"127.0.0.1:9093"}, SecurityProtocol: cluster.SASLSSL,
		SASLMechanism: cluster.MechanismOAuthBearer, ClientCertPEM: cert.ChainPEM, ClientKeyPEM: cert.KeyPEM,
		OAuth: cluster.OAuth{TokenEndpoint: "https://idp.example.com/token", ClientID: "kmirror", ClientSecret: "oauth-secret-1"}}
	svc, closeDB, err := localService(ctx, dir, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AddCluster(ctx, in); err != nil {
		t.Fatal(err)
	}
	closeDB()
	file := filepath.Join(t.TempDir(), "b.db")
	if out, err := runCmd("backup", "--data-dir", dir, file); err != nil {
		t.Fatalf("backup: %v\n%s", err, out)
	}
	// Elsewhere, with the data directory's key put beside it.
	other := t.TempDir()
	key, err := os.ReadFile(filepath.Join(dir, secrets.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, secrets.KeyFile), key, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := runCmd("restore", "--data-dir", other, file); err != nil {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	svc, closeDB, err = localService(ctx, other, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer closeDB()
	got, err := svc.ClusterSettings(ctx, "east")
	if err != nil {
		t.Fatal(err)
	}
	same := func(a, b string) bool { return strings.TrimSpace(a) == strings.TrimSpace(b) }
	if !same(got.ClientCertPEM, in.ClientCertPEM) || !same(got.ClientKeyPEM, in.ClientKeyPEM) || got.OAuth != in.OAuth {
		t.Fatalf("after the restore: certificate %v, key %v, OAuth %+v", same(got.ClientCertPEM, in.ClientCertPEM), same(got.ClientKeyPEM, in.ClientKeyPEM), got.OAuth)
	}
}
