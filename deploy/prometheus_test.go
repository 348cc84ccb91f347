package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kmirror/kmirror/internal/kafkatest"
)

const (
	alertsFile     = "prometheus/kmirror-alerts.yaml"
	alertTestsFile = "prometheus/kmirror-alerts.test.yaml"
	dashboardFile  = "grafana/kmirror-dashboard.json"
)

// TestAlertRulesUnitTests runs promtool's checks and the rules' unit tests.
func TestAlertRulesUnitTests(t *testing.T) {
	tool(t, "promtool", ".ci/run installs Debian's prometheus package")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run(t, ctx, "prometheus", "promtool", "check", "rules", filepath.Base(alertsFile))
	out := run(t, ctx, "prometheus", "promtool", "test", "rules", filepath.Base(alertTestsFile))
	if !strings.Contains(out, "SUCCESS") {
		t.Fatalf("promtool test rules did not succeed:\n%s", out)
	}
	// Every alert has a unit test.
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	readYAML(t, alertTestsFile, &tests)
	tested := map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			tested[a.Alertname] = true
		}
	}
	for _, a := range alertRules(t) {
		if !tested[a.Alert] {
			t.Errorf("alert %s has no unit test in %s", a.Alert, alertTestsFile)
		}
	}
}

type alertRule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	Annotations map[string]string `yaml:"annotations"`
}

func alertRules(t *testing.T) []alertRule {
	t.Helper()
	var f struct {
		Groups []struct {
			Rules []alertRule `yaml:"rules"`
		} `yaml:"groups"`
	}
	readYAML(t, alertsFile, &f)
	var out []alertRule
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	if len(out) == 0 {
		t.Fatalf("no alert rules in %s", alertsFile)
	}
	return out
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// dashboardQuery is one target of the Grafana dashboard.
type dashboardQuery struct {
	Panel, Expr, Legend string
}

func dashboardQueries(t *testing.T) []dashboardQuery {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct {
				Expr         string
				LegendFormat string
			}
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var out []dashboardQuery
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out = append(out, dashboardQuery{Panel: p.Title, Expr: tg.Expr, Legend: tg.LegendFormat})
		}
	}
	if len(out) == 0 {
		t.Fatalf("no queries in %s", dashboardFile)
	}
	return out
}

var (
	legendLabel = regexp.MustCompile(`\{\{\s*(\w+)\s*\}\}`)
	annotLabel  = regexp.MustCompile(`\$labels\.(\w+)`)
	// optionalLabel is a label an annotation tests before using it
	// ({{ if $labels.task }}): a series may rightly lack it.
	optionalLabel = regexp.MustCompile(`\{\{\s*if\s+\$labels\.(\w+)\s*\}\}`)
	// A metric selector of the alert expressions: a kmirror metric or up,
	// with its matchers.
	selector = regexp.MustCompile(`\b(kmirror_[a-z_]+|up)(\{[^}]*\})?`)
)

// grafanaVars replaces the dashboard's variables as Grafana would with "All"
// selected.
func grafanaVars(expr string) string {
	return strings.NewReplacer("$task", ".*", "$__rate_interval", "20s").Replace(expr)
}

