package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/connect/connecttest"
)

func TestConnectClusterAPI(t *testing.T) {
	e := newEnv(t)
	if code, _, body := e.api(http.MethodPost, "/api/v1/clusters", apiToken, `{"name":"west","bootstrap_servers":["127.0.0.1:9092"]}`); code != http.StatusCreated {
		t.Fatalf("add cluster: %d %v", code, body)
	}
	// Bad input: every problem named by field, nothing stored.
	code, _, body := e.api(http.MethodPost, "/api/v1/connect-clusters", apiToken, `{"name":"c 1","urls":["ftp://h"],"kafka_cluster":"east"}`)
	if code != http.StatusUnprocessableEntity {
		t.Fatalf("invalid: %d %v", code, body)
	}
	fields := map[string]bool{}
	for _, p := range body["error"].(map[string]any)["problems"].([]any) {
		fields[p.(map[string]any)["field"].(string)] = true
	}
	for _, f := range []string{"name", "urls", "kafka_cluster"} {
		if !fields[f] {
			t.Errorf("no problem on %s: %v", f, body)
		}
	}
	if code, _, _ := e.api(http.MethodPost, "/api/v1/connect-clusters", apiToken, `{"name":"c1","urls":["http://127.0.0.1:8083"],"kafka_cluster":"west","unknown":1}`); code != http.StatusBadRequest {
		t.Errorf("unknown field: %d, want 400", code)
	}
	code, hdr, body := e.api(http.MethodPost, "/api/v1/connect-clusters", apiToken,
		`{"name":"c1","urls":["http://127.0.0.1:8083"],"kafka_cluster":"west","username":"u","password":"connect-secret-pw"}`)
	if code != http.StatusCreated || hdr.Get("Location") != "/api/v1/connect-clusters/c1" || body["password_set"] != true {
		t.Fatalf("add: %d %v %v", code, hdr, body)
	}
	code, _, body = e.api(http.MethodGet, "/api/v1/connect-clusters", apiToken, "")
	list, _ := body["connect_clusters"].([]any)
	if code != http.StatusOK || len(list) != 1 {
		t.Fatalf("list: %d %v", code, body)
	}
	code, _, body = e.api(http.MethodGet, "/api/v1/connect-clusters/c1", apiToken, "")
	if raw, _ := json.Marshal(body); code != http.StatusOK || strings.Contains(string(raw), "connect-secret-pw") {
		t.Fatalf("show: %d %v (the password must never come back)", code, body)
	}
	code, _, body = e.api(http.MethodPut, "/api/v1/clusters/west/smart-connect", apiToken, `{"enabled":true,"engine":"connect:c1"}`)
	if sc, _ := body["smart_connect"].(map[string]any); code != http.StatusOK || sc["engine"] != "connect:c1" {
		t.Fatalf("smart connect: %d %v", code, body)
	}
	if code, _, _ := e.api(http.MethodDelete, "/api/v1/connect-clusters/c1", apiToken, ""); code != http.StatusConflict {
		t.Errorf("delete the default engine of a cluster: %d, want 409", code)
	}
	if code, _, _ := e.api(http.MethodPut, "/api/v1/clusters/west/smart-connect", apiToken, `{"enabled":true,"engine":"embedded"}`); code != http.StatusOK {
		t.Fatal(code)
	}
	if code, _, _ := e.api(http.MethodDelete, "/api/v1/connect-clusters/c1", apiToken, ""); code != http.StatusNoContent {
		t.Errorf("delete: %d", code)
	}
	if code, _, _ := e.api(http.MethodGet, "/api/v1/connect-clusters/c1", apiToken, ""); code != http.StatusNotFound {
		t.Errorf("after delete: %d", code)
	}
}

