package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/kmirror/kmirror/internal/connect/connecttest"
	"github.com/kmirror/kmirror/internal/service"
)

// connectForm is the add form as a browser posts it.
func connectForm(csrf string, kv ...string) url.Values {
	v := url.Values{"_csrf": {csrf}}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

// addConnectCluster registers a Connect cluster through the service, as
// the API and CLI do.
func (e *taskEnv) addConnectCluster(name, kafka string) {
	e.t.Helper()
	if _, err := e.svc.AddConnectCluster(service.WithActor(context.Background(), service.Actor{Name: "admin", Role: service.RoleAdmin}),
		service.ConnectClusterSettings{Name: name, URLs: []string{"http://127.0.0.1:8083"}, KafkaCluster: kafka}); err != nil {
		e.t.Fatal(err)
	}
}

func TestConnectClustersAddListRemove(t *testing.T) {
	e := newTaskEnv(t)
	p := e.signIn(e.client, "admin", adminPassword)
	if p.testid("nav-connect-clusters").Length() != 1 {
		t.Fatal("no left navigation entry for Kafka Connect clusters")
	}
	p = e.get(e.client, "/connect-clusters")
	if p.status != http.StatusOK || p.testid("connect-clusters-empty").Length() != 1 {
		t.Fatalf("empty list: %d\n%s", p.status, p.body)
	}
	if !p.testid("nav-connect-clusters").HasClass("active") {
		t.Error("nav entry not marked active")
	}
	var options []string
	p.doc.Find(`select[name="kafka_cluster"] option`).Each(func(_ int, o *goquery.Selection) { options = append(options, o.AttrOr("value", "")) })
	if strings.Join(options, ",") != ",east,west" {
		t.Errorf("kafka_cluster choices %q, want the registered instances", options)
	}

	p = e.postForm(e.client, "/connect-clusters", connectForm(p.csrf(t),
		"name", "west-connect", "urls", "http://10.0.0.5:8083/\r\nhttp://10.0.0.6:8083, http://10.0.0.7:8083",
		"kafka_cluster", "west", "username", "connect", "password", "connect-secret-pw", "config_provider", "vault"), nil)
	if p.url != "/connect-clusters" || p.testid("flash-success").Text() != "Kafka Connect cluster west-connect added." {
		t.Fatalf("add: %d at %s\n%s", p.status, p.url, p.body)
	}
	row := p.doc.Find(`[data-testid="connect-cluster-row"][data-connect-cluster="west-connect"]`)
	if got := row.Find(`[data-testid="connect-cluster-urls"]`).Text(); got != "http://10.0.0.5:8083, http://10.0.0.6:8083, http://10.0.0.7:8083" {
		t.Errorf("urls %q", got)
	}
	if got := row.Find(`[data-testid="connect-cluster-kafka"]`).Text(); got != "west" {
		t.Errorf("kafka cluster %q", got)
	}
	if got := row.Find(`[data-testid="connect-cluster-auth"]`).AttrOr("data-password-set", ""); got != "true" {
		t.Errorf("password set %q", got)
	}
	if strings.Contains(p.body, "connect-secret-pw") {
		t.Fatal("the Connect password is in the page")
	}
	if cc, err := e.svc.ConnectCluster(context.Background(), "west-connect"); err != nil || cc.ConfigProvider != "vault" || cc.Username != "connect" {
		t.Errorf("stored %+v %v", cc, err)
	}

	// In use as an instance's default engine: the service's reason shows.
	if _, err := e.svc.SetSmartConnect(service.WithActor(context.Background(), service.Actor{Name: "admin", Role: service.RoleAdmin}),
		"west", service.SmartConnect{Enabled: true, Engine: "connect:west-connect"}); err != nil {
		t.Fatal(err)
	}
	p = e.postForm(e.client, "/connect-clusters/west-connect/delete", url.Values{"_csrf": {p.csrf(t)}}, nil)
	if got := p.testid("flash-error").Text(); !strings.Contains(got, `Connect cluster "west-connect" is in use`) {
		t.Fatalf("remove in use: flash %q", got)
	}
	if p.testid("connect-cluster-row").Length() != 1 {
		t.Fatal("a Connect cluster in use was removed")
	}
	if _, err := e.svc.SetSmartConnect(service.WithActor(context.Background(), service.Actor{Name: "admin", Role: service.RoleAdmin}),
		"west", service.SmartConnect{Enabled: true, Engine: "embedded"}); err != nil {
		t.Fatal(err)
	}
	p = e.postForm(e.client, "/connect-clusters/west-connect/delete", url.Values{"_csrf": {p.csrf(t)}}, nil)
	if got := p.testid("flash-success").Text(); got != "Kafka Connect cluster west-connect removed." {
		t.Fatalf("remove: flash %q", got)
	}
	if p.testid("connect-cluster-row").Length() != 0 {
		t.Fatal("still listed after removal")
	}
}

func TestInvalidConnectClusterShowsMessagesByFields(t *testing.T) {
	e := newTaskEnv(t)
	p := e.signIn(e.client, "admin", adminPassword)
	csrf := p.csrf(t)
	form := connectForm(csrf, "name", "bad name!", "urls", "ftp://h", "kafka_cluster", "nowhere", "password", "typed-password",
		"config_provider", "bad provider!")
	p = e.postForm(e.client, "/connect-clusters", form, nil)
	if p.status != http.StatusUnprocessableEntity {
		t.Fatalf("status %d, want 422", p.status)
	}
	for _, field := range []string{"name", "urls", "kafka_cluster", "username", "password", "config_provider"} {
		if p.testid("error-"+field).Length() == 0 {
			t.Errorf("no message next to %s", field)
		}
	}
	if v, _ := p.doc.Find("#cc-name").Attr("value"); v != "bad name!" {
		t.Errorf("name not kept: %q", v)
	}
	if v := p.doc.Find("#cc-urls").Text(); v != "ftp://h" {
		t.Errorf("urls not kept: %q", v)
	}
	if strings.Contains(p.body, "typed-password") {
		t.Error("the typed password came back in the page")
	}
	if p.testid("connect-cluster-row").Length() != 0 {
		t.Error("an invalid Connect cluster was stored")
	}

	// htmx gets the form alone, to swap in place.
	p = e.postForm(e.client, "/connect-clusters", form, http.Header{"Hx-Request": {"true"}, "X-Csrf-Token": {csrf}})
	if p.status != http.StatusUnprocessableEntity || strings.Contains(p.body, "<html") || p.testid("error-urls").Length() == 0 {
		t.Fatalf("htmx: %d\n%s", p.status, p.body)
	}

	// In Traditional Chinese the service's messages are translated too.
	e.get(e.client, "/lang?to=zh-TW&next=/connect-clusters")
	for urls, want := range map[string]string{
		"":                            "請至少填寫一個Connect Worker的REST地址",
		"ftp://h":                     `"ftp://h"必須以 http:// 或 https:// 開頭`,
		"http://u:p@h:8083":           "包含認證信息",
		"http://h:8083/?x=1":          "不能包含查詢參數",
		"http://h:8083 http://h:8083": `"http://h:8083"重`,
	} {
		p = e.postForm(e.client, "/connect-clusters", connectForm(csrf, "name", "c1", "urls", urls), nil)
		if got := p.testid("error-urls").Text(); !strings.Contains(got, want) {
			t.Errorf("zh-TW message for %q: %q, want %q in it", urls, got, want)
		}
	}
}

// A Connect cluster behind a client certificate and a bearer token is
// registered from the form; the list says both are set and never shows the
// key or the token. Refused input keeps the certificate, not the secrets,
// and asks for them again, in both languages.
func TestConnectClusterFormTakesClientCertificateAndToken(t *testing.T) {
	e := newTaskEnv(t)
	p := e.signIn(e.client, "admin", adminPassword)
	csrf := p.csrf(t)
	ca := connecttest.NewCA(t)
	cert, key := ca.Issue(t, "kmirror")
	_, otherKey := ca.Issue(t, "other")
	const token = "form-token-secret"
	keyLine := strings.Split(strings.TrimSpace(key), "\n")[1]

	p = e.postForm(e.client, "/connect-clusters", connectForm(csrf, "name", "bad", "urls", "https://c1:8443", "kafka_cluster", "west",
		"username", "u", "password", "typed-password", "bearer_token", token, "client_cert_pem", cert, "client_key_pem", otherKey), nil)
	if p.status != http.StatusUnprocessableEntity {
		t.Fatalf("status %d, want 422", p.status)
	}
	for _, field := range []string{"bearer_token", "client_key_pem"} {
		if p.testid("error-"+field).Length() == 0 {
			t.Errorf("no message next to %s:\n%s", field, p.body)
		}
	}
	if !strings.Contains(p.testid("error-client_key_pem").Text(), "does not belong to the client certificate") {
		t.Errorf("key message: %q", p.testid("error-client_key_pem").Text())
	}
	if !strings.Contains(p.testid("error-bearer_token").Text(), "enter it again") {
		t.Errorf("no ask to type the token again: %q", p.testid("error-bearer_token").Text())
	}
	if got := p.doc.Find("#cc-client-cert").Text(); strings.TrimSpace(got) != strings.TrimSpace(cert) {
		t.Errorf("certificate not kept: %q", got)
	}
	for _, secret := range []string{token, "typed-password", strings.Split(strings.TrimSpace(otherKey), "\n")[1]} {
		if strings.Contains(p.body, secret) {
			t.Errorf("a typed secret came back in the page: %s", secret)
		}
	}

	e.get(e.client, "/lang?to=zh-TW&next=/connect-clusters")
	p = e.postForm(e.client, "/connect-clusters", connectForm(csrf, "name", "bad", "urls", "https://c1:8443", "kafka_cluster", "west",
		"username", "u", "password", "p", "bearer_token", token, "client_cert_pem", cert, "client_key_pem", otherKey), nil)
	if got := p.testid("error-client_key_pem").Text(); !strings.Contains(got, "私鑰與客戶端證書（證書鏈中的第一個證書）不匹配") {
		t.Errorf("zh-TW key message: %q", got)
	}
	if got := p.testid("error-bearer_token").Text(); !strings.Contains(got, "Basic認證") {
		t.Errorf("zh-TW token message: %q", got)
	}
	e.get(e.client, "/lang?to=en&next=/connect-clusters")

	p = e.postForm(e.client, "/connect-clusters", connectForm(csrf, "name", "mtls", "urls", "https://c1:8443", "kafka_cluster", "west",
		"bearer_token", token, "client_cert_pem", cert, "client_key_pem", key), nil)
	if p.url != "/connect-clusters" || p.testid("flash-success").Length() != 1 {
		t.Fatalf("add: %d at %s\n%s", p.status, p.url, p.body)
	}
	auth := p.doc.Find(`[data-testid="connect-cluster-row"][data-connect-cluster="mtls"] [data-testid="connect-cluster-auth"]`)
	if auth.AttrOr("data-bearer-token-set", "") != "true" || auth.AttrOr("data-client-cert-set", "") != "true" ||
		strings.TrimSpace(auth.Text()) != "bearer token set, client certificate" {
		t.Errorf("auth cell %q %v", auth.Text(), auth.Nodes)
	}
	if strings.Contains(p.body, token) || strings.Contains(p.body, keyLine) {
		t.Fatal("the bearer token or the client key is in the page")
	}
	if got, err := e.svc.ConnectClusterSettings(context.Background(), "mtls"); err != nil || got.BearerToken != token || got.ClientKeyPEM != strings.TrimSpace(key) {
		t.Errorf("stored: %v", err)
	}
}

func TestConnectClustersAreAdminOnly(t *testing.T) {
	e := newTaskEnv(t)
	e.addConnectCluster("west-connect", "west")
	e.addUser("otto", service.RoleOperator)
	b := e.newBrowser()
	e.signIn(b, "otto", "otto-password")
	p := e.get(b, "/connect-clusters")
	if p.status != http.StatusOK || p.testid("connect-cluster-row").Length() != 1 {
		t.Fatalf("an operator cannot see the list: %d", p.status)
	}
	if p.testid("add-connect-cluster-form").Length() != 0 || p.testid("remove-connect-cluster").Length() != 0 {
		t.Error("an operator is offered admin actions")
	}
	csrf := p.csrf(t)
	if p := e.postForm(b, "/connect-clusters", connectForm(csrf, "name", "c2", "urls", "http://h:8083", "kafka_cluster", "east"), nil); p.status != http.StatusForbidden {
		t.Errorf("add as operator: %d, want 403", p.status)
	}
	if p := e.postForm(b, "/connect-clusters/west-connect/delete", url.Values{"_csrf": {csrf}}, nil); p.status != http.StatusForbidden {
		t.Errorf("remove as operator: %d, want 403", p.status)
	}
	if list, err := e.svc.ListConnectClusters(context.Background()); err != nil || len(list) != 1 {
		t.Errorf("after refused changes: %v %v", list, err)
	}
}
