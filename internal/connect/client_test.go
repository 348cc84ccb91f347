package connect

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
)

// recorded is one request a fake worker saw.
type recorded struct {
	method, path, query, body, user, pass string
}

// fakeWorker answers every request with status and body, recording it.
func fakeWorker(t *testing.T, status int, body string) (*httptest.Server, *[]recorded) {
	t.Helper()
	var seen []recorded
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u, p, _ := r.BasicAuth()
		seen = append(seen, recorded{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, string(b), u, p})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

func newClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Each method sends its verb, path, query and body, and decodes the answer.
func TestMethodsSendTheirRequests(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name              string
		status            int
		answer            string
		call              func(c *Client) (any, error)
		method, path, qry string
		body              string
		want              any
	}{
		{"server info", 200, `{"version":"4.3.1","commit":"abc","kafka_cluster_id":"K"}`,
			func(c *Client) (any, error) { return c.ServerInfo(ctx) },
			"GET", "/", "", "", ServerInfo{Version: "4.3.1", Commit: "abc", KafkaClusterID: "K"}},
		{"plugins", 200, `[{"class":"a.B","type":"source","version":"1"}]`,
			func(c *Client) (any, error) { return c.Plugins(ctx) },
			"GET", "/connector-plugins", "connectorsOnly=false", "", []Plugin{{Class: "a.B", Type: "source", Version: "1"}}},
		{"connectors expanded", 200, `{"m":{"info":{"name":"m","config":{"k":"v"},"tasks":[{"connector":"m","task":0}],"type":"source"},"status":{"name":"m","connector":{"state":"RUNNING","worker_id":"w:1"},"tasks":[{"id":0,"state":"RUNNING","worker_id":"w:2"}],"type":"source"}}}`,
			func(c *Client) (any, error) { return c.Connectors(ctx) },
			"GET", "/connectors", "expand=status&expand=info", "", map[string]ConnectorView{"m": {
				Info:   ConnectorInfo{Name: "m", Config: map[string]string{"k": "v"}, Tasks: []TaskID{{"m", 0}}, Type: "source"},
				Status: ConnectorStatus{Name: "m", Connector: WorkerState{State: "RUNNING", WorkerID: "w:1"}, Tasks: []TaskState{{ID: 0, State: "RUNNING", WorkerID: "w:2"}}, Type: "source"},
			}}},
		{"connector name escaped", 200, `{"name":"a/b","config":{},"tasks":[]}`,
			func(c *Client) (any, error) { return c.Connector(ctx, "a/b") },
			"GET", "/connectors/a%2Fb", "", "", ConnectorInfo{Name: "a/b", Config: map[string]string{}, Tasks: []TaskID{}}},
		{"create", 201, `{"name":"m","config":{"k":"v"},"tasks":[]}`,
			func(c *Client) (any, error) {
				_, created, err := c.CreateOrUpdate(ctx, "m", map[string]string{"k": "v"})
				return created, err
			},
			"PUT", "/connectors/m/config", "", `{"k":"v"}`, true},
		{"update", 200, `{"name":"m","config":{"k":"v"},"tasks":[]}`,
			func(c *Client) (any, error) {
				_, created, err := c.CreateOrUpdate(ctx, "m", map[string]string{"k": "v"})
				return created, err
			},
			"PUT", "/connectors/m/config", "", `{"k":"v"}`, false},
		{"delete", 204, ``, func(c *Client) (any, error) { return nil, c.Delete(ctx, "m") }, "DELETE", "/connectors/m", "", "", nil},
		{"pause", 202, ``, func(c *Client) (any, error) { return nil, c.Pause(ctx, "m") }, "PUT", "/connectors/m/pause", "", "", nil},
		{"resume", 202, ``, func(c *Client) (any, error) { return nil, c.Resume(ctx, "m") }, "PUT", "/connectors/m/resume", "", "", nil},
		{"stop", 204, ``, func(c *Client) (any, error) { return nil, c.Stop(ctx, "m") }, "PUT", "/connectors/m/stop", "", "", nil},
		{"restart with tasks", 202, `{"name":"m","connector":{"state":"RESTARTING","worker_id":"w"},"tasks":[{"id":0,"state":"RESTARTING","worker_id":"w"}]}`,
			func(c *Client) (any, error) {
				st, err := c.Restart(ctx, "m", true, false)
				return st.Tasks[0].State, err
			},
			"POST", "/connectors/m/restart", "includeTasks=true&onlyFailed=false", "", "RESTARTING"},
		{"restart without answer", 204, ``,
			func(c *Client) (any, error) {
				st, err := c.Restart(ctx, "m", false, false)
				return st == nil, err
			},
			"POST", "/connectors/m/restart", "includeTasks=false&onlyFailed=false", "", true},
		{"status", 200, `{"name":"m","connector":{"state":"FAILED","worker_id":"w","trace":"boom"},"tasks":[]}`,
			func(c *Client) (any, error) {
				st, err := c.Status(ctx, "m")
				return st.Connector, err
			},
			"GET", "/connectors/m/status", "", "", WorkerState{State: "FAILED", WorkerID: "w", Trace: "boom"}},
		{"offsets", 200, `{"offsets":[{"partition":{"cluster":"A","topic":"orders","partition":3},"offset":{"offset":9007199254740993}}]}`,
			func(c *Client) (any, error) {
				o, err := c.Offsets(ctx, "m")
				if err != nil {
					return nil, err
				}
				return o.Offsets[0].MirrorSource()
			},
			"GET", "/connectors/m/offsets", "", "", MirrorSourcePosition{Cluster: "A", Topic: "orders", Partition: 3, Offset: 9007199254740993}},
		{"alter offsets", 200, `{"message":"altered"}`,
			func(c *Client) (any, error) {
				return c.AlterOffsets(ctx, "m", []Offset{MirrorSourceOffset("A", "orders", 0, 123), {Partition: map[string]any{"cluster": "A", "topic": "orders", "partition": 1}}})
			},
			"PATCH", "/connectors/m/offsets", "",
			`{"offsets":[{"partition":{"cluster":"A","partition":0,"topic":"orders"},"offset":{"offset":123}},{"partition":{"cluster":"A","partition":1,"topic":"orders"},"offset":null}]}`,
			"altered"},
		{"reset offsets", 200, `{"message":"reset"}`,
			func(c *Client) (any, error) { return c.ResetOffsets(ctx, "m") },
			"DELETE", "/connectors/m/offsets", "", "", "reset"},
		{"validate", 200, `{"name":"x.Src","error_count":1,"groups":["Common"],"configs":[{"definition":{"name":"topics","type":"LIST","required":false,"default_value":".*"},"value":{"name":"topics","value":"[","recommended_values":[],"errors":["bad regex"],"visible":true}},{"definition":{"name":"ok"},"value":{"name":"ok","errors":[]}}]}`,
			func(c *Client) (any, error) {
				v, err := c.ValidateConfig(ctx, "x.Src", map[string]string{"topics": "["})
				return v.Errors(), err
			},
			"PUT", "/connector-plugins/x.Src/config/validate", "", `{"connector.class":"x.Src","topics":"["}`,
			map[string][]string{"topics": {"bad regex"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, seen := fakeWorker(t, tt.status, tt.answer)
			got, err := tt.call(newClient(t, Config{URLs: []string{srv.URL + "/"}}))
			if err != nil {
				t.Fatal(err)
			}
			if tt.want != nil && !jsonEqual(t, got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
			if len(*seen) != 1 {
				t.Fatalf("%d requests, want 1", len(*seen))
			}
			r := (*seen)[0]
			if r.method != tt.method || r.path != tt.path || r.query != tt.qry {
				t.Errorf("sent %s %s?%s, want %s %s?%s", r.method, r.path, r.query, tt.method, tt.path, tt.qry)
			}
			if tt.body != "" && !jsonEqual(t, json.RawMessage(r.body), json.RawMessage(tt.body)) {
				t.Errorf("sent body %s, want %s", r.body, tt.body)
			}
		})
	}
}

func jsonEqual(t *testing.T, a, b any) bool {
	t.Helper()
	norm := func(v any) string {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var x any
		if err := json.Unmarshal(raw, &x); err != nil {
			t.Fatal(err)
		}
		out, _ := json.Marshal(x)
		return string(out)
	}
	return norm(a) == norm(b)
}

// Connect's error answers keep its code and message and say what to do;
// the helpers classify them.
func TestErrorsCarryConnectsAnswer(t *testing.T) {
	tests := []struct {
		status   int
		body     string
		wantMsg  string
		wantHint string
		notFound bool
		conflict bool
	}{
		{404, `{"error_code":404,"message":"Connector m not found"}`, "Connector m not found", "check the name", true, false},
		{409, `{"error_code":409,"message":"Cannot complete request momentarily due to stale configuration"}`, "stale configuration", "retry", false, true},
		{400, `{"error_code":400,"message":"Connector configuration is invalid"}`, "invalid", "ValidateConfig", false, false},
		{401, `<html>Unauthorized</html>`, "<html>Unauthorized</html>", "username and password", false, false},
		{500, `{"error_code":500,"message":"Request timed out"}`, "Request timed out", "check its log", false, false},
		// Seen right after connectors were deleted (TestFailbackOnConnect, ci52).
		{500, `{"error_code":500,"message":"Request cannot be completed because a rebalance is expected"}`, "rebalance is expected", "about to rebalance: retry", false, false},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			srv, _ := fakeWorker(t, tt.status, tt.body)
			_, err := newClient(t, Config{URLs: []string{srv.URL}}).Status(context.Background(), "m")
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v (%T), want *Error", err, err)
			}
			if e.Status != tt.status || e.Code != tt.status || !strings.Contains(e.Msg, tt.wantMsg) {
				t.Errorf("got status %d code %d message %q", e.Status, e.Code, e.Msg)
			}
			if !strings.Contains(err.Error(), tt.wantHint) || !strings.Contains(err.Error(), "/connectors/m/status") {
				t.Errorf("error %q lacks the hint %q or the URL", err, tt.wantHint)
			}
			if IsNotFound(err) != tt.notFound || IsConflict(err) != tt.conflict {
				t.Errorf("IsNotFound %v IsConflict %v", IsNotFound(err), IsConflict(err))
			}
		})
	}
}

