package web_test

import (
	"net/http"
	"strings"
	"testing"
)

func TestAPIRequiresToken(t *testing.T) {
	e := newEnv(t)
	for _, token := range []string{"", "wrong-token", apiToken + "x"} {
		code, h, body := e.api(http.MethodGet, "/api/v1/clusters", token, "")
		if code != http.StatusUnauthorized || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("token %q: status %d, WWW-Authenticate %q", token, code, h.Get("WWW-Authenticate"))
		}
		if errorCode(body) != "unauthorized" {
			t.Fatalf("token %q: body %v", token, body)
		}
	}
	// A signed-in console session is not an API credential.
	e.signIn(e.client, "admin", adminPassword)
	resp, err := e.client.Get(e.srv.URL + "/api/v1/clusters")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("session cookie on the API: status %d, want 401", resp.StatusCode)
	}
}

func errorCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func problemFields(body map[string]any) []string {
	e, _ := body["error"].(map[string]any)
	ps, _ := e["problems"].([]any)
	var out []string
	for _, p := range ps {
		m, _ := p.(map[string]any)
		f, _ := m["field"].(string)
		if msg, _ := m["message"].(string); msg == "" {
			f += "(no message)"
		}
		out = append(out, f)
	}
	return out
}

func TestAPIClusterLifecycle(t *testing.T) {
	e := newEnv(t)
	code, h, body := e.api(http.MethodPost, "/api/v1/clusters", apiToken,
		`{"name":"east","bootstrap_servers":["127.0.0.1:9092"],"security_protocol":"SASL_PLAINTEXT",
		  "sasl_mechanism":"SCRAM-SHA-512","username":"alice","password":"kafka-secret-pw"}`)
	if code != http.StatusCreated || h.Get("Location") != "/api/v1/clusters/east" {
		t.Fatalf("create: %d %q %v", code, h.Get("Location"), body)
	}
	if body["password_set"] != true || body["password"] != nil || body["tasks_limit"] != float64(18) {
		t.Fatalf("create answered %v", body)
	}

	code, _, body = e.api(http.MethodGet, "/api/v1/clusters/east", apiToken, "")
	if code != http.StatusOK || body["name"] != "east" || body["password_set"] != true || body["username"] != "alice" {
		t.Fatalf("get: %d %v", code, body)
	}
	code, _, body = e.api(http.MethodGet, "/api/v1/clusters", apiToken, "")
	list, _ := body["clusters"].([]any)
	if code != http.StatusOK || len(list) != 1 {
		t.Fatalf("list: %d %v", code, body)
	}
	if code, _, body := e.api(http.MethodDelete, "/api/v1/clusters/east", apiToken, ""); code != http.StatusNoContent {
		t.Fatalf("delete: %d %v", code, body)
	}
	code, _, body = e.api(http.MethodGet, "/api/v1/clusters/east", apiToken, "")
	if code != http.StatusNotFound || errorCode(body) != "not_found" {
		t.Fatalf("get after delete: %d %v", code, body)
	}
	code, _, body = e.api(http.MethodDelete, "/api/v1/clusters/east", apiToken, "")
	if code != http.StatusNotFound || errorCode(body) != "not_found" {
		t.Fatalf("delete twice: %d %v", code, body)
	}
}

func TestAPIErrorShape(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name   string
		body   string
		status int
		code   string
		fields string // problem fields, comma-separated
	}{
		{"invalid cluster lists every problem", `{"name":"","bootstrap_servers":["nohost"],"security_protocol":"SASL_SSL"}`,
			422, "invalid_cluster", "name,bootstrap_servers,sasl_mechanism,username,password"},
		{"bad protocol", `{"name":"a","bootstrap_servers":["h:1"],"security_protocol":"TLS"}`,
			422, "invalid_cluster", "security_protocol"},
		{"not json", `{"name":`, 400, "invalid_request", ""},
		{"empty body", ``, 400, "invalid_request", ""},
		{"wrong type", `{"name":"a","bootstrap_servers":"h:1"}`, 400, "invalid_request", ""},
		{"unknown field", `{"name":"a","bootstrap":"h:1"}`, 400, "invalid_request", ""},
		{"two objects", `{"name":"a"} {"name":"b"}`, 400, "invalid_request", ""},
		{"array", `[]`, 400, "invalid_request", ""},
		{"too large", `{"name":"` + strings.Repeat("a", 2<<20) + `"}`, 413, "invalid_request", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, body := e.api(http.MethodPost, "/api/v1/clusters", apiToken, tt.body)
			if code != tt.status || errorCode(body) != tt.code {
				t.Fatalf("status %d code %q, want %d %q (%v)", code, errorCode(body), tt.status, tt.code, body)
			}
			errObj, _ := body["error"].(map[string]any)
			if msg, _ := errObj["message"].(string); msg == "" {
				t.Fatal("error has no message")
			}
			if _, ok := errObj["problems"].([]any); !ok {
				t.Fatal("error has no problems array")
			}
			if got := strings.Join(problemFields(body), ","); got != tt.fields {
				t.Fatalf("problem fields %q, want %q", got, tt.fields)
			}
		})
	}
	// A duplicate is an invalid_cluster problem on the name, not a 500.
	ok := `{"name":"east","bootstrap_servers":["h:1"]}`
	if code, _, body := e.api(http.MethodPost, "/api/v1/clusters", apiToken, ok); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	code, _, body := e.api(http.MethodPost, "/api/v1/clusters", apiToken, ok)
	if code != 422 || errorCode(body) != "invalid_cluster" || strings.Join(problemFields(body), ",") != "name" {
		t.Fatalf("duplicate: %d %v", code, body)
	}
	code, _, body = e.api(http.MethodGet, "/api/v1/no-such-thing", apiToken, "")
	if code != http.StatusNotFound || errorCode(body) != "not_found" {
		t.Fatalf("unknown endpoint: %d %v", code, body)
	}
}
