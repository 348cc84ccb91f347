package web

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/i18n"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/task"
	"github.com/kmirror/kmirror/views"
)

// touchedAll marks every field as touched: after a refused "Create now"
// every message is shown, and later validations keep showing them.
const touchedAll = "*"

func (h *smartConnectPages) newForm(c echo.Context) error {
	f := views.TaskForm{
		// Pull preselected: the original product lists it first, and it copies into the
		// instance whose page this is, where MirrorMaker 2 also runs best
		// (consume remote, produce local).
		Cluster: c.Param("name"), Direction: task.DirectionPull, PeerConfigType: task.PeerByAddress, PeerSecurityProtocol: cluster.Plaintext,
		PeerSASLMechanism: cluster.MechanismSCRAMSHA512, TopicsMode: "list", Tasks: strconv.Itoa(task.DefaultTasks),
		ReplicationFactor: "", StartOffset: task.StartEarliest, Compression: "none",
	}
	return h.renderForm(c, http.StatusOK, f)
}

// renderForm renders the whole create page, filling in what the form needs
// from the service (the instance, the other instances, the task limit).
func (h *smartConnectPages) renderForm(c echo.Context, status int, f views.TaskForm) error {
	ctx := c.Request().Context()
	info, err := h.s.svc.Cluster(ctx, c.Param("name"))
	if err != nil {
		return err
	}
	f.Cluster = info.Name
	f.AtLimit = info.TasksUsed >= info.TasksLimit
	f.TasksLimit, f.MinTargetMaxMessageBytes = info.TasksLimit, service.MinTargetMaxMessageBytes
	f.SmartConnectOff = !info.SmartConnect.Enabled
	if f.Engine == "" {
		f.Engine = info.SmartConnect.Engine
	}
	if f.Instances, err = h.peerChoices(ctx, info.Name); err != nil {
		return err
	}
	if f.ConnectClusters, err = h.s.connectClusterNames(ctx); err != nil {
		return err
	}
	p := h.s.instancePage(c, tr(c, "task.create"), info.Name, "smart-connect")
	return Render(c, status, views.TaskFormPage(p, f))
}

func (h *smartConnectPages) peerChoices(ctx context.Context, current string) ([]string, error) {
	all, err := h.s.instanceNames(ctx)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(n string) bool { return n == current }), nil
}

// create is "Create now": a created task goes back to the list with the
// success banner ("Task <name> created successfully"); a refused one re-renders the form with every message by
// its field, keeping what was typed except the secrets.
func (h *smartConnectPages) create(c echo.Context) error {
	p, err := parseTaskForm(c)
	if err != nil {
		return err
	}
	f, t, local, onForm := p.form, p.task, p.local, p.onForm
	if p.input.Op == "add_mapping" {
		// The no-JavaScript way to get another mapping row; with
		// JavaScript app.js adds rows in the page.
		if len(f.Mappings) < views.MaxMappings {
			f.Mappings = append(f.MappingRows(), task.Mapping{})
		}
		return h.renderForm(c, http.StatusOK, f)
	}
	f.Touched = touchedAll
	if len(local) > 0 {
		f.Problems = problemsView(local)
		f.Message = tr(c, "sc.not_created")
		return h.renderForm(c, http.StatusUnprocessableEntity, f)
	}
	info, err := h.s.svc.CreateTask(c.Request().Context(), t)
	if err != nil {
		e := service.AsError(err)
		if e.Code == service.CodeInternal || e.Code == service.CodeForbidden {
			return err
		}
		problems := onForm(e.Problems)
		f.Message = tr(c, "sc.not_created_because", "Reason", i18n.Msg(c.Request().Context(), e.Message))
		if len(e.Problems) > 0 {
			f.Message = tr(c, "sc.not_created")
		}
		for _, p := range secretsAgain(t.Peer.Secrets(), "peer.") {
			problems = append(problems, service.Problem{Field: p.Field, Message: tr(c, p.Message)})
		}
		f.Problems = problemsView(problems)
		return h.renderForm(c, http.StatusUnprocessableEntity, f)
	}
	h.s.flash(c, createdBanners(c, info)...)
	return Redirect(c, views.InstancePath(info.Current.Cluster, "smart-connect"))
}

