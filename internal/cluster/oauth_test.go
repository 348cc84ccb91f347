package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
)

// tokenEndpoint answers the client-credentials grant for client "c" with
// secret "s", counting the tokens it gives out.
func tokenEndpoint(t *testing.T, lifetime time.Duration) (*httptest.Server, *atomic.Int64, *atomic.Value) {
	t.Helper()
	var issued atomic.Int64
	var lastForm atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		lastForm.Store(r.PostForm)
		w.Header().Set("Content-Type", "application/json")
		if r.PostForm.Get("client_id") != "c" || r.PostForm.Get("client_secret") != "s" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"invalid_client","error_description":"Invalid client or Invalid client credentials"}`))
			return
		}
		n := issued.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "tok-" + string(rune('0'+n)), "token_type": "Bearer", "expires_in": int(lifetime.Seconds())})
	}))
	t.Cleanup(srv.Close)
	return srv, &issued, &lastForm
}

func oauthSettings(endpoint, secret string) cluster.Settings {
	return cluster.Settings{Name: "east", BootstrapServers: []string{"127.0.0.1:9"}, SecurityProtocol: cluster.SASLPlaintext,
		SASLMechanism: cluster.MechanismOAuthBearer,
		OAuth:         cluster.OAuth{TokenEndpoint: endpoint, ClientID: "c", ClientSecret: secret, Scope: "kafka.read kafka.write", Audience: "kafka"}}
}

func TestOAuthTokenIsFetchedOnceAndReused(t *testing.T) {
	srv, issued, form := tokenEndpoint(t, time.Hour)
	cfg, err := oauthSettings(srv.URL, "s").Config("test")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Net.SASL.Mechanism != sarama.SASLTypeOAuth || cfg.Net.SASL.TokenProvider == nil {
		t.Fatalf("mechanism %q, provider %v", cfg.Net.SASL.Mechanism, cfg.Net.SASL.TokenProvider)
	}
	for range 3 {
		tok, err := cfg.Net.SASL.TokenProvider.Token()
		if err != nil || tok.Token != "tok-1" {
			t.Fatalf("token %+v, %v", tok, err)
		}
	}
	if n := issued.Load(); n != 1 {
		t.Fatalf("%d tokens asked for three connections: want one, reused while it lives", n)
	}
	f := form.Load().(url.Values)
	if got := strings.Join(f["scope"], ","); got != "kafka.read kafka.write" {
		t.Errorf("scope sent %q", got)
	}
	if got := strings.Join(f["audience"], ","); got != "kafka" {
		t.Errorf("audience sent %q", got)
	}
}

// A token about to end is replaced before a connection gets it.
func TestOAuthTokenIsRefreshedBeforeItEnds(t *testing.T) {
	srv, issued, _ := tokenEndpoint(t, 5*time.Second) // inside oauth2's 10 s early-expiry window
	cfg, err := oauthSettings(srv.URL, "s").Config("test")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := cfg.Net.SASL.TokenProvider.Token()
	b, _ := cfg.Net.SASL.TokenProvider.Token()
	if a.Token == b.Token || issued.Load() != 2 {
		t.Fatalf("tokens %q then %q (%d issued): a token within its last seconds must be replaced", a.Token, b.Token, issued.Load())
	}
}

func TestOAuthRefusalSaysWhatTheEndpointSaid(t *testing.T) {
	srv, _, _ := tokenEndpoint(t, time.Hour)
	notFound := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notFound.Close)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, srv.URL+"/elsewhere", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirect.Close)
	cases := []struct {
		name     string
		s        cluster.Settings
		contains []string
	}{
		{"wrong secret", oauthSettings(srv.URL, "wrong"), []string{"HTTP 401", "invalid_client", "Invalid client credentials", "check oauth.client_id and oauth.client_secret"}},
		{"no such path", oauthSettings(notFound.URL+"/token", "s"), []string{"HTTP 404", "check oauth.token_endpoint"}},
		{"unreachable", oauthSettings("http://127.0.0.1:1/token", "s"), []string{"cannot be reached", "check oauth.token_endpoint"}},
		{"redirect", oauthSettings(redirect.URL, "s"), []string{"redirects to", "/elsewhere"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, err := tc.s.FetchToken(ctx)
			var te *cluster.TokenError
			if !errors.As(err, &te) {
				t.Fatalf("want a TokenError, got %v", err)
			}
			for _, w := range tc.contains {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "wrong") && tc.name == "wrong secret" {
				t.Errorf("the secret is echoed: %q", err)
			}
		})
	}
}

func TestFetchTokenSaysWhenItEnds(t *testing.T) {
	srv, _, _ := tokenEndpoint(t, time.Hour)
	end, err := oauthSettings(srv.URL, "s").FetchToken(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(end); d < 59*time.Minute || d > 61*time.Minute {
		t.Fatalf("token ends in %v, want about an hour", d)
	}
}