// TestDashboardAndAlertsOnRealPrometheus runs kmirror serve --demo (two
// embedded clusters, the demo task, plus a task with consumer-offset sync
// on), has a real Prometheus scrape it with the alert rules loaded, and runs
// every dashboard query and every alert expression through Prometheus's
// HTTP API: each must return series carrying the labels the dashboard's
// legends and the alerts' annotations use.
func TestDashboardAndAlertsOnRealPrometheus(t *testing.T) {
	promBin := tool(t, "prometheus", ".ci/run installs Debian's prometheus package")
	promtool := tool(t, "promtool", ".ci/run installs Debian's prometheus package")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	const token = "deploytest-token-0123456789abcdef01"
	base, serveOut := startProcess(t, ctx, regexp.MustCompile(`http://127\.0\.0\.1:\d+/`),
		[]string{"KMIRROR_TOKEN=" + token, "KMIRROR_ADMIN_PASSWORD=deploytest-password"},
		kmirrorBinary(t), "serve", "--demo", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir())
	base = strings.TrimSuffix(base, "/")

	// A second task with consumer-offset sync on, so checkpoint metrics exist.
	body := `{"name":"demo-offsets","current":{"cluster":"east","alias":"E"},
		"peer":{"alias":"W","config_type":"cluster","cluster":"west"},
		"rules":{"direction":"push","topics":["orders"],"rename_topics":true,"sync_consumer_offsets":true}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/tasks", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create task: %s: %s\nserver:\n%s", resp.Status, b, serveOut.String())
	}

	// A registered cluster with a client certificate (a year left: no
	// alert), so the certificate expiry series exists. Registering does
	// not connect.
	ca, err := kafkatest.NewCA("deploytest CA", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Issue(kafkatest.CertSpec{CommonName: "kmirror", NotAfter: time.Now().Add(365 * 24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	withCert, _ := json.Marshal(map[string]any{"name": "mtls", "bootstrap_servers": []string{"127.0.0.1:1"}, "security_protocol": "SSL",
		"client_cert_pem": cert.ChainPEM, "client_key_pem": cert.KeyPEM})
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/clusters", bytes.NewReader(withCert))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("register a cluster with a client certificate: %s: %s", resp.Status, b)
	}

	// The exposition passes Prometheus's own naming lint.
	exposition := httpGet(t, ctx, base+"/metrics")
	lint := exec.CommandContext(ctx, promtool, "check", "metrics")
	lint.Stdin = strings.NewReader(exposition)
	if out, err := lint.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics on /metrics: %v\n%s", err, out)
	}

	dir := t.TempDir()
	rules, err := filepath.Abs(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(base)
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: kmirror
    static_configs:
      - targets: [%q]
`, rules, u.Host)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	promAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	_, promOut := startProcess(t, ctx, regexp.MustCompile(`Server is ready to receive web requests`), nil,
		promBin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+promAddr)
	prom := "http://" + promAddr

	// The rules loaded and evaluate without error.
	var loaded int
	poll(t, ctx, 30*time.Second, func() error {
		var rr struct {
			Groups []struct {
				Rules []struct {
					Name, Health, LastError string
				}
			}
		}
		promAPI(t, ctx, prom, "/api/v1/rules", nil, &rr)
		loaded = 0
		for _, g := range rr.Groups {
			for _, r := range g.Rules {
				if r.Health != "ok" {
					return fmt.Errorf("rule %s: health %q %s", r.Name, r.Health, r.LastError)
				}
				loaded++
			}
		}
		if loaded != len(alertRules(t)) {
			return fmt.Errorf("%d rules loaded and evaluated, want %d", loaded, len(alertRules(t)))
		}
		return nil
	})

	check := func(what, expr string, wantLabels []string) {
		t.Helper()
		poll(t, ctx, 90*time.Second, func() error {
			series := instantQuery(t, ctx, prom, expr)
			if len(series) == 0 {
				return fmt.Errorf("%s: %s returns no series", what, expr)
			}
			for _, s := range series {
				for _, l := range wantLabels {
					if _, ok := s[l]; !ok {
						return fmt.Errorf("%s: %s returns %v without label %q", what, expr, s, l)
					}
				}
			}
			return nil
		})
	}
	for _, q := range dashboardQueries(t) {
		var labels []string
		for _, m := range legendLabel.FindAllStringSubmatch(q.Legend, -1) {
			labels = append(labels, m[1])
		}
		check("dashboard panel "+q.Panel, grafanaVars(q.Expr), labels)
	}
	for _, a := range alertRules(t) {
		// The whole expression is valid (it may rightly be empty: nothing is
		// wrong in this run) ...
		instantQuery(t, ctx, prom, a.Expr)
		// ... and each selector in it finds series with the labels its
		// annotations use.
		var labels []string
		for _, text := range a.Annotations {
			optional := map[string]bool{}
			for _, m := range optionalLabel.FindAllStringSubmatch(text, -1) {
				optional[m[1]] = true
			}
			for _, m := range annotLabel.FindAllStringSubmatch(text, -1) {
				if !optional[m[1]] && !slices.Contains(labels, m[1]) {
					labels = append(labels, m[1])
				}
			}
		}
		sels := selector.FindAllString(a.Expr, -1)
		if len(sels) == 0 {
			t.Errorf("alert %s: no metric selector found in %q", a.Alert, a.Expr)
		}
		for _, sel := range sels {
			check("alert "+a.Alert, sel, labels)
		}
	}

	// A healthy run pages nobody.
	var alerts struct {
		Alerts []struct {
			Labels map[string]string
			State  string
		}
	}
	promAPI(t, ctx, prom, "/api/v1/alerts", nil, &alerts)
	for _, a := range alerts.Alerts {
		if a.State == "firing" {
			t.Errorf("alert firing in a healthy run: %v", a.Labels)
		}
	}
	if t.Failed() {
		t.Logf("kmirror:\n%s\nprometheus:\n%s", serveOut.String(), promOut.String())
	}
}

