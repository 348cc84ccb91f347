// Package connect is a typed client for the Kafka Connect REST API, for
// running kmirror's replication as MirrorMaker 2 connectors on a Connect
// cluster the user operates.
//
// It speaks to one or more workers' base URLs: a request goes to the last
// worker that answered and moves to the next URL when a worker cannot be
// reached (any worker forwards what needs the group's leader), never on an
// HTTP error, which is the cluster's answer. A request that may have reached
// a worker that then failed to answer (a timeout, a reset) moves on only if
// repeating it is harmless: every method but POST (restart) and DELETE. Errors from Connect are
// *Error, carrying its error_code and message and saying what to do.
//
// A redirect is never followed: net/http would follow a 307 or 308 with
// the same request, and a 301, 302 or 303 as a GET, so a write could come
// back as a read's success. Any 3xx answer is an *Error naming the
// Location.
//
// It is written on net/http: the Go clients published for this API were
// last released years ago and lack what kmirror needs (the offsets API of
// KIP-875, stop, expand, several workers, a CA for https).
package connect

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
)

// Config says how to reach a Connect cluster.
type Config struct {
	// URLs are the workers' REST base URLs (http://host:8083 or https://...);
	// at least one.
	URLs []string
	// Username and Password are sent as HTTP basic auth when Username is
	// set (Connect's BasicAuthSecurityRestExtension).
	Username string
	Password string
	// CAPEM is the PEM of the CA that signed the workers' certificates, for
	// https URLs; empty trusts the system's roots.
	CAPEM string
	// ClientCertPEM and ClientKeyPEM are a client certificate (the leaf
	// first, then any intermediates) and its private key (PKCS#8, PKCS#1
	// or EC), presented to https workers that ask for one
	// (listeners.https.ssl.client.auth=required). Both or neither.
	ClientCertPEM string
	ClientKeyPEM  string
	// BearerToken is sent as "Authorization: Bearer <token>" (a REST
	// extension or a proxy in front of the workers checks it). It and
	// basic auth use the same header: give one of them.
	BearerToken string
	// Timeout bounds one request to one worker; 0 means 15 s, so a worker
	// that accepts connections and never answers leaves a caller's budget
	// (a minute for a deploy) room for the next URL. Connect itself answers
	// a request that waits on the herder after 90 s; a read or an
	// idempotent write that times out is sent to the next URL.
	Timeout time.Duration
	// DialTimeout bounds connecting to one worker, so a dead one is passed
	// over quickly; 0 means 5 s.
	DialTimeout time.Duration
}

// String shows cfg without its secrets (password, key, token): what a
// log line or an error may carry.
func (cfg Config) String() string {
	var auth []string
	if cfg.Username != "" {
		auth = append(auth, "basic auth as "+cfg.Username)
	}
	if cfg.BearerToken != "" {
		auth = append(auth, "bearer token")
	}
	if cfg.ClientCertPEM != "" {
		auth = append(auth, "client certificate")
	}
	if len(auth) == 0 {
		auth = append(auth, "no credentials")
	}
	return fmt.Sprintf("Kafka Connect at %s (%s)", strings.Join(cfg.URLs, ","), strings.Join(auth, ", "))
}

// GoString is String, so %#v does not print the secrets either.
func (cfg Config) GoString() string { return cfg.String() }

// LogValue is String, so slog never writes the secrets.
func (cfg Config) LogValue() slog.Value { return slog.StringValue(cfg.String()) }

// Client calls one Connect cluster. It is safe for concurrent use.
type Client struct {
	urls     []string
	user     string
	password string
	bearer   string
	http     *http.Client

	mu   sync.Mutex
	next int // index of the URL to try first: the last that answered
}

// New checks cfg and makes a client; it does not contact the cluster
// (ServerInfo does).
func New(cfg Config) (*Client, error) {
	if len(cfg.URLs) == 0 {
		return nil, errors.New("connect: no worker URL: give the REST address of at least one Connect worker, e.g. http://connect-1:8083")
	}
	if cfg.BearerToken != "" && cfg.Username != "" {
		return nil, errors.New("connect: both basic auth and a bearer token are set: they use the same Authorization header, give one of them")
	}
	if strings.ContainsAny(cfg.BearerToken, " \t\r\n") {
		return nil, errors.New("connect: the bearer token holds spaces or line breaks: give the token alone, without \"Bearer \"")
	}
	c := &Client{user: cfg.Username, password: cfg.Password, bearer: cfg.BearerToken}
	for _, raw := range cfg.URLs {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("connect: worker URL %q is not an http:// or https:// address with a host, e.g. http://connect-1:8083", raw)
		}
		c.urls = append(c.urls, strings.TrimRight(u.String(), "/"))
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 15 * time.Second
	}
	dial := cfg.DialTimeout
	if dial <= 0 {
		dial = 5 * time.Second
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // workers are addressed directly, as the cluster advertises them
	tr.DialContext = (&net.Dialer{Timeout: dial, KeepAlive: 30 * time.Second}).DialContext
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CAPEM != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(cfg.CAPEM)) {
			return nil, errors.New("connect: the CA certificate holds no PEM certificate: paste the CA's PEM (-----BEGIN CERTIFICATE-----)")
		}
		tlsCfg.RootCAs = pool
	}
	if cfg.ClientCertPEM != "" || cfg.ClientKeyPEM != "" {
		// Read as a Kafka cluster's client certificate is: one parser, one
		// set of rules (its errors are *cluster.CertError, by field).
		cert, err := cluster.Settings{ClientCertPEM: cfg.ClientCertPEM, ClientKeyPEM: cfg.ClientKeyPEM}.ClientCertificate()
		if err != nil {
			return nil, fmt.Errorf("connect: client certificate: %w", err)
		}
		tlsCfg.Certificates = []tls.Certificate{cert}
	}
	tr.TLSClientConfig = tlsCfg
	c.http = &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: refuseRedirect}
	return c, nil
}

