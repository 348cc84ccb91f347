package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/task"
)

// Spec is what `kmirror run -f` reads: clusters and tasks in the API's
// shapes (/api/v1/openapi.json), run with no store besides the progress kept in Kafka.
type Spec struct {
	Clusters []cluster.Settings `json:"clusters"`
	Tasks    []task.Task        `json:"tasks"`
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

// StartAll starts every task of the spec; on an error, tasks already started
// are stopped again.
func (s Spec) StartAll(e *Engine) error {
	for i, t := range s.Tasks {
		t = t.WithDefaults()
		current, peer, err := t.Resolve(s.Lookup)
		if err == nil {
			err = e.Start(t, current, peer)
		}
		if err != nil {
			for _, started := range s.Tasks[:i] {
				e.Stop(started.Name)
			}
			return fmt.Errorf("task %q: %w", t.Name, err)
		}
	}
	return nil
}
