package service

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/connect/connectengine"
	"github.com/kmirror/kmirror/internal/connect/connectplan"
	"github.com/kmirror/kmirror/internal/task"
)

// ImportRequest is the body of POST /api/v1/tasks/import-mm2: one flow of
// a dedicated MirrorMaker 2's mm2.properties to run as a kmirror task.
type ImportRequest struct {
	// Properties is the mm2.properties file's text.
	Properties string `json:"properties"`
	// Flow is the flow to import, "<source alias>-><target alias>"; it may
	// be left out when the file enables one flow.
	Flow string `json:"flow,omitempty"`
	// Name, Current and Engine are as for adoption (AdoptRequest).
	Name    string `json:"name"`
	Current string `json:"current"`
	Engine  string `json:"engine,omitempty"`
	// StartOver copies every topic from its first record when MirrorMaker's
	// offsets topic is missing or holds no progress of the flow; without it
	// that is refused, as it would copy everything MirrorMaker copied again.
	StartOver bool `json:"start_over,omitempty"`
}

// ImportResult is the task created and the MirrorMaker progress it
// continues from.
type ImportResult struct {
	Task TaskInfo `json:"task"`
	// Partitions is how many source partitions' offsets were handed over.
	Partitions int `json:"partitions"`
	// OffsetsTopic is where MirrorMaker's progress was read, on the target.
	OffsetsTopic string `json:"offsets_topic"`
}

// dedicatedConnector is the name a dedicated MirrorMaker gives its source
// connector, under which its offsets are kept.
const dedicatedConnector = "MirrorSourceConnector"

// ImportMM2Properties turns one flow of a dedicated MirrorMaker 2
// (mm2.properties) into a kmirror task that continues where MirrorMaker
// stopped: the flow is mapped as adoption maps connectors (every setting
// mapped or a problem naming it), checked as CreateTask checks a task, and
// MirrorMaker's offsets (its offsets topic on the target) are handed to
// the task's engine before it starts. MirrorMaker must be stopped first:
// kmirror cannot stop a process it does not run, and both copying would
// write every record twice. Operators and admins only.
func (s *Service) ImportMM2Properties(ctx context.Context, req ImportRequest) (_ ImportResult, err error) {
	defer s.audit(ctx, "task.import-mm2", req.Name, &err)
	if err := s.allow(ctx, RoleOperator); err != nil {
		return ImportResult{}, err
	}
	flows, perr := connectplan.ParseMM2Properties(req.Properties)
	if perr != nil {
		return ImportResult{}, invalidTask(Problems{{Field: "properties", Message: perr.Error()}})
	}
	var flow *connectplan.PropertiesFlow
	var names []string
	for i, f := range flows {
		name := f.SourceAlias + "->" + f.TargetAlias
		names = append(names, name)
		if req.Flow == name || req.Flow == "" && len(flows) == 1 {
			flow = &flows[i]
		}
	}
	if flow == nil {
		return ImportResult{}, invalidTask(Problems{{Field: "flow",
			Message: fmt.Sprintf("name the flow to import, one of the file's enabled flows: %s", strings.Join(names, ", "))}})
	}
	regs, err := s.registered(ctx)
	if err != nil {
		return ImportResult{}, err
	}
	t, fe := connectplan.Adopt(connectplan.AdoptInput{Flow: flow.MM2Flow, Configs: flow.Configs, Clusters: regs,
		Name: req.Name, Current: req.Current, Engine: req.Engine})
	if len(fe) > 0 {
		var p Problems
		for _, e := range fe {
			p.Add(e.Field, "%s", e.Message)
		}
		return ImportResult{}, invalidTask(p)
	}
	partitions := 0
	prepare := func(t task.Task, current, peer cluster.Settings) (func(), error) {
		failed := func(step string, err error) error {
			s.log.Error("mm2.properties flow not imported", "task", t.Name, "flow", flow.SourceAlias+"->"+flow.TargetAlias, "step", step, "err", err)
			return &Error{Code: CodeAdoptFailed, Message: fmt.Sprintf("MirrorMaker flow %s->%s not imported as task %s: %s failed: %v: fix the cause and import again", flow.SourceAlias, flow.TargetAlias, t.Name, step, err)}
		}
		target := peer
		if t.Current.Alias == flow.TargetAlias {
			target = current
		}
		offs, err := connectengine.ReadOffsetsTopic(ctx, target, flow.OffsetsTopic, dedicatedConnector)
		missing := errors.Is(err, sarama.ErrUnknownTopicOrPartition)
		if err != nil && !missing {
			return nil, failed("read MirrorMaker's offsets from "+flow.OffsetsTopic, err)
		}
		progress, err := mm2Progress(flow.MM2Flow, connect.Offsets{Offsets: offs})
		if err != nil {
			return nil, failed("read MirrorMaker's offsets from "+flow.OffsetsTopic, err)
		}
		if positions(progress) == 0 && !req.StartOver {
			// No progress read is no progress made only if MirrorMaker never
			// ran: more often the file names another offsets topic than the
			// one MirrorMaker wrote, and continuing would copy it all again.
			var p Problems
			if missing {
				p.Add("start_over", "MirrorMaker's offsets topic %s does not exist on %s: check that the file is the one MirrorMaker ran with (offset.storage.topic, top-level or %s.offset.storage.topic, names the topic) and that it ran against %s; to copy every topic again from its first record, ask to start over",
					flow.OffsetsTopic, target.Name, flow.TargetAlias, target.Name)
			} else {
				p.Add("start_over", "MirrorMaker's offsets topic %s on %s holds no progress of flow %s->%s: check that the file is the one MirrorMaker ran with (offset.storage.topic, top-level or %s.offset.storage.topic, names the topic) and that it ran against %s; to copy every topic again from its first record, ask to start over",
					flow.OffsetsTopic, target.Name, flow.SourceAlias, flow.TargetAlias, flow.TargetAlias, target.Name)
			}
			return nil, invalidTask(p)
		}
		to, err := s.handover(t)
		if err != nil {
			return nil, failed("find the engine "+t.EngineOrDefault(), err)
		}
		undo := func() { s.unseed(t) }
		if err := to.Seed(t, current, peer, progress); err != nil {
			undo()
			return nil, failed("hand the offsets to "+t.EngineOrDefault(), err)
		}
		partitions = positions(progress)
		return undo, nil
	}
	info, err := s.createTask(ctx, t, prepare)
	if err != nil {
		return ImportResult{}, err
	}
	s.log.Info("mm2.properties flow imported", "task", info.Name, "flow", flow.SourceAlias+"->"+flow.TargetAlias,
		"partitions", partitions, "engine", info.Engine, "by", actorName(ctx))
	return ImportResult{Task: info, Partitions: partitions, OffsetsTopic: flow.OffsetsTopic}, nil
}

// RedactedProperties is a pasted mm2.properties to show again after a
// refusal, every value that may be a secret taken out
// (connectplan.RedactedProperties); removed says one was.
func RedactedProperties(text string) (redacted string, removed bool) {
	return connectplan.RedactedProperties(text)
}
