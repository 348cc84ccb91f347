package service

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// healthTimeout bounds ClusterHealth: the console shows it on page load, so
// an unreachable cluster must cost the user seconds, not Describe's full
// timeout.
const healthTimeout = 4 * time.Second

// ClusterHealth is a quick look at a registered cluster, for the console's
// instance pages.
type ClusterHealth struct {
	Reachable bool `json:"reachable"`
	Brokers   int  `json:"brokers"`
	Topics    int  `json:"topics"`
	// Error says why the cluster could not be described, when it could not.
	Error string `json:"error,omitempty"`
}

// ClusterHealth describes a registered cluster within a few seconds. An
// unreachable cluster is not an error: it is in the answer. A cluster that
// is not registered is a not_found Error.
func (s *Service) ClusterHealth(ctx context.Context, name string) (ClusterHealth, error) {
	cs, err := s.ClusterSettings(ctx, name)
	if err != nil {
		return ClusterHealth{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	d, err := s.kafka.Describe(ctx, cs)
	if err != nil {
		msg := err.Error()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			msg = fmt.Sprintf("no answer from %v within %s: check the address and that the brokers are running", cs.BootstrapServers, healthTimeout)
		}
		return ClusterHealth{Error: msg}, nil
	}
	return ClusterHealth{Reachable: true, Brokers: d.Brokers, Topics: len(d.Topics)}, nil
}

// TasksOfCluster returns the tasks whose current cluster is name, ordered
// by name: an instance's Smart Connect list. Tasks that only use the
// cluster as their peer belong to their own current cluster's list.
func (s *Service) TasksOfCluster(ctx context.Context, name string) ([]TaskInfo, error) {
	all, err := s.ListTasks(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]TaskInfo, 0, len(all))
	for _, t := range all {
		if t.Current.Cluster == name {
			out = append(out, t)
		}
	}
	return out, nil
}
