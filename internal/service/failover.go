package service

import (
	"context"
	"strings"

	"github.com/kmirror/kmirror/internal/policy"
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
// a group active on the target is left alone (reported in skipped). A task
// on Kafka Connect commits the group's newest checkpoints that its
// MirrorCheckpointConnector wrote (a checkpoint older than the group's
// position on the source is reported in notes).
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
	if why := policy.UnsyncedGroup(group); why != "" {
		return FailoverResult{}, &Error{Code: CodeInvalidRequest, Message: "group " + group + " cannot be failed over: " + why,
			Problems: Problems{{Field: "group", Message: why}}}
	}
	rec, err := s.storedTask(ctx, name)
	if err != nil {
		return FailoverResult{}, err
	}
	if !rec.Spec.Rules.SyncConsumerOffsets {
		return FailoverResult{}, &Error{Code: CodeInvalidRequest,
			Message: "task " + name + " does not sync consumer offsets: create a task with sync consumer offsets on to fail groups over"}
	}
	// Both engines fail over by the same rule (replicator's commitGroup):
	// the embedded one from its own translation, the Connect one from the
	// checkpoints MirrorMaker 2 wrote.
	r, err := s.runnerFor(rec.Spec)
	if err != nil {
		return FailoverResult{}, &Error{Code: CodeInternal, Message: err.Error()}
	}
	syncer, ok := r.(GroupSyncer)
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
