// Package connecttest is a fake Kafka Connect REST API for tests that need
// a worker's answers without starting Connect: GET /, GET
// /connector-plugins and PUT /connector-plugins/{class}/config/validate,
// over http or over https requiring a client certificate (StartTLS, with
// a CA issuing them), optionally behind a bearer token.
package connecttest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/connect"
)

// Worker is how a fake worker answers.
type Worker struct {
	Version        string // default 4.1.0
	KafkaClusterID string // default "fake-kafka-cluster"
	// Plugins are the connector classes listed; nil lists the three
	// MirrorMaker 2 connectors.
	Plugins []string
	// RefuseOverrides makes validation report an error on every
	// producer.override., consumer.override. and admin.override. setting,
	// as a worker whose connector.client.config.override.policy is None.
	RefuseOverrides bool
	// ExactlyOnce is a worker with exactly.once.source.support=enabled;
	// without it, validation refuses exactly.once.support=required as
	// Connect does.
	ExactlyOnce bool
	// Status, when set, is the answer to every request (e.g. 401).
	Status int
	// BearerToken, when set, is required as "Authorization: Bearer
	// <token>": any other request is answered 401.
	BearerToken string
	// Connectors are the connectors' configs GET /connectors lists
	// (expanded with info and status, each RUNNING on one task).
	Connectors map[string]map[string]string
}

// Start serves w on 127.0.0.1 until the test ends and returns its URL.
func Start(t testing.TB, w Worker) string {
	t.Helper()
	w = w.withDefaults()
	srv := httptest.NewServer(http.HandlerFunc(w.serve))
	t.Cleanup(srv.Close)
	return srv.URL
}

// DeadURL is an http URL on 127.0.0.1 where nothing listens.
func DeadURL(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// StartTLS serves w over https on 127.0.0.1 until the test ends, requiring
// a client certificate signed by clientCA (a worker with
// listeners.https.ssl.client.auth=required). It returns the worker's URL
// and the PEM of the certificate to trust for it.
func StartTLS(t testing.TB, w Worker, clientCA *CA) (url, serverCAPEM string) {
	t.Helper()
	w = w.withDefaults()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(w.serve))
	pool := x509.NewCertPool()
	pool.AddCert(clientCA.cert)
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
}

// CA issues client certificates for tests.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// NewCA makes a certificate authority valid for a day.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "connecttest CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{cert: cert, key: key}
}

// Issue makes a client certificate for cn with a new EC key: both PEM, the
// key as PKCS#8.
func (ca *CA) Issue(t testing.TB, cn string) (certPEM, keyPEM string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	k, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k}))
}

func (w Worker) withDefaults() Worker {
	if w.Version == "" {
		w.Version = "4.1.0"
	}
	if w.KafkaClusterID == "" {
		w.KafkaClusterID = "fake-kafka-cluster"
	}
	if w.Plugins == nil {
		w.Plugins = connect.MirrorConnectors
	}
	return w
}

func (w Worker) serve(rw http.ResponseWriter, r *http.Request) {
	rw.Header().Set("Content-Type", "application/json")
	if w.BearerToken != "" && r.Header.Get("Authorization") != "Bearer "+w.BearerToken {
		rw.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(rw).Encode(map[string]any{"error_code": 401, "message": "bearer token required"})
		return
	}
	if w.Status != 0 {
		rw.WriteHeader(w.Status)
		_ = json.NewEncoder(rw).Encode(map[string]any{"error_code": w.Status, "message": http.StatusText(w.Status)})
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/":
		_ = json.NewEncoder(rw).Encode(connect.ServerInfo{Version: w.Version, Commit: "fake", KafkaClusterID: w.KafkaClusterID})
	case r.Method == http.MethodGet && r.URL.Path == "/connectors":
		out := map[string]connect.ConnectorView{}
		for name, cfg := range w.Connectors {
			running := connect.WorkerState{State: "RUNNING", WorkerID: "fake:8083"}
			out[name] = connect.ConnectorView{
				Info:   connect.ConnectorInfo{Name: name, Config: cfg, Tasks: []connect.TaskID{{Connector: name, Task: 0}}, Type: "source"},
				Status: connect.ConnectorStatus{Name: name, Connector: running, Tasks: []connect.TaskState{{ID: 0, State: "RUNNING", WorkerID: "fake:8083"}}, Type: "source"},
			}
		}
		_ = json.NewEncoder(rw).Encode(out)
	case r.Method == http.MethodGet && r.URL.Path == "/connector-plugins":
		ps := []connect.Plugin{}
		for _, c := range w.Plugins {
			ps = append(ps, connect.Plugin{Class: c, Type: "source", Version: w.Version})
		}
		_ = json.NewEncoder(rw).Encode(ps)
	case r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/connector-plugins/") && strings.HasSuffix(r.URL.Path, "/config/validate"):
		class := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/connector-plugins/"), "/config/validate")
		if !w.has(class) {
			rw.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(rw).Encode(map[string]any{"error_code": 404, "message": "Failed to find any class that implements Connector and which name matches " + class})
			return
		}
		var cfg map[string]string
		if err := json.NewDecoder(r.Body).Decode(&cfg); err != nil {
			rw.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(rw).Encode(map[string]any{"error_code": 400, "message": err.Error()})
			return
		}
		v := connect.Validation{Name: class}
		for k, val := range cfg {
			cv := connect.ConfigValue{Name: k, Value: &val, Visible: true}
			for _, p := range []string{"producer.override.", "consumer.override.", "admin.override."} {
				if w.RefuseOverrides && strings.HasPrefix(k, p) {
					cv.Errors = append(cv.Errors, "The 'None' policy does not allow '"+strings.TrimPrefix(k, p)+"' to be overridden in the connector configuration.")
					v.ErrorCount++
				}
			}
			if k == connect.ExactlyOnceSupport && val == "required" && !w.ExactlyOnce {
				cv.Errors = append(cv.Errors, "This worker does not have exactly-once source support enabled.")
				v.ErrorCount++
			}
			v.Configs = append(v.Configs, connect.ValidatedConfig{Definition: connect.ConfigDefinition{Name: k}, Value: cv})
		}
		_ = json.NewEncoder(rw).Encode(v)
	default:
		rw.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(rw).Encode(map[string]any{"error_code": 404, "message": "HTTP 404 Not Found"})
	}
}

func (w Worker) has(class string) bool {
	for _, c := range w.Plugins {
		if c == class || strings.HasSuffix(c, "."+class) {
			return true
		}
	}
	return false
}
