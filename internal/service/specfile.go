package service

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/task"
)

// Spec is what `kmirror run -f` reads: clusters, Kafka Connect clusters and
// tasks in the API's shapes (/api/v1/openapi.json), run with no store
// besides the progress kept in Kafka (and, for tasks on Connect, in
// Connect).
type Spec struct {
	Clusters        []cluster.Settings       `json:"clusters"`
	ConnectClusters []ConnectClusterSettings `json:"connect_clusters,omitempty"`
	Tasks           []task.Task              `json:"tasks"`
}

// ReadSpec decodes a spec strictly: an unknown field is an error, so a typo
// is not silently ignored.
func ReadSpec(r io.Reader) (Spec, error) {
	var s Spec
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Spec{}, fmt.Errorf("read spec: %w", err)
	}
	if len(s.Tasks) == 0 {
		return Spec{}, errors.New("spec has no tasks: add at least one under \"tasks\"")
	}
	return s, nil
}

// Lookup finds a cluster of the spec by name.
func (s Spec) Lookup(name string) (cluster.Settings, bool) {
	for _, c := range s.Clusters {
		if c.Name == name {
			return c, true
		}
	}
	return cluster.Settings{}, false
}

// StartAll starts every task of the spec on the Runner its engine names;
// on an error, tasks already started are stopped again.
func (s Spec) StartAll(runnerFor func(task.Task) (engine.Runner, error)) error {
	for i, t := range s.Tasks {
		t = t.WithDefaults()
		current, peer, err := t.Resolve(s.Lookup)
		var r engine.Runner
		if err == nil {
			r, err = runnerFor(t)
		}
		if err == nil {
			err = r.Start(t, current, peer)
		}
		if err != nil {
			for _, started := range s.Tasks[:i] {
				if r, err := runnerFor(started); err == nil {
					r.Stop(started.Name)
				}
			}
			return fmt.Errorf("task %q: %w", t.Name, err)
		}
	}
	return nil
}

// ConnectCluster finds a Connect cluster of the spec by name.
func (s Spec) ConnectCluster(name string) (ConnectClusterSettings, bool) {
	for _, c := range s.ConnectClusters {
		if c.Name == name {
			return c, true
		}
	}
	return ConnectClusterSettings{}, false
}
