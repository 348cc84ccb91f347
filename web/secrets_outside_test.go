package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/connect/connecttest"
	"github.com/kmirror/kmirror/internal/service"
)

// No value of a connector setting or an imported mm2.properties reaches a
// viewer or anyone else: the MirrorMaker 2 listing (API and page), an
// adoption and an import answer, and the server's log, name such keys
// only.
func TestNoSecretFromOutsideReachesAnAnswerAPageOrTheLog(t *testing.T) {
	e := newTaskEnv(t)
	src := map[string]string{
		"connector.class":                  "org.apache.kafka.connect.mirror.MirrorSourceConnector",
		"source.cluster.alias":             "A",
		"target.cluster.alias":             "B",
		"source.cluster.bootstrap.servers": "127.0.0.1:9092",
		"target.cluster.bootstrap.servers": "127.0.0.1:9093",
		"topics":                           "orders",
	}
	for k, v := range connecttest.Credentials("s3cr3t") {
		src[k] = v
	}
	worker := connecttest.Start(t, connecttest.Worker{Connectors: map[string]map[string]string{"mm2-src": src}})
	if code, _, body := e.call(http.MethodPost, "/api/v1/connect-clusters", fmt.Sprintf(`{"name":"mc","urls":[%q],"kafka_cluster":"west"}`, worker)); code != http.StatusCreated {
		t.Fatalf("register the Connect cluster: %d %v", code, body)
	}
	viewer := e.token("dash", service.RoleViewer)
	var seen []string
	code, _, body := e.api(http.MethodGet, "/api/v1/connect-clusters/mc/mm2", viewer, "")
	raw, _ := json.Marshal(body)
	if code != http.StatusOK || !strings.Contains(string(raw), "some.vendor.option") {
		t.Fatalf("the listing as a viewer: %d %s", code, raw)
	}
	seen = append(seen, "listing: "+string(raw))

	e.addUser("vera", service.RoleViewer)
	b := e.newBrowser()
	e.signIn(b, "vera", "vera-password")
	p := e.get(b, "/connect-clusters/mc/mm2")
	if p.status != http.StatusOK {
		t.Fatalf("the MirrorMaker 2 page as a viewer: %d", p.status)
	}
	seen = append(seen, "page: "+p.body)

	code, _, body = e.call(http.MethodPost, "/api/v1/connect-clusters/mc/mm2/adopt", `{"source_connector":"mm2-src","name":"adopted","current":"east"}`)
	raw, _ = json.Marshal(body)
	if code < 400 {
		t.Fatalf("an adoption of a flow with settings kmirror cannot honour: %d %s", code, raw)
	}
	seen = append(seen, "adoption: "+string(raw))

	var props []string
	for k, v := range connecttest.Credentials("s3cr3t", "A.", "B.") {
		props = append(props, k+" = "+v)
	}
	sort.Strings(props)
	props = append(props, "clusters = A, B", "A.bootstrap.servers = 127.0.0.1:9092", "B.bootstrap.servers = 127.0.0.1:9093", "A->B.enabled = true", "A->B.topics = orders")
	in, _ := json.Marshal(map[string]string{"properties": strings.Join(props, "\n"), "name": "imported", "flow": "A->B", "current": "east"})
	code, _, body = e.call(http.MethodPost, "/api/v1/tasks/import-mm2", string(in))
	raw, _ = json.Marshal(body)
	if code < 400 {
		t.Fatalf("an import of a file with settings kmirror cannot honour: %d %s", code, raw)
	}
	seen = append(seen, "import: "+string(raw))

	a := e.newBrowser()
	form := e.get(a, "/signin")
	e.postForm(a, "/signin", url.Values{"_csrf": {form.csrf(t)}, "user": {"admin"}, "password": {adminPassword}}, nil)
	form = e.get(a, "/dashboard/import-mm2")
	p = e.postForm(a, "/dashboard/import-mm2", url.Values{"_csrf": {form.csrf(t)}, "properties": {strings.Join(props, "\n")}, "name": {"imported"}, "flow": {"A->B"}}, nil)
	seen = append(seen, "import page: "+p.body, "log: "+e.logs.String())
	for _, s := range seen {
		if i := strings.Index(s, "s3cr3t"); i >= 0 {
			kind, _, _ := strings.Cut(s, ":")
			t.Errorf("%s shows a secret: ...%s...", kind, s[max(0, i-200):min(len(s), i+40)])
		}
	}
}
