package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHealthcheckExitsByTheServersAnswer(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"status":"ok"}`)) // a failed write fails the test that reads it
	}))
	defer ok.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"status":"unavailable"}`, http.StatusServiceUnavailable)
	}))
	defer down.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	tlsOK := httptest.NewTLSServer(ok.Config.Handler)
	defer tlsOK.Close()

	for _, tc := range []struct {
		name    string
		args    []string
		env     string
		wantErr string
	}{
		{name: "healthy by flag", args: []string{"--url", ok.URL + "/healthz"}},
		{name: "healthy by env", env: ok.URL + "/healthz"},
		{name: "flag wins over env", args: []string{"--url", ok.URL + "/healthz"}, env: down.URL + "/healthz"},
		{name: "unavailable", args: []string{"--url", down.URL + "/healthz"}, wantErr: "503"},
		{name: "wrong path", args: []string{"--url", ok.URL + "/nope"}, wantErr: "404"},
		{name: "nothing listening", args: []string{"--url", closed.URL + "/healthz"}, wantErr: "is kmirror serve running"},
		{name: "self-signed refused", args: []string{"--url", tlsOK.URL + "/healthz"}, wantErr: "certificate"},
		{name: "self-signed with --insecure", args: []string{"--insecure", "--url", tlsOK.URL + "/healthz"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			getenv := func(k string) string {
				if k == "KMIRROR_HEALTHCHECK_URL" {
					return tc.env
				}
				return ""
			}
			err := run(context.Background(), append([]string{"healthcheck"}, tc.args...), getenv, &out, &errOut)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("healthcheck: %v", err)
				}
				if !strings.Contains(out.String(), `"ok"`) {
					t.Fatalf("output %q lacks the server's answer", out.String())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
