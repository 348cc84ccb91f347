package web_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/kafkatest"
	"github.com/kmirror/kmirror/views"
)

// testCert is a client certificate chain and its key, and the key of
// another certificate, which does not match it.
type testCert struct {
	chain, key, otherKey string
}

func newTestCert(t *testing.T, cn string) testCert { return newTestCertFor(t, cn, 0) }

// newTestCertFor is newTestCert valid for validFor from now (0: the
// default week, within the console's 30-day warning).
func newTestCertFor(t *testing.T, cn string, validFor time.Duration) testCert {
	t.Helper()
	var notAfter time.Time
	if validFor != 0 {
		notAfter = time.Now().Add(validFor)
	}
	ca, err := kafkatest.NewCA("form test CA", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	mine, err := ca.Issue(kafkatest.CertSpec{CommonName: cn, NotAfter: notAfter})
	if err != nil {
		t.Fatal(err)
	}
	other, err := ca.Issue(kafkatest.CertSpec{CommonName: "someone-else"})
	if err != nil {
		t.Fatal(err)
	}
	return testCert{chain: mine.ChainPEM, key: mine.KeyPEM, otherKey: other.KeyPEM}
}

// keyLine is a line of a PEM key's body: found in a page only if the key is.
func keyLine(pem string) string { return strings.Split(pem, "\n")[1] }

// The forms offer the protocols and mechanisms the cluster package
// supports, in its order; views keep their own copy of the lists.
func TestFormChoicesAreTheClusterPackages(t *testing.T) {
	if !slices.Equal(views.SecurityProtocols, cluster.Protocols) {
		t.Errorf("views.SecurityProtocols %v, cluster.Protocols %v", views.SecurityProtocols, cluster.Protocols)
	}
	if !slices.Equal(views.SASLMechanisms, cluster.Mechanisms) {
		t.Errorf("views.SASLMechanisms %v, cluster.Mechanisms %v", views.SASLMechanisms, cluster.Mechanisms)
	}
	e := newEnv(t)
	p := e.signIn(e.client, "admin", adminPassword)
	values := func(sel string) []string {
		var out []string
		p.doc.Find(sel).Each(func(_ int, s *goquery.Selection) { out = append(out, s.AttrOr("value", "")) })
		return out
	}
	if got := values(`#security_protocol option`); !slices.Equal(got, []string{"PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL", "SSL"}) {
		t.Errorf("protocols offered %v", got)
	}
	if got := values(`#sasl_mechanism option`); !slices.Equal(got, []string{"", "SCRAM-SHA-512", "PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"}) {
		t.Errorf("mechanisms offered %v", got)
	}
	// Each field is marked with the choices it is shown for (app.css hides
	// it for the others), in the form's order.
	want := []struct{ id, when string }{
		{"security_protocol", ""}, {"sasl_mechanism", "when-sasl"}, {"username", "when-password"}, {"password", "when-password"},
		{"ca_pem", "when-tls"}, {"client_cert_pem", "when-tls"}, {"client_key_pem", "when-tls"}, {"client_key_password", "when-tls"},
		{"oauth_token_endpoint", "when-oauth"}, {"oauth_client_id", "when-oauth"}, {"oauth_client_secret", "when-oauth"},
		{"oauth_scope", "when-oauth"}, {"oauth_audience", "when-oauth"},
	}
	var order []string
	p.testid("add-cluster-form").Find(`input[id], select[id], textarea[id]`).Each(func(_ int, s *goquery.Selection) {
		order = append(order, s.AttrOr("id", ""))
	})
	var ids []string
	for _, w := range want {
		ids = append(ids, w.id)
		el := p.doc.Find("#" + w.id)
		if el.Length() != 1 {
			t.Errorf("no #%s", w.id)
			continue
		}
		if p.doc.Find(`label[for="`+w.id+`"]`).Length() != 1 {
			t.Errorf("#%s has no label", w.id)
		}
		got := el.ParentsFiltered(`[class*="when-"]`)
		switch {
		case w.when == "" && got.Length() != 0:
			t.Errorf("#%s is shown only for some choices (%s)", w.id, got.AttrOr("class", ""))
		case w.when != "" && !got.First().HasClass(w.when):
			t.Errorf("#%s: shown by %q, want %s", w.id, got.First().AttrOr("class", ""), w.when)
		}
	}
	if i := slices.Index(order, "security_protocol"); i < 0 || !slices.Equal(order[i:], ids) {
		t.Errorf("fields in the order %v, want %v", order, ids)
	}
	if !p.doc.Find(`#add-cluster`).HasClass("security") {
		t.Error("the form is not a .security block: app.css would show every field")
	}
	for _, id := range []string{"password", "client_key_password", "oauth_client_secret"} {
		if p.doc.Find("#"+id).AttrOr("type", "") != "password" {
			t.Errorf("#%s is not a password input", id)
		}
	}
}

// An SSL instance with a client certificate: each wrong part gets its
// message by its field, the key and its password are never sent back, and
// what is stored is what was pasted.
func TestInstanceFormClientCertificate(t *testing.T) {
	e := newEnv(t)
	p := e.signIn(e.client, "admin", adminPassword)
	csrf := p.csrf(t)
	cert := newTestCert(t, "kmirror-east")
	base := func(kv ...string) []string {
		return append([]string{"name", "east", "bootstrap_servers", "127.0.0.1:9093", "security_protocol", "SSL",
			// Typed before SSL was chosen, hidden since: left out.
			"sasl_mechanism", "SCRAM-SHA-512", "username", "alice", "password", "hidden-pw",
			"oauth.client_id", "hidden-client"}, kv...)
	}

	// The key of another certificate.
	p = e.postForm(e.client, "/instances", clusterForm(csrf, base("client_cert_pem", cert.chain, "client_key_pem", cert.otherKey)...), nil)
	if p.status != http.StatusUnprocessableEntity {
		t.Fatalf("mismatched key: status %d, want 422", p.status)
	}
	if got := p.testid("error-client_key_pem").Text(); !strings.Contains(got, "does not belong to the client certificate") ||
		!strings.Contains(got, "paste the private key again") {
		t.Errorf("client key messages %q", got)
	}
	for _, f := range []string{"client_cert_pem", "username", "password", "sasl_mechanism", "oauth", "oauth.client_id"} {
		if n := p.testid("error-" + f).Length(); n != 0 {
			t.Errorf("%d message(s) by %s: %q", n, f, p.testid("error-"+f).Text())
		}
	}
	if got := p.doc.Find(`#client_cert_pem`).Text(); got != cert.chain {
		t.Errorf("certificate chain not kept: %q", got)
	}
	if got := p.doc.Find(`#client_key_pem`).Text(); got != "" {
		t.Errorf("client key sent back: %q", got)
	}
	if strings.Contains(p.body, keyLine(cert.otherKey)) || strings.Contains(p.body, "hidden-pw") {
		t.Error("a secret came back in the page")
	}
	if v, _ := p.doc.Find(`#username`).Attr("value"); v != "alice" {
		t.Errorf("a hidden field's typed value not kept: %q", v)
	}

	// A certificate that is not PEM, and a key password for a key that
	// is not encrypted.
	p = e.postForm(e.client, "/instances", clusterForm(csrf, base("client_cert_pem", "MIIB not a pem", "client_key_pem", cert.key)...), nil)
	if got := p.testid("error-client_cert_pem").Text(); !strings.Contains(got, "not PEM") {
		t.Errorf("certificate message %q", got)
	}
	if got := p.testid("error-client_key_pem").Text(); got != "paste the private key again: it is not sent back to the browser" {
		t.Errorf("client key message %q", got)
	}
	p = e.postForm(e.client, "/instances", clusterForm(csrf, base("client_cert_pem", cert.chain, "client_key_pem", cert.key,
		"client_key_password", "not-needed-pw")...), nil)
	if got := p.testid("error-client_key_password").Text(); !strings.Contains(got, "not encrypted") || !strings.Contains(got, "enter the key password again") {
		t.Errorf("key password messages %q", got)
	}
	if strings.Contains(p.body, "not-needed-pw") {
		t.Error("the key password came back in the page")
	}

	// Right: stored as pasted, the hidden fields left out.
	p = e.postForm(e.client, "/instances", clusterForm(csrf, base("client_cert_pem", cert.chain, "client_key_pem", cert.key)...), nil)
	if p.url != "/instances" || p.testid("flash-success").Length() != 1 {
		t.Fatalf("add: %d at %s\n%s", p.status, p.url, p.testid("add-cluster-form").Text())
	}
	s, err := e.svc.ClusterSettings(context.Background(), "east")
	if err != nil {
		t.Fatal(err)
	}
	if s.SecurityProtocol != "SSL" || s.ClientKeyPEM != strings.TrimSpace(cert.key) || s.ClientCertPEM != strings.TrimSpace(cert.chain) ||
		s.Username != "" || s.Password != "" || s.SASLMechanism != "" || s.OAuth != (cluster.OAuth{}) {
		t.Errorf("stored %+v", s.Redacted())
	}
	if strings.Contains(p.body, keyLine(cert.key)) {
		t.Error("the client key is in the list")
	}
}

// SASL_SSL with OAUTHBEARER: the grant's fields by their inputs, the client
// secret never sent back, the user name and password (hidden) left out.
func TestInstanceFormOAuthBearer(t *testing.T) {
	e := newEnv(t)
	p := e.signIn(e.client, "admin", adminPassword)
	csrf := p.csrf(t)
	const secret = "oauth-secret-Zq8!never-shown"
	form := func(kv ...string) []string {
		return append([]string{"name", "idp", "bootstrap_servers", "127.0.0.1:9094", "security_protocol", "SASL_SSL",
			"sasl_mechanism", "OAUTHBEARER", "username", "alice", "password", "hidden-pw",
			"oauth.token_endpoint", "https://idp.example.com/oauth2/token", "oauth.client_id", "kmirror",
			"oauth.scope", "kafka", "oauth.audience", "kafka-cluster"}, kv...)
	}
	p = e.postForm(e.client, "/instances", clusterForm(csrf, form()...), nil)
	if p.status != http.StatusUnprocessableEntity {
		t.Fatalf("no secret: status %d, want 422", p.status)
	}
	if got := p.testid("error-oauth.client_secret").Text(); !strings.Contains(got, "needs the OAuth client secret") {
		t.Errorf("client secret message %q", got)
	}
	for _, f := range []string{"username", "password", "oauth.token_endpoint", "oauth.client_id"} {
		if n := p.testid("error-" + f).Length(); n != 0 {
			t.Errorf("%d message(s) by %s: %q", n, f, p.testid("error-"+f).Text())
		}
	}
	for id, want := range map[string]string{"oauth_token_endpoint": "https://idp.example.com/oauth2/token", "oauth_client_id": "kmirror",
		"oauth_scope": "kafka", "oauth_audience": "kafka-cluster"} {
		if v, _ := p.doc.Find("#" + id).Attr("value"); v != want {
			t.Errorf("#%s not kept: %q", id, v)
		}
	}
	if v, _ := p.doc.Find(`#sasl_mechanism option[selected]`).Attr("value"); v != "OAUTHBEARER" {
		t.Errorf("mechanism not kept: %q", v)
	}

	// A bad endpoint, with the secret: the secret is asked for again.
	p = e.postForm(e.client, "/instances", clusterForm(csrf, append(form("oauth.client_secret", secret), "oauth.token_endpoint", "http://idp.example.com/token")...), nil)
	if got := p.testid("error-oauth.token_endpoint").Text(); !strings.Contains(got, "must use https") {
		t.Errorf("token endpoint message %q", got)
	}
	if got := p.testid("error-oauth.client_secret").Text(); got != "enter the client secret again: it is not sent back to the browser" {
		t.Errorf("client secret message %q", got)
	}
	if strings.Contains(p.body, secret) {
		t.Error("the client secret came back in the page")
	}

	p = e.postForm(e.client, "/instances", clusterForm(csrf, form("oauth.client_secret", secret)...), nil)
	if p.url != "/instances" || p.testid("flash-success").Length() != 1 {
		t.Fatalf("add: %d at %s\n%s", p.status, p.url, p.testid("add-cluster-form").Text())
	}
	s, err := e.svc.ClusterSettings(context.Background(), "idp")
	if err != nil {
		t.Fatal(err)
	}
	want := cluster.OAuth{TokenEndpoint: "https://idp.example.com/oauth2/token", ClientID: "kmirror", ClientSecret: secret, Scope: "kafka", Audience: "kafka-cluster"}
	if s.OAuth != want || s.Username != "" || s.Password != "" {
		t.Errorf("stored %+v", s.Redacted())
	}
	if strings.Contains(p.body, secret) {
		t.Error("the client secret is in the list")
	}
}

// A refused form asks for every secret that was given again and sends none
// back.
func TestInstanceFormSendsNoSecretBack(t *testing.T) {
	e := newEnv(t)
	p := e.signIn(e.client, "admin", adminPassword)
	cert := newTestCert(t, "kmirror-west")
	p = e.postForm(e.client, "/instances", clusterForm(p.csrf(t), "name", "bad name!", "bootstrap_servers", "127.0.0.1:9093",
		"security_protocol", "SASL_SSL", "sasl_mechanism", "SCRAM-SHA-512", "username", "alice", "password", "typed-pw-1",
		"client_cert_pem", cert.chain, "client_key_pem", cert.key, "client_key_password", "typed-pw-2"), http.Header{"Hx-Request": {"true"}})
	if p.status != http.StatusUnprocessableEntity || p.testid("error-name").Length() != 1 {
		t.Fatalf("status %d\n%s", p.status, p.body)
	}
	for field, want := range map[string]string{
		"password":            "enter the password again",
		"client_key_pem":      "paste the private key again",
		"client_key_password": "enter the key password again",
	} {
		if got := p.testid("error-" + field).Text(); !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q", field, got, want)
		}
	}
	for _, s := range []string{"typed-pw-1", "typed-pw-2", keyLine(cert.key)} {
		if strings.Contains(p.body, s) {
			t.Errorf("%q came back in the form", s)
		}
	}
}