// A client certificate, its key and a bearer token are taken by the API;
// the answers say which are set and never carry the key or the token; a
// key that is not the certificate's is a problem on client_key_pem, and a
// token with basic auth one on bearer_token.
func TestConnectClusterAPIClientCertificateAndToken(t *testing.T) {
	e := newEnv(t)
	if code, _, body := e.api(http.MethodPost, "/api/v1/clusters", apiToken, `{"name":"west","bootstrap_servers":["127.0.0.1:9092"]}`); code != http.StatusCreated {
		t.Fatalf("add cluster: %d %v", code, body)
	}
	ca := connecttest.NewCA(t)
	cert, key := ca.Issue(t, "kmirror")
	_, otherKey := ca.Issue(t, "other")
	req := func(key, extra string) string {
		b, _ := json.Marshal(map[string]string{"client_cert_pem": cert, "client_key_pem": key, "bearer_token": "api-token-secret"})
		return `{"name":"m1","urls":["https://127.0.0.1:8443"],"kafka_cluster":"west"` + extra + `,` + string(b[1:])
	}
	code, _, body := e.api(http.MethodPost, "/api/v1/connect-clusters", apiToken, req(otherKey, `,"username":"u","password":"p"`))
	if code != http.StatusUnprocessableEntity {
		t.Fatalf("invalid: %d %v", code, body)
	}
	fields := map[string]bool{}
	for _, p := range body["error"].(map[string]any)["problems"].([]any) {
		fields[p.(map[string]any)["field"].(string)] = true
	}
	if !fields["client_key_pem"] || !fields["bearer_token"] || len(fields) != 2 {
		t.Errorf("problems on %v, want client_key_pem and bearer_token", fields)
	}
	code, _, body = e.api(http.MethodPost, "/api/v1/connect-clusters", apiToken, req(key, ""))
	if code != http.StatusCreated || body["client_key_set"] != true || body["bearer_token_set"] != true || body["password_set"] != false ||
		body["client_cert_pem"] != strings.TrimSpace(cert) {
		t.Fatalf("add: %d %v", code, body)
	}
	for _, path := range []string{"/api/v1/connect-clusters/m1", "/api/v1/connect-clusters"} {
		code, _, body = e.api(http.MethodGet, path, apiToken, "")
		if raw, _ := json.Marshal(body); code != http.StatusOK || strings.Contains(string(raw), "api-token-secret") || strings.Contains(string(raw), "PRIVATE KEY") {
			t.Fatalf("%s: %d %s (the key and the token must never come back)", path, code, raw)
		}
	}
}

// The check answers 200 whether the cluster is usable or not; ok and each
// verdict say which.
func TestConnectClusterCheckAPI(t *testing.T) {
	e := newEnv(t)
	if code, _, body := e.api(http.MethodPost, "/api/v1/clusters", apiToken, `{"name":"west","bootstrap_servers":["127.0.0.1:9092"]}`); code != http.StatusCreated {
		t.Fatalf("add cluster: %d %v", code, body)
	}
	for _, tc := range []struct {
		name   string
		worker connecttest.Worker
		ok     bool
		failed string // the check that fails, if any
	}{
		{"good", connecttest.Worker{ExactlyOnce: true}, true, ""},
		{"strict", connecttest.Worker{RefuseOverrides: true, ExactlyOnce: true}, false, "client_overrides"},
		// Exactly once is optional: the cluster stays usable without it.
		{"at-least-once", connecttest.Worker{}, true, "exactly_once"},
	} {
		add := fmt.Sprintf(`{"name":%q,"urls":[%q],"kafka_cluster":"west"}`, tc.name, connecttest.Start(t, tc.worker))
		if code, _, body := e.api(http.MethodPost, "/api/v1/connect-clusters", apiToken, add); code != http.StatusCreated {
			t.Fatalf("add %s: %d %v", tc.name, code, body)
		}
		code, _, body := e.api(http.MethodPost, "/api/v1/connect-clusters/"+tc.name+"/check", apiToken, "")
		if code != http.StatusOK || body["ok"] != tc.ok || body["version"] != "4.1.0" {
			t.Fatalf("check %s: %d %v", tc.name, code, body)
		}
		checks, _ := body["checks"].([]any)
		if len(checks) != 4 {
			t.Fatalf("check %s: checks %v", tc.name, body["checks"])
		}
		for _, c := range checks {
			c := c.(map[string]any)
			if failed := c["name"] == tc.failed; c["ok"] == failed || c["verdict"] == "" || failed && c["fix"] == nil {
				t.Errorf("check %s: %v", tc.name, c)
			}
		}
	}
	if code, _, _ := e.api(http.MethodPost, "/api/v1/connect-clusters/nope/check", apiToken, ""); code != http.StatusNotFound {
		t.Errorf("check an unknown Connect cluster: %d, want 404", code)
	}
	if code, _, _ := e.api(http.MethodPost, "/api/v1/connect-clusters/good/check", "", ""); code != http.StatusUnauthorized {
		t.Errorf("check without a token: %d, want 401", code)
	}
}