// A worker that cannot be reached is passed over; one that answers with an
// error is not (the error is the cluster's answer), and the client sticks
// to the last worker that answered.
func TestFailsOverOnlyWhenUnreachable(t *testing.T) {
	dead := deadURL(t)
	var hitsA, hitsB atomic.Int32
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hitsA.Add(1)
		w.WriteHeader(409)
		_, _ = io.WriteString(w, `{"error_code":409,"message":"rebalance"}`)
	}))
	defer a.Close()
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hitsB.Add(1)
		_, _ = io.WriteString(w, `{"version":"4.3.1"}`)
	}))
	defer b.Close()

	c := newClient(t, Config{URLs: []string{dead, b.URL}, DialTimeout: time.Second})
	for range 2 {
		si, err := c.ServerInfo(context.Background())
		if err != nil || si.Version != "4.3.1" {
			t.Fatalf("got %+v, %v", si, err)
		}
	}
	if hitsB.Load() != 2 {
		t.Errorf("the live worker got %d requests, want 2", hitsB.Load())
	}

	c = newClient(t, Config{URLs: []string{a.URL, b.URL}})
	if _, err := c.ServerInfo(context.Background()); !IsConflict(err) {
		t.Fatalf("got %v, want the first worker's 409", err)
	}
	if hitsB.Load() != 2 {
		t.Error("an HTTP error answer sent the request to the next worker")
	}

	c = newClient(t, Config{URLs: []string{dead, deadURL(t)}, DialTimeout: time.Second})
	_, err := c.ServerInfo(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no Connect worker answered") || !strings.Contains(err.Error(), dead) {
		t.Fatalf("got %v, want no worker answered naming %s", err, dead)
	}
}

