// Package connecttest is a fake Kafka Connect REST API for tests that need
// a worker's answers without starting Connect: GET /, GET
// /connector-plugins and PUT /connector-plugins/{class}/config/validate.
package connecttest

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
	// Status, when set, is the answer to every request (e.g. 401).
	Status int
}

// Start serves w on 127.0.0.1 until the test ends and returns its URL.
func Start(t testing.TB, w Worker) string {
	t.Helper()
	if w.Version == "" {
		w.Version = "4.1.0"
	}
	if w.KafkaClusterID == "" {
		w.KafkaClusterID = "fake-kafka-cluster"
	}
	if w.Plugins == nil {
		w.Plugins = connect.MirrorConnectors
	}
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

func (w Worker) serve(rw http.ResponseWriter, r *http.Request) {
	rw.Header().Set("Content-Type", "application/json")
	if w.Status != 0 {
		rw.WriteHeader(w.Status)
		_ = json.NewEncoder(rw).Encode(map[string]any{"error_code": w.Status, "message": http.StatusText(w.Status)})
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/":
		_ = json.NewEncoder(rw).Encode(connect.ServerInfo{Version: w.Version, Commit: "fake", KafkaClusterID: w.KafkaClusterID})
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
