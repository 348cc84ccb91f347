package consoletest

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kmirror/kmirror/internal/kafkatest"
)

// setValue puts text in a field as a paste would, without events (the
// instance form has no inline validation: it is sent as a whole).
func setValue(sel, text string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(function(){document.querySelector(%s).value=%s})()`, q(sel), q(text)))
}

// securityFields are the instance form's fields that come and go with the
// protocol and mechanism chosen, by id.
var securityFields = []string{"sasl_mechanism", "username", "password", "ca_pem", "client_cert_pem", "client_key_pem",
	"client_key_password", "oauth_token_endpoint", "oauth_client_id", "oauth_client_secret", "oauth_scope", "oauth_audience"}

// shown fails the test unless exactly the fields in want (ids) of
// securityFields are visible.
func (b *browser) shown(what string, want ...string) {
	b.t.Helper()
	var wrong []string
	for _, id := range securityFields {
		visible := b.evalBool(fmt.Sprintf(`document.getElementById(%s).checkVisibility()`, q(id)))
		if expect := contains(want, id); visible != expect {
			wrong = append(wrong, fmt.Sprintf("%s visible=%t", id, visible))
		}
	}
	if len(wrong) > 0 {
		b.screenshot("fields-" + strings.ReplaceAll(what, " ", "-"))
		b.t.Errorf("%s: %s", what, strings.Join(wrong, ", "))
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// fieldError waits for the message by field (its error-<name> element in
// the same .field as the input #id) and returns its text.
func (b *browser) fieldError(field, id string) string {
	b.t.Helper()
	sel := `[data-testid="error-` + field + `"]`
	b.waitFor("message by "+field, fmt.Sprintf(`!!document.querySelector(%s) && document.querySelector(%s).checkVisibility()`, q(sel), q(sel)), 15*time.Second)
	if !b.evalBool(fmt.Sprintf(`document.querySelector(%s).closest(".field").contains(document.getElementById(%s))`, q(sel), q(id))) {
		b.t.Errorf("the message about %s is not by #%s", field, id)
	}
	return b.text(sel)
}

// TestInstanceFormCredentials fills the instance form in a real browser,
// in both languages: the client certificate fields appear for SSL and
// SASL_SSL, the OAuth ones for OAUTHBEARER, the user name and password for
// PLAIN and SCRAM only; a certificate that is not PEM, a key that is not
// the certificate's and a missing client secret each get the server's
// message by their field; an SSL instance with its certificate is
// registered and its page shows the certificate's subject. axe-core checks
// each state of the form.
func TestInstanceFormCredentials(t *testing.T) {
	src := axeSource(t)
	ca, err := kafkatest.NewCA("console test CA", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	base := startConsole(t)
	b := newBrowser(t, base)
	b.run("sign in", chromedp.Navigate(base+"/signin"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="signin-form"]`)),
		chromedp.SendKeys(chromedp.CSS(`#user`), "admin"),
		chromedp.SendKeys(chromedp.CSS(`#password`), adminPassword),
		chromedp.Click(chromedp.CSS(`[data-testid="signin-submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="add-cluster-form"]`)))

	for _, want := range []struct{ lang, notPEM, notTheKey, noSecret, added string }{
		{lang: "en", notPEM: "not PEM", notTheKey: "does not belong to the client certificate", noSecret: "needs the OAuth client secret", added: "added"},
		{lang: "zh-TW", notPEM: "不是PEM", notTheKey: "不匹配", noSecret: "需要OAuth客戶端密鑰", added: "添加成功"},
	} {
		lang := want.lang
		cn := "console-" + strings.ToLower(lang)
		mine, err := ca.Issue(kafkatest.CertSpec{CommonName: cn})
		if err != nil {
			t.Fatal(err)
		}
		other, err := ca.Issue(kafkatest.CertSpec{CommonName: "someone-else"})
		if err != nil {
			t.Fatal(err)
		}
		open := func(what string) {
			t.Helper()
			b.run(what+" "+lang, chromedp.Navigate(base+"/lang?to="+lang+"&next=/instances"),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="add-cluster-form"]`)))
			b.waitFor("page in "+lang, fmt.Sprintf(`document.documentElement.lang == %s`, q(lang)), 10*time.Second)
			b.waitFor("page settled", `!document.querySelector(".htmx-request")`, 15*time.Second)
		}
		axe := func(state string) {
			t.Helper()
			b.axeCheck(src, lang+" instance form, "+state)
		}

		// PLAINTEXT, as the form opens: nothing of security but the protocol.
		open("open the instances")
		b.shown(lang + " PLAINTEXT")
		axe("PLAINTEXT")

		// SSL: the CA and the client certificate, no SASL.
		b.run("choose SSL", setSelect(`#security_protocol`, "SSL"))
		b.shown(lang+" SSL", "ca_pem", "client_cert_pem", "client_key_pem", "client_key_password")
		axe("SSL")
		name := "ssl-" + strings.ToLower(lang)
		b.run("a certificate that is not PEM",
			setValue(`#name`, name), setValue(`#bootstrap_servers`, "127.0.0.1:19093"),
			// Typed while SASL_SSL was chosen, hidden since: left out.
			setValue(`#username`, "alice"),
			setValue(`#client_cert_pem`, "MIIB this is not a PEM certificate"), setValue(`#client_key_pem`, mine.KeyPEM),
			chromedp.Click(chromedp.CSS(`[data-testid="add-cluster-submit"]`)))
		if got := b.fieldError("client_cert_pem", "client_cert_pem"); !strings.Contains(got, want.notPEM) {
			t.Errorf("%s: certificate message %q", lang, got)
		}
		// The refused form comes back with SSL still chosen.
		b.shown(lang+" SSL refused", "ca_pem", "client_cert_pem", "client_key_pem", "client_key_password")
		if n := b.evalInt(`document.querySelectorAll('[data-testid="error-username"]').length`); n != 0 {
			t.Errorf("%s: the hidden user name got %d message(s)", lang, n)
		}
		if got := b.evalBool(`document.getElementById("client_key_pem").value === ""`); !got {
			t.Errorf("%s: the private key came back in the form", lang)
		}
		axe("SSL, certificate refused")

		b.run("a key that is not the certificate's",
			setValue(`#client_cert_pem`, mine.ChainPEM), setValue(`#client_key_pem`, other.KeyPEM),
			chromedp.Click(chromedp.CSS(`[data-testid="add-cluster-submit"]`)))
		b.waitFor("the certificate is accepted", `!document.querySelector('[data-testid="error-client_cert_pem"]')`, 15*time.Second)
		if got := b.fieldError("client_key_pem", "client_key_pem"); !strings.Contains(got, want.notTheKey) {
			t.Errorf("%s: client key message %q", lang, got)
		}
		axe("SSL, key refused")

		// The right key: registered, and its page shows the certificate.
		b.run("the right key", setValue(`#client_key_pem`, mine.KeyPEM),
			chromedp.Click(chromedp.CSS(`[data-testid="add-cluster-submit"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="cluster-row"][data-cluster="`+name+`"]`)))
		if got := b.text(`[data-testid="flash-success"]`); !strings.Contains(got, want.added) {
			t.Errorf("%s: banner %q", lang, got)
		}
		if got := b.text(`[data-cluster="` + name + `"] [data-testid="cluster-cert"]`); !strings.Contains(got, "CN="+cn) {
			t.Errorf("%s: the list shows the certificate as %q", lang, got)
		}
		b.run("open "+name, chromedp.Navigate(base+"/instances/"+name), chromedp.WaitVisible(chromedp.CSS(`[data-testid="instance-overview"]`)))
		if got := b.text(`[data-testid="client-cert-subject"]`); !strings.Contains(got, "CN="+cn) {
			t.Errorf("%s: instance page subject %q", lang, got)
		}
		// kafkatest's certificates last a week: inside the 30-day warning.
		b.run("the expiry warning", chromedp.WaitVisible(chromedp.CSS(`[data-testid="cert-warning"]`)))
		if strings.Contains(b.html(), strings.Split(mine.KeyPEM, "\n")[1]) {
			t.Errorf("%s: the instance page holds the private key", lang)
		}
		b.waitFor("page settled", `!document.querySelector(".htmx-request")`, 15*time.Second)
		b.axeCheck(src, lang+" instance page with a certificate ending soon")
		b.screenshot("instance-cert-" + lang)

		// SASL_SSL: a mechanism, with SCRAM a user name and password; with
		// OAUTHBEARER the OAuth grant instead.
		open("back to the instances")
		b.run("choose SASL_SSL", setSelect(`#security_protocol`, "SASL_SSL"), setSelect(`#sasl_mechanism`, "SCRAM-SHA-512"))
		b.shown(lang+" SASL_SSL SCRAM", "sasl_mechanism", "username", "password", "ca_pem", "client_cert_pem", "client_key_pem", "client_key_password")
		b.run("choose OAUTHBEARER", setSelect(`#sasl_mechanism`, "OAUTHBEARER"))
		oauthShown := []string{"sasl_mechanism", "ca_pem", "client_cert_pem", "client_key_pem", "client_key_password",
			"oauth_token_endpoint", "oauth_client_id", "oauth_client_secret", "oauth_scope", "oauth_audience"}
		b.shown(lang+" SASL_SSL OAUTHBEARER", oauthShown...)
		axe("SASL_SSL OAUTHBEARER")
		b.run("no client secret",
			setValue(`#name`, "oauth-"+strings.ToLower(lang)), setValue(`#bootstrap_servers`, "127.0.0.1:19094"),
			setValue(`#oauth_token_endpoint`, "https://idp.example.com/oauth2/token"), setValue(`#oauth_client_id`, "kmirror"),
			chromedp.Click(chromedp.CSS(`[data-testid="add-cluster-submit"]`)))
		if got := b.fieldError("oauth.client_secret", "oauth_client_secret"); !strings.Contains(got, want.noSecret) {
			t.Errorf("%s: client secret message %q", lang, got)
		}
		b.shown(lang+" OAUTHBEARER refused", oauthShown...)
		for _, f := range []string{"oauth.token_endpoint", "oauth.client_id", "username", "password"} {
			if n := b.evalInt(fmt.Sprintf(`document.querySelectorAll(%s).length`, q(`[data-testid="error-`+f+`"]`))); n != 0 {
				t.Errorf("%s: %d message(s) by %s", lang, n, f)
			}
		}
		axe("SASL_SSL OAUTHBEARER, secret missing")
		b.screenshot("instance-form-oauth-refused-" + lang)

		// And back: the OAuth fields go with OAUTHBEARER, everything but
		// the protocol with PLAINTEXT.
		b.run("back to PLAIN", setSelect(`#sasl_mechanism`, "PLAIN"))
		b.shown(lang+" SASL_SSL PLAIN", "sasl_mechanism", "username", "password", "ca_pem", "client_cert_pem", "client_key_pem", "client_key_password")
		b.run("SASL_PLAINTEXT", setSelect(`#security_protocol`, "SASL_PLAINTEXT"))
		b.shown(lang+" SASL_PLAINTEXT PLAIN", "sasl_mechanism", "username", "password")
		b.run("back to PLAINTEXT", setSelect(`#security_protocol`, "PLAINTEXT"))
		b.shown(lang + " PLAINTEXT again")
		b.noNewErrors(lang + " instance form")
	}
}