// deadURL is an address nothing listens on.
func deadURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// Basic auth is sent when a username is set; a CA makes https to the
// workers work, and without it the certificate is refused.
func TestAuthAndTLS(t *testing.T) {
	var user, pass string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ = r.BasicAuth()
		_, _ = io.WriteString(w, `{"version":"4.3.1"}`)
	}))
	defer srv.Close()
	caPEM := pemOf(srv.Certificate().Raw)

	c := newClient(t, Config{URLs: []string{srv.URL}, Username: "alice", Password: "s3cret", CAPEM: caPEM})
	if _, err := c.ServerInfo(context.Background()); err != nil {
		t.Fatal(err)
	}
	if user != "alice" || pass != "s3cret" {
		t.Errorf("basic auth %q/%q", user, pass)
	}
	c = newClient(t, Config{URLs: []string{srv.URL}})
	if _, err := c.ServerInfo(context.Background()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("untrusted certificate: got %v", err)
	}
}

// A worker that accepts a request and never answers: a read moves on to
// the next worker, a restart (POST) does not, since the first may have
// acted on it.
func TestHangingWorker(t *testing.T) {
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer hung.Close()
	defer close(release)
	var posts atomic.Int32
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
		}
		_, _ = io.WriteString(w, `{"name":"m","connector":{"state":"RUNNING"},"tasks":[]}`)
	}))
	defer live.Close()

	c := newClient(t, Config{URLs: []string{hung.URL, live.URL}, Timeout: 2 * time.Second})
	if st, err := c.Status(context.Background(), "m"); err != nil || st.Connector.State != StateRunning {
		t.Fatalf("status past a hung worker: %+v, %v", st, err)
	}
	c = newClient(t, Config{URLs: []string{hung.URL, live.URL}, Timeout: 2 * time.Second})
	_, err := c.Restart(context.Background(), "m", true, false)
	if err == nil || !strings.Contains(err.Error(), "may have acted on it") {
		t.Fatalf("restart on a hung worker: got %v", err)
	}
	if posts.Load() != 0 {
		t.Error("a restart that may have reached one worker was sent to another")
	}
}

