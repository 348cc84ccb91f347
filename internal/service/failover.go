package service

import (
	"context"
	"strings"

	"github.com/kmirror/kmirror/internal/replicator"
)

// GroupSyncer is the part of the runner that syncs one consumer group now;
// the engine implements it.
type GroupSyncer interface {
	SyncGroup(ctx context.Context, task, group string) ([]replicator.GroupResult, error)
}

// FailoverResult is what a failover did for a group: the checkpoints
// written and the offsets committed on the target, per flow.
type FailoverResult struct {
	Task    string                   `json:"task"`
	Group   string                   `json:"group"`
	Results []replicator.GroupResult `json:"results"`
}

// Failover translates one consumer group's offsets and commits them to the
// target now, so the group's consumers can move to the target and continue
// without missing a record. The task must run with sync consumer offsets on;
// a group active on the target is left alone (reported in skipped).
func (s *Service) Failover(ctx context.Context, name, group string) (_ FailoverResult, err error) {
	defer s.audit(ctx, "task.failover", name+" group "+group, &err)
	if err := s.allow(ctx, RoleOperator); err != nil {
		return FailoverResult{}, err
	}
	group = strings.TrimSpace(group)
	if group == "" {
		return FailoverResult{}, &Error{Code: CodeInvalidRequest, Message: "name the consumer group to fail over",
			Problems: Problems{{Field: "group", Message: "group is required"}}}
	}
	rec, err := s.storedTask(ctx, name)
	if err != nil {
		return FailoverResult{}, err
	}
	if !rec.Spec.Rules.SyncConsumerOffsets {
		return FailoverResult{}, &Error{Code: CodeInvalidRequest,
			Message: "task " + name + " does not sync consumer offsets: create a task with sync consumer offsets on to fail groups over"}
	}
	if c, onConnect := rec.Spec.ConnectCluster(); onConnect {
		return FailoverResult{}, &Error{Code: CodeInvalidRequest,
			Message: "task " + name + " runs on Kafka Connect cluster " + c + ": its MirrorCheckpointConnector syncs the offsets of idle groups every 10 s on its own; on-demand failover is for tasks on the embedded engine"}
	}
	syncer, ok := s.runner.(GroupSyncer)
	if !ok {
		return FailoverResult{}, &Error{Code: CodeInternal, Message: "this runner cannot sync groups"}
	}
	res, err := syncer.SyncGroup(ctx, name, group)
	if err != nil {
		return FailoverResult{}, &Error{Code: CodeInvalidRequest, Message: "fail over group " + group + ": " + err.Error()}
	}
	s.log.Info("consumer group failed over", "task", name, "group", group, "by", actorName(ctx))
	return FailoverResult{Task: name, Group: group, Results: res}, nil
}