// The list and the instance page show a client certificate's subject,
// issuer and end, and an OAuth grant's client and endpoint, never a secret;
// a certificate that ends within 30 days is warned about, one that ends
// later is not.
func TestInstancePagesShowCredentials(t *testing.T) {
	e := newEnv(t)
	p := e.signIn(e.client, "admin", adminPassword)
	csrf := p.csrf(t)
	soon, later := newTestCertFor(t, "kmirror-soon", 10*24*time.Hour), newTestCertFor(t, "kmirror-later", 90*24*time.Hour)
	const secret = "oauth-secret-never-shown"
	for _, f := range [][]string{
		{"name", "soon", "bootstrap_servers", "127.0.0.1:9093", "security_protocol", "SSL", "client_cert_pem", soon.chain, "client_key_pem", soon.key},
		{"name", "later", "bootstrap_servers", "127.0.0.1:9093", "security_protocol", "SASL_SSL", "sasl_mechanism", "OAUTHBEARER",
			"client_cert_pem", later.chain, "client_key_pem", later.key,
			"oauth.token_endpoint", "https://idp.example.com/token", "oauth.client_id", "kmirror-app", "oauth.client_secret", secret},
	} {
		if p = e.postForm(e.client, "/instances", clusterForm(csrf, f...), nil); p.testid("flash-success").Length() != 1 {
			t.Fatalf("add %s: %d\n%s", f[1], p.status, p.testid("add-cluster-form").Text())
		}
	}
	row := func(name string) *goquery.Selection {
		return p.doc.Find(`[data-testid="cluster-row"][data-cluster="` + name + `"]`)
	}
	if got := row("soon").Find(`[data-testid="cluster-cert"]`).Text(); !strings.Contains(got, "CN=kmirror-soon") ||
		!strings.Contains(got, "issued by CN=form test CA") || !strings.Contains(got, "valid until 20") {
		t.Errorf("soon's certificate in the list: %q", got)
	}
	if got := row("soon").Find(`[data-testid="cert-badge"]`).Text(); got != "expires soon" {
		t.Errorf("soon's badge %q", got)
	}
	if n := row("later").Find(`[data-testid="cert-badge"]`).Length(); n != 0 {
		t.Error("a certificate valid for 90 days is marked")
	}
	if got := row("later").Find(`[data-testid="cluster-auth"]`).Text(); !strings.Contains(got, "SASL_SSL OAUTHBEARER as client kmirror-app") ||
		!strings.Contains(row("later").Find(`[data-testid="cluster-oauth"]`).Text(), "https://idp.example.com/token") {
		t.Errorf("later's authentication in the list: %q", got)
	}
	if got := row("soon").Find(`[data-testid="cluster-auth"]`).Text(); !strings.Contains(got, "SSL (TLS, no SASL)") {
		t.Errorf("soon's authentication in the list: %q", got)
	}

	ov := e.get(e.client, "/instances/soon")
	if got := ov.testid("client-cert-subject").Text(); !strings.Contains(got, "CN=kmirror-soon") {
		t.Errorf("instance page subject %q", got)
	}
	if got := ov.testid("client-cert").Text(); !strings.Contains(got, "issued by CN=form test CA") || !strings.Contains(got, "private key stored encrypted") {
		t.Errorf("instance page certificate %q", got)
	}
	w := ov.testid("cert-warning")
	if w.Length() != 1 || w.AttrOr("role", "") != "alert" || !w.HasClass("alert") || !strings.Contains(w.Text(), "instance soon") ||
		!strings.Contains(w.Text(), "expires on") {
		t.Errorf("instance page warning %q", w.Text())
	}
	ov = e.get(e.client, "/instances/later")
	if ov.testid("cert-warning").Length() != 0 {
		t.Error("a certificate valid for 90 days is warned about")
	}
	if got := ov.testid("oauth").Text(); !strings.Contains(got, "client kmirror-app at https://idp.example.com/token") ||
		!strings.Contains(got, "client secret stored encrypted") {
		t.Errorf("instance page OAuth %q", got)
	}
	for _, page := range []page{p, ov, e.get(e.client, "/instances/soon")} {
		for _, s := range []string{secret, keyLine(soon.key), keyLine(later.key)} {
			if strings.Contains(page.body, s) {
				t.Errorf("%s shows a secret", page.url)
			}
		}
	}

	// In Traditional Chinese.
	e.get(e.client, "/lang?to=zh-TW&next=/instances")
	ov = e.get(e.client, "/instances/soon")
	if got := ov.testid("cert-warning").Text(); !strings.Contains(got, "實例soon的客戶端證書") || !strings.Contains(got, "過期") {
		t.Errorf("zh-TW warning %q", got)
	}
}