// A timeout bounds one request to a worker that does not answer.
func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	c := newClient(t, Config{URLs: []string{srv.URL}, Timeout: 200 * time.Millisecond})
	if _, err := c.ServerInfo(context.Background()); err == nil {
		t.Fatal("a worker that never answers did not time out")
	}
}

func TestNewChecksConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no url", Config{}, "at least one"},
		{"no scheme", Config{URLs: []string{"connect:8083"}}, "http:// or https://"},
		{"ftp", Config{URLs: []string{"ftp://connect:8083"}}, "http:// or https://"},
		{"bad CA", Config{URLs: []string{"https://c:8083"}, CAPEM: "nope"}, "no PEM certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

func TestMirrorSourceRejectsOtherShapes(t *testing.T) {
	for _, o := range []Offset{
		{Partition: map[string]any{"topic": "t", "partition": json.Number("0")}, Offset: map[string]any{"offset": json.Number("1")}},
		{Partition: map[string]any{"cluster": "A", "topic": "t", "partition": json.Number("0")}, Offset: map[string]any{"offset": "x"}},
		{Partition: map[string]any{"kafka_topic": "t", "kafka_partition": json.Number("0")}, Offset: map[string]any{"kafka_offset": json.Number("1")}},
	} {
		if _, err := o.MirrorSource(); err == nil {
			t.Errorf("%+v read as a MirrorSourceConnector offset", o)
		}
	}
}

// A 3xx is never followed: a config PUT answered 307 comes back as an
// error naming the Location, and nothing reaches the Location (net/http
// would send the PUT there, or turn a 301-303 into a GET that succeeds).
func TestRedirectIsNeverFollowed(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		_, _ = io.WriteString(w, `{"name":"m","config":{},"tasks":[]}`)
	}))
	defer other.Close()
	for _, status := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusFound, http.StatusSeeOther} {
		redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+r.URL.Path, status)
		}))
		c := newClient(t, Config{URLs: []string{redirecting.URL}})
		info, created, err := c.CreateOrUpdate(context.Background(), "m", map[string]string{"connector.class": "X"})
		redirecting.Close()
		var e *Error
		if err == nil || !errors.As(err, &e) || e.Status != status {
			t.Fatalf("%d on a config PUT: got %+v, %v, %v; want an *Error with status %d", status, info, created, err, status)
		}
		if !strings.Contains(err.Error(), "redirected to "+other.URL+"/connectors/m/config") || !strings.Contains(err.Error(), "follows no redirect") {
			t.Errorf("%d: the error does not name the Location: %v", status, err)
		}
		if IsTransient(err) {
			t.Errorf("%d: a redirect counts as transient: it would be retried as is for ever", status)
		}
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the Location got %d requests, want none", n)
	}
}

