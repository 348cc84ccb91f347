package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/service"
)

// The mm2.properties import form: reached from the dashboard, refuses by
// field (the service's words), never shows a pasted secret again, and a
// viewer is neither offered it nor allowed it.
func TestImportMM2FormRefusesByFieldWithoutSecrets(t *testing.T) {
	e := newTaskEnv(t)
	e.signIn(e.client, "admin", adminPassword)
	if e.get(e.client, "/dashboard").testid("import-mm2-link").Length() != 1 {
		t.Fatal("no import-from-MirrorMaker link on the dashboard")
	}
	form := e.get(e.client, "/dashboard/import-mm2")
	if form.status != http.StatusOK || form.testid("import-mm2-form").Length() != 1 {
		t.Fatalf("import page: %d\n%s", form.status, form.body)
	}
	props := strings.Join([]string{
		"clusters = A, B",
		"A.bootstrap.servers = 127.0.0.1:9092",
		"B.bootstrap.servers = 127.0.0.1:9093",
		`A.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="mm2-secret-pw";`,
		"A->B.enabled = true",
		"B->A.enabled = true",
	}, "\n")
	v := url.Values{"_csrf": {form.csrf(t)}, "properties": {props}, "name": {"from-mm2"}}
	p := e.postForm(e.client, "/dashboard/import-mm2", v, nil)
	if p.status != http.StatusUnprocessableEntity || !strings.Contains(p.testid("error-flow").Text(), "A->B, B->A") {
		t.Fatalf("two flows, none named: %d %q\n%s", p.status, p.testid("error-flow").Text(), p.body)
	}
	if strings.Contains(p.body, "mm2-secret-pw") || p.testid("import-mm2-secrets-removed").Length() != 1 {
		t.Fatal("the refused form shows the pasted password again, or does not say it was taken out")
	}
	if got := p.doc.Find(`#mm2-name`).AttrOr("value", ""); got != "from-mm2" {
		t.Errorf("task name kept as %q", got)
	}

	e.addUser("vera", service.RoleViewer)
	b := e.newBrowser()
	csrf := e.signIn(b, "vera", "vera-password").csrf(t)
	if e.get(b, "/dashboard").testid("import-mm2-link").Length() != 0 {
		t.Error("a viewer is offered the import")
	}
	v.Set("_csrf", csrf)
	if p := e.postForm(b, "/dashboard/import-mm2", v, nil); p.status != http.StatusForbidden {
		t.Errorf("import as viewer: %d, want 403", p.status)
	}
}

// A Connect cluster that does not answer: its MirrorMaker 2 page says why
// instead of listing nothing.
func TestMM2PageSaysWhenConnectIsAway(t *testing.T) {
	e := newTaskEnv(t)
	e.addConnectCluster("west-connect", "west")
	e.signIn(e.client, "admin", adminPassword)
	list := e.get(e.client, "/connect-clusters")
	if href := list.testid("connect-cluster-mm2").AttrOr("href", ""); href != "/connect-clusters/west-connect/mm2" {
		t.Fatalf("MirrorMaker 2 link %q", href)
	}
	p := e.get(e.client, "/connect-clusters/west-connect/mm2")
	if p.status < 500 || p.testid("mm2-error").Length() != 1 || p.testid("mm2-empty").Length() != 0 {
		t.Fatalf("Connect away: %d %q\n%s", p.status, p.testid("mm2-error").Text(), p.body)
	}
	if p := e.get(e.client, "/connect-clusters/nowhere/mm2"); p.status != http.StatusNotFound {
		t.Errorf("unknown Connect cluster: %d", p.status)
	}
}