// startProcess starts a command in its own process group, stopped when the
// test ends, and waits until its output matches ready; it returns the match.
func startProcess(t *testing.T, ctx context.Context, ready *regexp.Regexp, env []string, name string, args ...string) (string, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	var match string
	poll(t, ctx, 60*time.Second, func() error {
		select {
		case <-done:
			t.Fatalf("%s exited early:\n%s", name, out.String())
		default:
		}
		if match = ready.FindString(out.String()); match == "" {
			return fmt.Errorf("%s not ready (waiting for %q):\n%s", name, ready, out.String())
		}
		return nil
	})
	return match, out
}

// poll runs f until it succeeds, failing the test with f's last error after
// total (or when ctx ends).
func poll(t *testing.T, ctx context.Context, total time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(total)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func httpGet(t *testing.T, ctx context.Context, u string) string {
	t.Helper()
	body, status := httpGetAny(t, ctx, u)
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", u, status, body)
	}
	return body
}

// promAPI calls Prometheus's HTTP API and decodes its data into v, failing
// the test on an error answer (an invalid query, for one).
func promAPI(t *testing.T, ctx context.Context, prom, path string, params url.Values, v any) {
	t.Helper()
	u := prom + path
	if params != nil {
		u += "?" + params.Encode()
	}
	var env struct {
		Status, Error string
		Data          json.RawMessage
	}
	body, _ := httpGetAny(t, ctx, u)
	if err := json.Unmarshal([]byte(body), &env); err != nil {
		t.Fatalf("%s: %v: %s", u, err, body)
	}
	if env.Status != "success" {
		t.Fatalf("%s: %s", u, env.Error)
	}
	if err := json.Unmarshal(env.Data, v); err != nil {
		t.Fatalf("%s: %v", u, err)
	}
}

// httpGetAny is httpGet that returns error answers too (Prometheus explains
// a bad query in the body of a 400).
func httpGetAny(t *testing.T, ctx context.Context, u string) (string, int) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), resp.StatusCode
}

// instantQuery evaluates expr now and returns each series' labels.
func instantQuery(t *testing.T, ctx context.Context, prom, expr string) []map[string]string {
	t.Helper()
	var data struct {
		ResultType string
		Result     []struct {
			Metric map[string]string
		}
	}
	promAPI(t, ctx, prom, "/api/v1/query", url.Values{"query": {expr}}, &data)
	var out []map[string]string
	for _, r := range data.Result {
		out = append(out, r.Metric)
	}
	return out
}