// A bearer token goes in the Authorization header, and not with basic
// auth (one header): New refuses both, and a token with spaces.
func TestBearerToken(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Authorization")
		_, _ = io.WriteString(w, `{"version":"4.3.1"}`)
	}))
	defer srv.Close()
	c := newClient(t, Config{URLs: []string{srv.URL}, BearerToken: "eyJ.abc-_~+/="})
	if _, err := c.ServerInfo(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got != "Bearer eyJ.abc-_~+/=" {
		t.Errorf("Authorization: %q", got)
	}
	if _, err := New(Config{URLs: []string{srv.URL}, BearerToken: "t", Username: "u", Password: "p"}); err == nil || !strings.Contains(err.Error(), "one of them") {
		t.Errorf("basic auth and a bearer token: %v", err)
	}
	if _, err := New(Config{URLs: []string{srv.URL}, BearerToken: "Bearer t"}); err == nil {
		t.Error("a token with a space was taken")
	}
}

// A worker that requires a client certificate (ssl.client.auth=required)
// takes kmirror's, signed by the CA it trusts, and refuses a client
// without one.
func TestClientCertificate(t *testing.T) {
	ca := newTestCA(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM := ca.issue(t, "kmirror", key.Public()), pemBlock("PRIVATE KEY", der)
	var peer string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		peer = r.TLS.PeerCertificates[0].Subject.CommonName
		_, _ = io.WriteString(w, `{"version":"4.3.1"}`)
	}))
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	defer srv.Close()
	serverCA := pemOf(srv.Certificate().Raw)

	c := newClient(t, Config{URLs: []string{srv.URL}, CAPEM: serverCA, ClientCertPEM: certPEM, ClientKeyPEM: keyPEM})
	if _, err := c.ServerInfo(context.Background()); err != nil {
		t.Fatal(err)
	}
	if peer != "kmirror" {
		t.Errorf("the worker saw client certificate %q", peer)
	}
	c = newClient(t, Config{URLs: []string{srv.URL}, CAPEM: serverCA})
	if _, err := c.ServerInfo(context.Background()); err == nil {
		t.Error("a worker requiring a client certificate answered a client without one")
	}
}

// A client certificate is read as a Kafka cluster's is (internal/cluster,
// whose tests cover the PEM forms): keys in PKCS#8, PKCS#1 and EC forms are
// taken, and a key that is not the certificate's, or either half alone, is
// refused naming the field.
func TestNewChecksClientCertificate(t *testing.T) {
	ca := newTestCA(t)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(ec)
	sec1, _ := x509.MarshalECPrivateKey(ec)
	otherSEC1, _ := x509.MarshalECPrivateKey(other)
	ecCert, rsaCert := ca.issue(t, "ec", ec.Public()), ca.issue(t, "rsa", rsaKey.Public())
	for _, c := range []struct {
		name, cert, key string
		field           string // "" for accepted
	}{
		{"PKCS#8", ecCert, pemBlock("PRIVATE KEY", pkcs8), ""},
		{"EC", ecCert, pemBlock("EC PRIVATE KEY", sec1), ""},
		{"PKCS#1", rsaCert, pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey)), ""},
		{"chain", ecCert + ca.pem, pemBlock("PRIVATE KEY", pkcs8), ""},
		{"another key", ecCert, pemBlock("EC PRIVATE KEY", otherSEC1), "client_key_pem"},
		{"certificate alone", ecCert, "", "client_key_pem"},
		{"key alone", "", pemBlock("PRIVATE KEY", pkcs8), "client_cert_pem"},
		{"certificate garbage", "nope", pemBlock("PRIVATE KEY", pkcs8), "client_cert_pem"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(Config{URLs: []string{"https://c:8443"}, ClientCertPEM: c.cert, ClientKeyPEM: c.key})
			var ce *cluster.CertError
			switch {
			case c.field == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.field != "" && (!errors.As(err, &ce) || ce.Field != c.field):
				t.Errorf("got %v, want a problem on %s", err, c.field)
			}
		})
	}
}