// changeValue puts text in a field and fires change, as a user's paste and
// leaving the field do: the task form validates inline on change.
func changeValue(sel, text string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
		`(function(){var e=document.querySelector(%s); e.value=%s; e.dispatchEvent(new Event("change",{bubbles:true}))})()`, q(sel), q(text)))
}

// TestTaskFormPeerCredentialFields is the task form's peer by address in a
// real browser, in both languages: its security fields follow the chosen
// protocol and mechanism as the instance form's do, inline validation puts
// the server's messages about a client certificate and an OAuth secret by
// their fields, and axe-core checks each state.
func TestTaskFormPeerCredentialFields(t *testing.T) {
	src := axeSource(t)
	base := startConsole(t)
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/clusters", strings.NewReader(`{"name":"east","bootstrap_servers":["127.0.0.1:19092"]}`))
	req.Header.Set("Authorization", "Bearer browser-test-token")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("register east: %d", resp.StatusCode)
	}
	b := newBrowser(t, base)
	b.run("sign in", chromedp.Navigate(base+"/signin"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="signin-form"]`)),
		chromedp.SendKeys(chromedp.CSS(`#user`), "admin"),
		chromedp.SendKeys(chromedp.CSS(`#password`), adminPassword),
		chromedp.Click(chromedp.CSS(`[data-testid="signin-submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="add-cluster-form"]`)))
	peer := []string{"f-peer-mechanism", "f-peer-username", "f-peer-password", "f-peer-ca", "f-peer-client-cert", "f-peer-client-key",
		"f-peer-client-key-password", "f-peer-oauth-token-endpoint", "f-peer-oauth-client-id", "f-peer-oauth-client-secret",
		"f-peer-oauth-scope", "f-peer-oauth-audience"}
	shown := func(what string, want ...string) {
		t.Helper()
		var wrong []string
		for _, id := range peer {
			visible := b.evalBool(fmt.Sprintf(`document.getElementById(%s).checkVisibility()`, q(id)))
			if visible != contains(want, id) {
				wrong = append(wrong, fmt.Sprintf("%s visible=%t", id, visible))
			}
		}
		if len(wrong) > 0 {
			b.screenshot("peer-fields-" + strings.ReplaceAll(what, " ", "-"))
			t.Errorf("%s: %s", what, strings.Join(wrong, ", "))
		}
	}
	for _, want := range []struct{ lang, notPEM, noSecret string }{
		{"en", "not PEM", "needs the OAuth client secret"},
		{"zh-TW", "不是PEM", "需要OAuth客戶端密鑰"},
	} {
		lang := want.lang
		b.run("open the task form "+lang, chromedp.Navigate(base+"/lang?to="+lang+"&next=/instances/east/smart-connect/new"),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="task-form"]`)))
		b.waitFor("page in "+lang, fmt.Sprintf(`document.documentElement.lang == %s`, q(lang)), 10*time.Second)
		shown(lang + " PLAINTEXT")

		b.run("SSL", setSelect(`#f-peer-protocol`, "SSL"))
		shown(lang+" SSL", "f-peer-ca", "f-peer-client-cert", "f-peer-client-key", "f-peer-client-key-password")
		b.run("a certificate that is not PEM", changeValue(`#f-peer-client-cert`, "MIIB not a PEM certificate"))
		sel := `[data-testid="error-peer.client_cert_pem"]`
		b.waitFor("certificate message", fmt.Sprintf(`!!document.querySelector(%s)`, q(sel)), 15*time.Second)
		if got := b.text(sel); !strings.Contains(got, want.notPEM) {
			t.Errorf("%s: certificate message %q", lang, got)
		}
		if !b.evalBool(fmt.Sprintf(`document.querySelector(%s).closest(".field").contains(document.getElementById("f-peer-client-cert"))`, q(sel))) {
			t.Errorf("%s: the certificate's message is not by its field", lang)
		}
		b.waitFor("page settled", `!document.querySelector(".htmx-request")`, 15*time.Second)
		b.axeCheck(src, lang+" task form, peer SSL, certificate refused")

		b.run("SASL_SSL OAUTHBEARER", setSelect(`#f-peer-protocol`, "SASL_SSL"), setSelect(`#f-peer-mechanism`, "OAUTHBEARER"))
		shown(lang+" SASL_SSL OAUTHBEARER", "f-peer-mechanism", "f-peer-ca", "f-peer-client-cert", "f-peer-client-key", "f-peer-client-key-password",
			"f-peer-oauth-token-endpoint", "f-peer-oauth-client-id", "f-peer-oauth-client-secret", "f-peer-oauth-scope", "f-peer-oauth-audience")
		b.run("a client id, no secret", changeValue(`#f-peer-oauth-client-id`, "kmirror"), changeValue(`#f-peer-oauth-client-secret`, ""))
		sel = `[data-testid="error-peer.oauth.client_secret"]`
		b.waitFor("client secret message", fmt.Sprintf(`!!document.querySelector(%s)`, q(sel)), 15*time.Second)
		if got := b.text(sel); !strings.Contains(got, want.noSecret) {
			t.Errorf("%s: client secret message %q", lang, got)
		}
		b.waitFor("page settled", `!document.querySelector(".htmx-request")`, 15*time.Second)
		b.axeCheck(src, lang+" task form, peer SASL_SSL OAUTHBEARER, secret missing")
		b.screenshot("task-form-peer-oauth-" + lang)

		b.run("SCRAM", setSelect(`#f-peer-mechanism`, "SCRAM-SHA-512"))
		shown(lang+" SASL_SSL SCRAM", "f-peer-mechanism", "f-peer-username", "f-peer-password", "f-peer-ca", "f-peer-client-cert",
			"f-peer-client-key", "f-peer-client-key-password")
		b.run("SASL_PLAINTEXT", setSelect(`#f-peer-protocol`, "SASL_PLAINTEXT"))
		shown(lang+" SASL_PLAINTEXT", "f-peer-mechanism", "f-peer-username", "f-peer-password")
		b.noNewErrors(lang + " task form")
	}
}