// validate is the inline validation: the dry run's problems for the fields
// the user has touched, and the topic preview. htmx swaps the answer's
// parts in by id; without htmx the whole page comes back.
func (h *smartConnectPages) validate(c echo.Context) error {
	p, err := parseTaskForm(c)
	if err != nil {
		return err
	}
	f, t, local, onForm := p.form, p.task, p.local, p.onForm
	res, err := h.s.svc.ValidateTaskDryRun(c.Request().Context(), t)
	if err != nil {
		return err
	}
	f.Problems = problemsView(onlyTouched(append(local, onForm(res.Problems)...), f.Touched))
	f.Warnings = res.Warnings
	f.Preview = previewView(res.Flows)
	f.TopicChoices = res.SourceTopics
	if !IsHTMX(c) {
		return h.renderForm(c, http.StatusOK, f)
	}
	return Render(c, http.StatusOK, views.ValidateAnswer(f))
}

// check is "Start check": the connectivity check of both instances.
func (h *smartConnectPages) check(c echo.Context) error {
	p, err := parseTaskForm(c)
	if err != nil {
		return err
	}
	f, t := p.form, p.task
	res, err := h.s.svc.Connectivity(c.Request().Context(), t)
	if err != nil {
		e := service.AsError(err)
		if e.Code == service.CodeInternal || e.Code == service.CodeForbidden {
			return err
		}
		f.CheckProblems = problemsView(e.Problems)
		if len(e.Problems) == 0 {
			f.CheckProblems = []views.Problem{{Message: e.Message}}
		}
	} else {
		f.Check = connectivityView(res)
	}
	if !IsHTMX(c) {
		return h.renderForm(c, http.StatusOK, f)
	}
	return Render(c, http.StatusOK, views.CheckResult(f))
}

// onlyTouched keeps the problems of fields the user has touched, and those
// of no field on the form (a rule across fields or tasks).
func onlyTouched(p service.Problems, touched string) service.Problems {
	if touched == touchedAll {
		return p
	}
	set := map[string]bool{}
	for _, n := range strings.Split(touched, ",") {
		if n = strings.TrimSpace(n); n != "" {
			set[n] = true
		}
	}
	shown := func(field string) bool {
		slot := views.SlotOf(field)
		switch {
		case slot == "":
			return true
		case set[slot]:
			return true
		case strings.HasPrefix(slot, "rules.topic_mappings"):
			return set["rules.topic_mappings.source"] || set["rules.topic_mappings.target"]
		case slot == "rules.topics" || slot == "rules.topics_regex":
			return set["rules.topics_mode"] && (set["rules.topics"] || set["rules.topics_regex"])
		}
		return false
	}
	var out service.Problems
	for _, pr := range p {
		if shown(pr.Field) {
			out = append(out, pr)
		}
	}
	return out
}

// taskFormInput is the create-task form as posted. Input names are the
// API's field paths, so the service's problems land on their inputs.
type taskFormInput struct {
	Name                 string           `form:"name,trim"`
	Type                 string           `form:"type,trim"`
	CurrentAlias         string           `form:"current.alias,trim"`
	PeerAlias            string           `form:"peer.alias,trim"`
	PeerConfigType       task.ConfigType  `form:"peer.config_type,trim"`
	PeerCluster          string           `form:"peer.cluster,trim"`
	PeerAddress          string           `form:"peer.address,trim"`
	PeerSecurityProtocol string           `form:"peer.security_protocol,trim"`
	PeerSASLMechanism    string           `form:"peer.sasl_mechanism,trim"`
	PeerUsername         string           `form:"peer.username,trim"`
	PeerPassword         string           `form:"peer.password"`
	PeerCAPEM            string           `form:"peer.ca_pem,trim"`
	PeerClientCertPEM    string           `form:"peer.client_cert_pem,trim"`
	PeerClientKeyPEM     string           `form:"peer.client_key_pem"`
	PeerClientKeyPass    string           `form:"peer.client_key_password"`
	PeerOAuthEndpoint    string           `form:"peer.oauth.token_endpoint,trim"`
	PeerOAuthClientID    string           `form:"peer.oauth.client_id,trim"`
	PeerOAuthSecret      string           `form:"peer.oauth.client_secret"`
	PeerOAuthScope       string           `form:"peer.oauth.scope,trim"`
	PeerOAuthAudience    string           `form:"peer.oauth.audience,trim"`
	Direction            task.Direction   `form:"rules.direction,trim"`
	TopicsMode           string           `form:"rules.topics_mode,trim"`
	Topics               string           `form:"rules.topics"` // one per line
	TopicsRegex          string           `form:"rules.topics_regex,trim"`
	Tasks                string           `form:"rules.tasks,trim"`
	RenameTopics         bool             `form:"rules.rename_topics"`
	AddSourceHeader      bool             `form:"rules.add_source_header"`
	SyncConsumerOffsets  bool             `form:"rules.sync_consumer_offsets"`
	ReplicationFactor    string           `form:"rules.replication_factor,trim"`
	StartOffset          task.StartOffset `form:"rules.start_offset,trim"`
	Compression          string           `form:"rules.compression,trim"`
	OnTargetReplaced     string           `form:"rules.on_target_topic_replaced,trim"`
	Delivery             string           `form:"rules.delivery,trim"`
	TxnIntervalMs        string           `form:"rules.transaction_interval_ms,trim"`
	MappingSources       []string         `form:"rules.topic_mappings.source"`
	MappingTargets       []string         `form:"rules.topic_mappings.target"`
	Engine               string           `form:"engine,trim"`
	// Touched lists the inputs the user changed (app.js), "*" for all.
	Touched string `form:"_touched,trim"`
	// Op is "add_mapping" for the no-JavaScript "add a mapping row".
	Op string `form:"_op"`
}