// shared are the clients Shared made, by a hash of their Config.
var shared = struct {
	sync.Mutex
	m map[[32]byte]*Client
}{m: map[[32]byte]*Client{}}

// Shared is the process's one long-lived client for cfg (New's, made on
// first use): it remembers the worker URL that answered last across every
// caller, so a hung or dead first URL costs one try per process, not one
// per action. Its connections are kept alive; never Close it.
func Shared(cfg Config) (*Client, error) {
	b, err := json.Marshal(cfg) // secrets included: only their hash is kept
	if err != nil {
		return nil, err
	}
	key := sha256.Sum256(b)
	shared.Lock()
	defer shared.Unlock()
	if c, ok := shared.m[key]; ok {
		return c, nil
	}
	c, err := New(cfg)
	if err != nil {
		return nil, err
	}
	shared.m[key] = c
	return c, nil
}

// MaxAnswerBytes caps what one answer of a worker may take in memory: a
// connector, its status, the plugins, a check's answers. A check of a URL
// that is no worker holds no more than this.
const MaxAnswerBytes = 4 << 20

// MaxListingBytes caps the two answers that grow with the deployment: the
// cluster's connector listing with status and configs (Connectors, one
// poll per Connect cluster), where 200 bidirectional tasks with client
// certificates and keys inline on both sides take 16.7 MiB
// (TestLargestListingFitsTheAnswerCap in connectplan measures it), and a
// connector's offsets, about 100 bytes a partition (a 40,000-partition
// MM2 flow being adopted: ~4 MiB).
const MaxListingBytes = 32 << 20

// refuseRedirect makes the client hand back a 3xx answer as it is
// (once reports it as an *Error): following it could send a write's body
// elsewhere or turn it into a GET that succeeds.
func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Close lets go of the client's idle connections: each client has its own
// transport, whose keep-alive connections would otherwise stay open until
// they time out. A nil client has nothing to close.
func (c *Client) Close() {
	if c != nil {
		c.http.CloseIdleConnections()
	}
}

// URLs are the workers' base URLs, as given.
func (c *Client) URLs() []string { return append([]string(nil), c.urls...) }

// Error is an error answer from Connect.
type Error struct {
	Method string
	URL    string
	Status int    // HTTP status
	Code   int    // Connect's error_code, usually the HTTP status
	Msg    string // Connect's message
}

func (e *Error) Error() string {
	msg := e.Msg
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	return fmt.Sprintf("connect: %s %s: %d %s: %s", e.Method, e.URL, e.Status, msg, e.hint())
}

// hint says what to do about an answer.
func (e *Error) hint() string {
	switch e.Status {
	case http.StatusBadRequest:
		return "the request or the connector's configuration is invalid: fix it (ValidateConfig lists each setting's errors)"
	case http.StatusUnauthorized:
		return "the worker wants credentials: set the Connect cluster's username and password, bearer token or client certificate"
	case http.StatusForbidden:
		return "these credentials may not do this: use a user the Connect cluster allows"
	case http.StatusNotFound:
		return "no such connector or plugin on this Connect cluster: check the name, and that the plugin is on the workers' plugin.path"
	case http.StatusConflict:
		return "the Connect cluster is rebalancing or another change is under way: retry in a few seconds"
	case http.StatusServiceUnavailable:
		return "the worker is starting or cannot reach its Kafka cluster: retry, and check the worker's log if it persists"
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return "the worker did not finish in time: retry, and check the worker's log if it persists"
	}
	if e.Status >= 500 && strings.Contains(e.Msg, "rebalance") {
		// Connect answers 500 for a request that reached a worker
		// expecting a rebalance (a connector just created or deleted).
		return "the Connect cluster is about to rebalance: retry in a few seconds"
	}
	if e.Status >= 500 {
		return "the worker failed: check its log"
	}
	if e.Status >= 300 && e.Status < 400 {
		return "kmirror follows no redirect (a write could become a read): register the URL the workers answer at themselves"
	}
	return "see the worker's log"
}

