package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/kmirror/kmirror/internal/cluster"
)

// peerByAddress is taskFormValues with the peer given by address (the
// fake's 10.9.9.9:9093) and the security settings kv.
func peerByAddress(csrf, name string, kv ...string) url.Values {
	v := taskFormValues(csrf, name)
	v.Set("peer.config_type", "address")
	v.Set("peer.address", "10.9.9.9:9093")
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

// The peer's security fields: in the seed's order then the new ones, each
// marked with the choices it is shown for.
func TestTaskFormPeerSecurityFields(t *testing.T) {
	e := newTaskEnv(t)
	e.signIn(e.client, "admin", adminPassword)
	p := e.get(e.client, "/instances/east/smart-connect/new")
	var names, whens []string
	p.doc.Find(`.when-peer-address.security`).Find(`input, select, textarea`).Each(func(_ int, s *goquery.Selection) {
		names = append(names, s.AttrOr("name", ""))
		when := ""
		if w := s.ParentsFiltered(`[class*="when-"]`).First(); !w.HasClass("when-peer-address") {
			when = strings.TrimSpace(strings.ReplaceAll(w.AttrOr("class", ""), "field", ""))
		}
		whens = append(whens, when)
	})
	wantNames := []string{"peer.address", "peer.security_protocol", "peer.sasl_mechanism", "peer.username", "peer.password",
		"peer.ca_pem", "peer.client_cert_pem", "peer.client_key_pem", "peer.client_key_password",
		"peer.oauth.token_endpoint", "peer.oauth.client_id", "peer.oauth.client_secret", "peer.oauth.scope", "peer.oauth.audience"}
	wantWhens := []string{"", "", "when-sasl", "when-password", "when-password", "when-tls", "when-tls", "when-tls", "when-tls",
		"when-oauth", "when-oauth", "when-oauth", "when-oauth", "when-oauth"}
	if !slices.Equal(names, wantNames) || !slices.Equal(whens, wantWhens) {
		t.Errorf("peer fields\n %v\n %v\nwant\n %v\n %v", names, whens, wantNames, wantWhens)
	}
	var protos, mechs []string
	p.doc.Find(`#f-peer-protocol option`).Each(func(_ int, s *goquery.Selection) { protos = append(protos, s.AttrOr("value", "")) })
	p.doc.Find(`#f-peer-mechanism option`).Each(func(_ int, s *goquery.Selection) { mechs = append(mechs, s.AttrOr("value", "")) })
	if !slices.Equal(protos, cluster.Protocols) || !slices.Equal(mechs, cluster.Mechanisms) {
		t.Errorf("protocols %v, mechanisms %v", protos, mechs)
	}
	// Each message slot is on the page, for inline validation to fill.
	for _, f := range []string{"peer.client_cert_pem", "peer.client_key_pem", "peer.client_key_password", "peer.oauth",
		"peer.oauth.token_endpoint", "peer.oauth.client_id", "peer.oauth.client_secret", "peer.oauth.scope", "peer.oauth.audience"} {
		if p.doc.Find(`#err-`+strings.NewReplacer(".", "-").Replace(f)).Length() != 1 {
			t.Errorf("no message slot for %s", f)
		}
	}
}

// Inline validation puts the service's problems about the peer's client
// certificate and OAuth grant by their fields, once touched; fields the
// chosen protocol hides are left out.
func TestTaskFormPeerCredentialsValidate(t *testing.T) {
	e := newTaskEnv(t)
	e.signIn(e.client, "admin", adminPassword)
	csrf := e.get(e.client, "/instances/east/smart-connect/new").csrf(t)
	cert := newTestCert(t, "peer-b")
	hx := http.Header{"Hx-Request": {"true"}}

	v := peerByAddress(csrf, "cert-task", "peer.security_protocol", "SSL", "peer.username", "alice", "peer.password", "hidden-pw",
		"peer.client_cert_pem", cert.chain, "peer.client_key_pem", cert.otherKey, "_touched", "peer.client_key_pem,peer.username")
	a := e.postForm(e.client, "/instances/east/smart-connect/validate", v, hx)
	if got := a.doc.Find(`#err-peer-client_key_pem`).Text(); !strings.Contains(got, "does not belong to the client certificate") {
		t.Errorf("client key slot %q\n%s", got, a.body)
	}
	if got := a.doc.Find(`#err-peer-username`).Text(); got != "" {
		t.Errorf("a hidden field is scolded: %q", got)
	}
	if a.doc.Find(`#err-peer-client_key_pem`).AttrOr("hx-swap-oob", "") != "true" {
		t.Error("the client key's slot is not swapped in out of band")
	}

	v = peerByAddress(csrf, "cert-task", "peer.security_protocol", "SSL", "peer.client_cert_pem", "not pem", "_touched", "peer.client_cert_pem")
	a = e.postForm(e.client, "/instances/east/smart-connect/validate", v, hx)
	if got := a.doc.Find(`#err-peer-client_cert_pem`).Text(); !strings.Contains(got, "not PEM") {
		t.Errorf("certificate slot %q", got)
	}

	v = peerByAddress(csrf, "oauth-task", "peer.security_protocol", "SASL_SSL", "peer.sasl_mechanism", "OAUTHBEARER",
		"peer.username", "alice", "peer.oauth.token_endpoint", "https://idp.example.com/token", "peer.oauth.client_id", "kmirror",
		"_touched", "peer.oauth.client_id,peer.oauth.client_secret,peer.username")
	a = e.postForm(e.client, "/instances/east/smart-connect/validate", v, hx)
	if got := a.doc.Find(`#err-peer-oauth-client_secret`).Text(); !strings.Contains(got, "needs the OAuth client secret") {
		t.Errorf("client secret slot %q", got)
	}
	if got := a.doc.Find(`#err-peer-username`).Text(); got != "" {
		t.Errorf("the user name (hidden for OAUTHBEARER) is scolded: %q", got)
	}
}

// "Create now" with a peer by address over SSL with a client certificate,
// then SASL_SSL with OAUTHBEARER: the secrets reach the engine, a refused
// create sends none back and asks for each again.
func TestTaskFormPeerCredentialsCreate(t *testing.T) {
	e := newTaskEnv(t)
	e.signIn(e.client, "admin", adminPassword)
	csrf := e.get(e.client, "/instances/east/smart-connect/new").csrf(t)
	cert := newTestCert(t, "peer-b")
	const secret = "peer-oauth-secret-never-shown"

	refused := e.postForm(e.client, "/instances/east/smart-connect", peerByAddress(csrf, "x!", "peer.security_protocol", "SSL",
		"peer.client_cert_pem", cert.chain, "peer.client_key_pem", cert.key, "peer.client_key_password", "key-pw-never-shown"), nil)
	if refused.status != http.StatusUnprocessableEntity {
		t.Fatalf("refused create: %d", refused.status)
	}
	if got := refused.testid("error-peer.client_key_pem").Text(); !strings.Contains(got, "paste the private key again") {
		t.Errorf("client key messages %q", got)
	}
	if got := refused.testid("error-peer.client_key_password").Text(); !strings.Contains(got, "not encrypted") || !strings.Contains(got, "enter the key password again") {
		t.Errorf("key password messages %q", got)
	}
	if got := refused.doc.Find(`#f-peer-client-cert`).Text(); got != strings.TrimSpace(cert.chain) {
		t.Errorf("certificate chain not kept: %q", got)
	}
	for _, s := range []string{keyLine(cert.key), "key-pw-never-shown"} {
		if strings.Contains(refused.body, s) {
			t.Errorf("%q came back in the form", s)
		}
	}

	created := e.postForm(e.client, "/instances/east/smart-connect", peerByAddress(csrf, "cert-task", "peer.security_protocol", "SSL",
		"peer.sasl_mechanism", "PLAIN", "peer.username", "hidden", "peer.client_cert_pem", cert.chain, "peer.client_key_pem", cert.key), nil)
	if created.testid("flash-success").Length() != 1 {
		t.Fatalf("create: %d at %s\n%s", created.status, created.url, created.doc.Find(`.error, .form-error`).Text())
	}
	started, ok := e.runner.Started("cert-task")
	if !ok || started.Peer.ClientKeyPEM != strings.TrimSpace(cert.key) || started.Peer.ClientCertPEM != strings.TrimSpace(cert.chain) ||
		started.Peer.SecurityProtocol != "SSL" || started.Peer.Username != "" || started.Peer.SASLMechanism != "" {
		t.Errorf("started with peer %+v", started.Peer.WithSecrets(cluster.Secrets{}))
	}

	oauth := func(kv ...string) url.Values {
		return peerByAddress(csrf, "oauth-task", append([]string{"peer.security_protocol", "SASL_SSL", "peer.sasl_mechanism", "OAUTHBEARER",
			"peer.password", "hidden-pw", "peer.oauth.token_endpoint", "https://idp.example.com/token", "peer.oauth.client_id", "kmirror",
			"peer.oauth.scope", "kafka"}, kv...)...)
	}
	refused = e.postForm(e.client, "/instances/east/smart-connect", oauth("peer.oauth.client_secret", secret, "peer.oauth.token_endpoint", "ftp://idp"), nil)
	if got := refused.testid("error-peer.oauth.token_endpoint").Text(); !strings.Contains(got, "https://") {
		t.Errorf("token endpoint message %q", got)
	}
	if got := refused.testid("error-peer.oauth.client_secret").Text(); got != "enter the client secret again: it is not sent back to the browser" {
		t.Errorf("client secret message %q", got)
	}
	if refused.testid("error-peer.password").Length() != 0 || strings.Contains(refused.body, secret) {
		t.Error("the hidden password is scolded, or the secret came back")
	}
	if v, _ := refused.doc.Find(`#f-peer-oauth-client-id`).Attr("value"); v != "kmirror" {
		t.Errorf("client id not kept: %q", v)
	}
	created = e.postForm(e.client, "/instances/east/smart-connect", oauth("peer.oauth.client_secret", secret), nil)
	if created.testid("flash-success").Length() != 1 {
		t.Fatalf("create: %d at %s\n%s", created.status, created.url, created.doc.Find(`.error, .form-error`).Text())
	}
	started, _ = e.runner.Started("oauth-task")
	want := cluster.OAuth{TokenEndpoint: "https://idp.example.com/token", ClientID: "kmirror", ClientSecret: secret, Scope: "kafka"}
	if started.Peer.OAuth != want || started.Peer.Password != "" {
		t.Errorf("started with OAuth %+v, password set %t", started.Peer.OAuth, started.Peer.Password != "")
	}
	if p := e.get(e.client, "/tasks/oauth-task"); strings.Contains(p.body, secret) {
		t.Error("the task page shows the client secret")
	}
}

// The task page warns about the client certificates of the task's clusters
// that end within 30 days: its peer's by address, and a registered peer's;
// it shows the peer's certificate and OAuth grant, never a secret.
func TestTaskPageWarnsOfCertificatesEndingSoon(t *testing.T) {
	e := newTaskEnv(t)
	e.signIn(e.client, "admin", adminPassword)
	soon := newTestCertFor(t, "peer-soon", 5*24*time.Hour)
	body, _ := json.Marshal(map[string]any{"name": "south", "bootstrap_servers": []string{"127.0.0.1:9192"}, "security_protocol": "SSL",
		"client_cert_pem": soon.chain, "client_key_pem": soon.key})
	if code, _, out := e.call(http.MethodPost, "/api/v1/clusters", string(body)); code != http.StatusCreated {
		t.Fatalf("register south: %d %v", code, out)
	}
	csrf := e.get(e.client, "/instances/east/smart-connect/new").csrf(t)

	byName := taskFormValues(csrf, "to-south")
	byName.Set("peer.cluster", "south")
	if p := e.postForm(e.client, "/instances/east/smart-connect", byName, nil); p.testid("flash-success").Length() != 1 {
		t.Fatalf("create to-south: %d\n%s", p.status, p.doc.Find(`.error, .form-error`).Text())
	}
	p := e.get(e.client, "/tasks/to-south")
	if w := p.testid("cert-warning"); w.Length() != 1 || w.AttrOr("data-instance", "") != "south" || !strings.Contains(w.Text(), "instance south") {
		t.Errorf("to-south warnings %d: %q", w.Length(), w.Text())
	}

	created := e.postForm(e.client, "/instances/east/smart-connect", peerByAddress(csrf, "by-address", "peer.security_protocol", "SSL",
		"peer.client_cert_pem", soon.chain, "peer.client_key_pem", soon.key), nil)
	if created.testid("flash-success").Length() != 1 {
		t.Fatalf("create by-address: %d\n%s", created.status, created.doc.Find(`.error, .form-error`).Text())
	}
	p = e.get(e.client, "/tasks/by-address")
	if w := p.testid("cert-warning"); w.Length() != 1 || w.AttrOr("data-peer", "") != "B" || !strings.Contains(w.Text(), "the peer Kafka B") ||
		!strings.Contains(w.Text(), "CN=peer-soon") {
		t.Errorf("by-address warnings %d: %q", w.Length(), w.Text())
	}
	if got := p.testid("task-params").Find(`[data-testid="client-cert-subject"]`).Text(); !strings.Contains(got, "CN=peer-soon") {
		t.Errorf("peer certificate in the parameters: %q", got)
	}
	if strings.Contains(p.body, keyLine(soon.key)) {
		t.Error("the task page shows the peer's client key")
	}
	// A task on clusters without certificates has no warning.
	if p := e.postForm(e.client, "/instances/east/smart-connect", taskFormValues(csrf, "plain-task"), nil); p.testid("flash-success").Length() != 1 {
		t.Fatalf("create plain-task: %d", p.status)
	}
	if n := e.get(e.client, "/tasks/plain-task").testid("cert-warning").Length(); n != 0 {
		t.Errorf("%d warnings for a task without certificates", n)
	}
}