// taskFormParse is a posted task form read: what to show again, the task
// to validate or create, the problems only the form can see (local) and
// how to move the service's problems onto the form's rows (onForm).
type taskFormParse struct {
	input  taskFormInput
	form   views.TaskForm
	task   task.Task
	local  service.Problems
	onForm func(service.Problems) service.Problems
}

// parseTaskForm reads the form into what to show again (never a secret)
// and the task to validate or create. Fields that do not apply to the
// choices made (an address while the peer is an instance, security fields
// the peer's protocol and mechanism do not use, the topic list while a regex
// is chosen) are left out of the task: the form only hides them. local are problems the service
// cannot see, such as a number that is not one.
func parseTaskForm(c echo.Context) (taskFormParse, error) {
	var in taskFormInput
	if err := decodeForm(c, &in); err != nil {
		return taskFormParse{}, err
	}
	f := views.TaskForm{
		Cluster: c.Param("name"), Name: in.Name, CurrentAlias: in.CurrentAlias, PeerAlias: in.PeerAlias,
		PeerConfigType: in.PeerConfigType, PeerCluster: in.PeerCluster, PeerAddress: in.PeerAddress,
		PeerSecurityProtocol: in.PeerSecurityProtocol, PeerSASLMechanism: in.PeerSASLMechanism,
		PeerUsername: in.PeerUsername, PeerCAPEM: in.PeerCAPEM, PeerClientCertPEM: in.PeerClientCertPEM,
		PeerOAuthTokenEndpoint: in.PeerOAuthEndpoint, PeerOAuthClientID: in.PeerOAuthClientID,
		PeerOAuthScope: in.PeerOAuthScope, PeerOAuthAudience: in.PeerOAuthAudience, Direction: in.Direction,
		TopicsMode: in.TopicsMode, TopicsRegex: in.TopicsRegex, Tasks: in.Tasks,
		RenameTopics: in.RenameTopics, AddSourceHeader: in.AddSourceHeader,
		SyncConsumerOffsets: in.SyncConsumerOffsets, ReplicationFactor: in.ReplicationFactor,
		StartOffset: in.StartOffset, Compression: in.Compression, OnTargetTopicReplaced: in.OnTargetReplaced, Touched: in.Touched,
		Delivery: in.Delivery, TransactionIntervalMs: in.TxnIntervalMs, Engine: in.Engine,
	}
	for _, line := range strings.Split(in.Topics, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			f.Topics = append(f.Topics, line)
		}
	}
	srcs, dsts := in.MappingSources, in.MappingTargets
	for i := 0; i < max(len(srcs), len(dsts)); i++ {
		m := task.Mapping{}
		if i < len(srcs) {
			m.Source = strings.TrimSpace(srcs[i])
		}
		if i < len(dsts) {
			m.Target = strings.TrimSpace(dsts[i])
		}
		f.Mappings = append(f.Mappings, m)
	}
	// Blank rows are the form's spare rows, not mappings; rowOf remembers
	// which row each mapping came from so messages land on it.
	var mappings []task.Mapping
	var rowOf []int
	for i, m := range f.Mappings {
		if m.Source != "" || m.Target != "" {
			mappings = append(mappings, m)
			rowOf = append(rowOf, i)
		}
	}
	if len(rowOf) > 0 {
		f.Mappings = f.Mappings[:rowOf[len(rowOf)-1]+1]
	} else {
		f.Mappings = nil
	}

	var local service.Problems
	// An empty box takes the default; anything typed is the user's, 0
	// included, and the service refuses what is out of range.
	number := func(field, what, s string, def int) int {
		if s == "" {
			return def
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			local.Add(field, "%s must be a whole number, not %q", what, s)
			return def // one message for the field, not a range error too
		}
		return n
	}
	t := task.Task{
		Name: f.Name, Type: in.Type, Engine: f.Engine,
		Current: task.Current{Cluster: f.Cluster, Alias: f.CurrentAlias},
		Peer:    task.Peer{Alias: f.PeerAlias, ConfigType: f.PeerConfigType},
		Rules: task.Rules{
			Direction: f.Direction, Tasks: number("rules.tasks", "tasks", f.Tasks, task.DefaultTasks),
			RenameTopics: f.RenameTopics, AddSourceHeader: f.AddSourceHeader, SyncConsumerOffsets: f.SyncConsumerOffsets,
			ReplicationFactor: number("rules.replication_factor", "replication factor", f.ReplicationFactor, task.DefaultReplicationFactor),
			StartOffset:       f.StartOffset, Compression: f.Compression, OnTargetTopicReplaced: f.OnTargetTopicReplaced,
			Delivery:              task.Delivery(f.Delivery),
			TransactionIntervalMs: number("rules.transaction_interval_ms", "transaction interval", f.TransactionIntervalMs, 0),
		},
	}
	if f.PeerConfigType == task.PeerByCluster {
		t.Peer.Cluster = f.PeerCluster
	} else {
		t.Peer = t.Peer.WithSettings(securityInUse(cluster.Settings{
			BootstrapServers: splitServers(f.PeerAddress), SecurityProtocol: f.PeerSecurityProtocol,
			SASLMechanism: f.PeerSASLMechanism, Username: f.PeerUsername, Password: in.PeerPassword, CAPEM: f.PeerCAPEM,
			ClientCertPEM: f.PeerClientCertPEM, ClientKeyPEM: in.PeerClientKeyPEM, ClientKeyPassword: in.PeerClientKeyPass,
			OAuth: cluster.OAuth{TokenEndpoint: f.PeerOAuthTokenEndpoint, ClientID: f.PeerOAuthClientID, ClientSecret: in.PeerOAuthSecret,
				Scope: f.PeerOAuthScope, Audience: f.PeerOAuthAudience},
		}))
	}
	if f.TopicsMode == "regex" {
		t.Rules.TopicsRegex = f.TopicsRegex
	} else {
		t.Rules.Topics = f.Topics
	}
	if !f.RenameTopics {
		// The mapping rows are disabled while rename is on; a browser
		// without JavaScript still sends them, so they are ignored here.
		t.Rules.TopicMappings = mappings
	}
	local = onRows(local, rowOf)
	return taskFormParse{input: in, form: f, task: t, local: local,
		onForm: func(p service.Problems) service.Problems { return onRows(p, rowOf) }}, nil
}

// onRows moves messages about mapping i (of the mappings sent to the
// service, blank rows left out) to the form row it came from.
func onRows(p service.Problems, rowOf []int) service.Problems {
	out := make(service.Problems, len(p))
	for i, pr := range p {
		if rest, ok := strings.CutPrefix(pr.Field, "rules.topic_mappings["); ok {
			if j := strings.IndexByte(rest, ']'); j > 0 {
				if n, err := strconv.Atoi(rest[:j]); err == nil && n >= 0 && n < len(rowOf) {
					pr.Field = "rules.topic_mappings[" + strconv.Itoa(rowOf[n]) + "]" + rest[j+1:]
				}
			}
		}
		out[i] = pr
	}
	return out
}