// A Config printed or logged shows none of its secrets.
func TestConfigHidesSecrets(t *testing.T) {
	cfg := Config{URLs: []string{"https://c:8083"}, Username: "alice", Password: "pw-secret", BearerToken: "tok-secret",
		ClientCertPEM: "CERT", ClientKeyPEM: "key-secret"}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("x", "cfg", cfg)
	for _, out := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), logged.String()} {
		for _, secret := range []string{"pw-secret", "tok-secret", "key-secret"} {
			if strings.Contains(out, secret) {
				t.Errorf("%q shows %s", out, secret)
			}
		}
		if !strings.Contains(out, "basic auth as alice") {
			t.Errorf("%q does not say how it authenticates", out)
		}
	}
}

// A URL that is no worker cannot make kmirror hold more than the cap: an
// answer past MaxAnswerBytes is an error naming the limit, and only the
// connector listing may be larger, up to MaxListingBytes.
func TestAnswersAreCapped(t *testing.T) {
	big := func(n int) string { return `{"name":"` + strings.Repeat("x", n) + `","config":{},"tasks":[]}` }
	var answer atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, answer.Load().(string))
	}))
	defer srv.Close()
	c := newClient(t, Config{URLs: []string{srv.URL}, Timeout: time.Minute}) // decoding 32 MiB under -race took 8.7 s of the default 15
	ctx := context.Background()
	answer.Store(big(MaxAnswerBytes - 100))
	if _, err := c.Connector(ctx, "m"); err != nil {
		t.Fatalf("an answer under the cap: %v", err)
	}
	answer.Store(big(MaxAnswerBytes))
	if _, err := c.Connector(ctx, "m"); err == nil || !strings.Contains(err.Error(), "larger than 4 MiB") {
		t.Fatalf("an answer past the cap: %v", err)
	}
	answer.Store(`{"m":{"info":` + big(MaxAnswerBytes*2) + `,"status":{"name":"m","connector":{"state":"RUNNING"},"tasks":[]}}}`)
	if l, err := c.Connectors(ctx); err != nil || len(l) != 1 {
		t.Fatalf("a listing past the answer cap but under the listing's: %d, %v", len(l), err)
	}
	answer.Store(`{"m":{"info":` + big(MaxListingBytes) + `}}`)
	if _, err := c.Connectors(ctx); err == nil || !strings.Contains(err.Error(), "larger than 32 MiB") {
		t.Fatalf("a listing past its cap: %v", err)
	}
}

// One client per configuration for the process: what one caller learned
// (the URL that answered) every other caller with the same settings uses.
func TestSharedIsOneClientPerConfig(t *testing.T) {
	a, err := Shared(Config{URLs: []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}, Username: "u", Password: "p"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Shared(Config{URLs: []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}, Username: "u", Password: "p"})
	c, _ := Shared(Config{URLs: []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}, Username: "u", Password: "other"})
	if a != b || a == c {
		t.Fatalf("same settings gave %p and %p, other settings %p", a, b, c)
	}
	if _, err := Shared(Config{}); err == nil {
		t.Fatal("a configuration New refuses was shared")
	}
}