// IsNotFound reports whether err is Connect's 404 (no such connector or
// plugin).
func IsNotFound(err error) bool { return statusOf(err) == http.StatusNotFound }

// IsConflict reports whether err is Connect's 409: a rebalance or a
// concurrent change; the same request may succeed a moment later.
func IsConflict(err error) bool { return statusOf(err) == http.StatusConflict }

// IsTransient reports whether err may pass by itself: no worker could be
// reached, or one answered 409 (rebalancing), 408, 5xx. Trying the same
// request again later is right; changing it is not needed.
func IsTransient(err error) bool {
	var u *unreachableError
	if errors.As(err, &u) {
		return true
	}
	st := statusOf(err)
	return st == http.StatusConflict || st == http.StatusRequestTimeout || st >= 500
}

func statusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// unreachableError is a transport error that sends a request to the next
// worker.
type unreachableError struct {
	url string
	err error
}

func (e *unreachableError) Error() string { return fmt.Sprintf("%s: %v", e.url, e.err) }
func (e *unreachableError) Unwrap() error { return e.err }

// do sends a request with a JSON body (if in is not nil) and decodes a
// JSON answer into out (if not nil). It tries each worker from the last
// that answered, moving on only when one cannot be reached.
func (c *Client) do(ctx context.Context, method, path string, in, out any) (int, error) {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return 0, fmt.Errorf("connect: encode the request to %s %s: %w", method, path, err)
		}
	}
	c.mu.Lock()
	first := c.next
	c.mu.Unlock()
	var errs []error
	for k := range c.urls {
		i := (first + k) % len(c.urls)
		status, err := c.once(ctx, c.urls[i], method, path, body, out)
		var unreachable *unreachableError
		if err == nil || !errors.As(err, &unreachable) {
			c.mu.Lock()
			c.next = i
			c.mu.Unlock()
			return status, err
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return 0, fmt.Errorf("connect: %s %s: no Connect worker answered: %w: check the worker URLs and that the workers run", method, path, errors.Join(errs...))
}

func (c *Client) once(ctx context.Context, base, method, path string, body []byte, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return 0, fmt.Errorf("connect: build %s %s: %w", method, base+path, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	switch {
	case c.user != "":
		req.SetBasicAuth(c.user, c.password)
	case c.bearer != "":
		req.Header.Set("Authorization", "Bearer "+c.bearer)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("connect: %s %s: %w", method, base+path, ctx.Err())
		}
		if notSent(err) || repeatable(method) {
			return 0, &unreachableError{url: base, err: err}
		}
		return 0, fmt.Errorf("connect: %s %s: %w: the worker may have acted on it; check with Status before repeating it", method, base+path, err)
	}
	defer resp.Body.Close()
	limit := MaxAnswerBytes
	if path == listingPath || strings.HasSuffix(path, "/offsets") {
		limit = MaxListingBytes
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("connect: read the answer to %s %s: %w", method, base+path, err)
	}
	if len(raw) > limit {
		return resp.StatusCode, fmt.Errorf("connect: the answer to %s %s is larger than %d MiB, more than kmirror reads from a worker: check that the URL is a Kafka Connect worker",
			method, base+path, limit>>20)
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		// Never followed (refuseRedirect): nothing went to the Location,
		// and the answer is no success.
		loc := resp.Header.Get("Location")
		if loc == "" {
			loc = "(no Location given)"
		}
		return resp.StatusCode, &Error{Method: method, URL: base + path, Status: resp.StatusCode, Code: resp.StatusCode,
			Msg: "redirected to " + loc + ", not followed"}
	}
	if resp.StatusCode >= 400 {
		e := &Error{Method: method, URL: base + path, Status: resp.StatusCode}
		var m struct {
			Code    int    `json:"error_code"`
			Message string `json:"message"`
		}
		if json.Unmarshal(raw, &m) == nil && (m.Code != 0 || m.Message != "") {
			e.Code, e.Msg = m.Code, m.Message
		} else {
			e.Code, e.Msg = resp.StatusCode, strings.TrimSpace(string(raw[:min(len(raw), 300)]))
		}
		return resp.StatusCode, e
	}
	if out != nil && len(bytes.TrimSpace(raw)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber() // offsets and configs keep their exact numbers
		if err := dec.Decode(out); err != nil {
			return resp.StatusCode, fmt.Errorf("connect: decode the answer to %s %s: %w (is %s a Kafka Connect worker?)", method, base+path, err, base)
		}
	}
	return resp.StatusCode, nil
}

// notSent reports whether err happened before the request could reach
// the worker: no connection was made.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// repeatable methods change nothing when sent twice (PUT and PATCH set a
// state or a config; GET reads).
func repeatable(method string) bool {
	return method == http.MethodGet || method == http.MethodPut || method == http.MethodPatch
}

func connectorPath(name string, rest ...string) string {
	p := "/connectors/" + url.PathEscape(name)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}
