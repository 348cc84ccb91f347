package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/kmirror/kmirror/internal/store"
	"github.com/kmirror/kmirror/internal/task"
)

// SmartConnect is a cluster's Smart Connect switch: whether tasks may be
// created on it (the original product's prerequisite) and the engine new
// tasks run on unless they name one.
type SmartConnect struct {
	Enabled bool `json:"enabled"`
	// Engine is "embedded" or "connect:<name>" (see task.ParseEngine).
	Engine string `json:"engine"`
}

func smartConnectOf(r store.Cluster) SmartConnect {
	sc := SmartConnect{Enabled: r.SmartConnect.Enabled, Engine: task.EngineEmbedded}
	if r.SmartConnect.ConnectCluster != "" {
		sc.Engine = task.ConnectEngine(r.SmartConnect.ConnectCluster)
	}
	return sc
}

// SetSmartConnect enables or disables Smart Connect on a registered cluster
// and picks its default engine. A Connect engine must name a registered
// Connect cluster. Tasks already created keep running where they run.
func (s *Service) SetSmartConnect(ctx context.Context, clusterName string, in SmartConnect) (_ ClusterInfo, err error) {
	defer s.audit(ctx, "cluster.smart-connect", clusterName, &err)
	if err := s.allow(ctx, RoleAdmin); err != nil {
		return ClusterInfo{}, err
	}
	if _, err := s.clusters.Cluster(ctx, clusterName); errors.Is(err, store.ErrNotFound) {
		return ClusterInfo{}, notFound("no cluster named %q", clusterName)
	} else if err != nil {
		return ClusterInfo{}, err
	}
	var p Problems
	connect, err := s.checkEngine(ctx, in.Engine, &p)
	if err != nil {
		return ClusterInfo{}, err
	}
	if len(p) > 0 {
		return ClusterInfo{}, &Error{Code: CodeInvalidCluster, Message: "the Smart Connect settings are not valid", Problems: p}
	}
	if err := s.clusters.SetSmartConnect(ctx, clusterName, store.SmartConnect{Enabled: in.Enabled, ConnectCluster: connect}); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return ClusterInfo{}, notFound("%v", err)
		}
		return ClusterInfo{}, fmt.Errorf("set Smart Connect of %q: %w", clusterName, err)
	}
	return s.Cluster(ctx, clusterName)
}
