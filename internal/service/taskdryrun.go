package service

import (
	"context"
	"strings"
	"sync"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/clustercheck"
	"github.com/kmirror/kmirror/internal/replicator"
	"github.com/kmirror/kmirror/internal/task"
)

// ValidationResult is a dry run of CreateTask: every problem that would
// refuse the task, warnings, and per flow the topics that would be
// replicated with their target names.
type ValidationResult struct {
	// OK is true when CreateTask would accept the task as it is now.
	OK       bool          `json:"ok"`
	Problems Problems      `json:"problems"`
	Warnings []string      `json:"warnings"`
	Flows    []FlowPreview `json:"flows"`
	// SourceTopics are the topics of the source cluster(s) for the chosen
	// direction, internal ones left out: what the form offers to pick
	// from. Empty when a source could not be described.
	SourceTopics []string `json:"source_topics"`
}

// FlowPreview is what one flow would replicate, from the source cluster's
// topics as they are now (new matching topics are picked up later too).
type FlowPreview struct {
	Flow string `json:"flow"` // "<source alias>-><target alias>"
	// Source and Target are current or peer.
	Source    string         `json:"source"`
	Target    string         `json:"target"`
	Topics    []TopicPreview `json:"topics"`
	Conflicts []string       `json:"conflicts,omitempty"`
	// Error says why the source's topics could not be listed.
	Error string `json:"error,omitempty"`
}

// ValidateTaskDryRun is CreateTask without the writes: it collects every problem
// (field rules, unregistered clusters, rules across stored tasks, the
// replication factor against the targets' broker counts) and previews the
// topics each flow would replicate by listing the sources' topics. A
// cluster that cannot be reached is a warning, not a problem here: the field
// rules are still reported. Only a store failure is an error.
func (s *Service) ValidateTaskDryRun(ctx context.Context, in task.Task) (ValidationResult, error) {
	res := ValidationResult{Problems: Problems{}, Warnings: []string{}, Flows: []FlowPreview{}, SourceTopics: []string{}}
	if err := s.allow(ctx, RoleOperator); err != nil {
		return res, err
	}
	if err := s.requireTasks(); err != nil {
		return res, err
	}
	t := NormalizeTask(in)
	p := ValidateTask(t)
	current, peer, rp, err := s.resolveTask(ctx, t, p)
	if err != nil {
		return res, err
	}
	p = append(p, rp...)

	recs, err := s.taskStore.ListTasks(ctx)
	if err != nil {
		return res, err
	}
	addrs, err := s.clusterAddrs(ctx)
	if err != nil {
		return res, err
	}
	specs := make([]task.Task, len(recs))
	for i, r := range recs {
		specs[i] = r.Spec
	}
	cp, warnings := CheckAgainstTasks(t, specs, addrs)
	p = append(p, cp...)
	res.Warnings = append(res.Warnings, warnings...)
	if err := s.resolveEngine(ctx, &t, &p); err != nil {
		return res, err
	}
	if len(p) == 0 {
		s.checkOnEngine(t, current, peer, &p)
	}
	w, err := s.engineWarnings(ctx, t, current, peer)
	if err != nil {
		return res, err
	}
	res.Warnings = append(res.Warnings, w...)

	if len(rp) == 0 && len(p.For("current.cluster")) == 0 && !peerUnusable(p) {
		s.preview(ctx, t, current, peer, &p, &res)
	}
	res.Problems = p
	res.OK = len(p) == 0
	return res, nil
}

// peerUnusable reports whether the peer's fields are too broken to connect.
func peerUnusable(p Problems) bool {
	for _, f := range []string{"peer.config_type", "peer.cluster", "peer.address", "peer.security_protocol", "peer.sasl_mechanism", "peer.username", "peer.password", "peer.ca_pem"} {
		if len(p.For(f)) > 0 {
			return true
		}
	}
	return false
}

// preview describes both clusters at once, then checks the replication
// factor and selects each flow's topics.
func (s *Service) preview(ctx context.Context, t task.Task, current, peer cluster.Settings, p *Problems, res *ValidationResult) {
	cur, per := sides(t, current, peer)
	type described struct {
		d   clustercheck.Description
		err error
	}
	desc := map[string]described{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, sd := range []side{cur, per} {
		wg.Go(func() {
			d, err := s.kafka.Describe(ctx, sd.settings)
			mu.Lock()
			desc[sd.role] = described{d, err}
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, sd := range []side{cur, per} {
		if err := desc[sd.role].err; err != nil {
			res.Warnings = append(res.Warnings, "cannot reach "+sd.label+": "+err.Error()+": the replication factor and the topic preview could not be checked against it")
		}
	}
	if len(p.For("rules.replication_factor")) == 0 {
		for _, tg := range targets(t, cur, per) {
			if d := desc[tg.role]; d.err == nil {
				checkBrokers(p, t, tg, d.d.Brokers)
			}
		}
	}
	if t.Rules.ExactlyOnce() && len(p.For("rules.delivery")) == 0 {
		s.checkTransactions(ctx, t, targets(t, cur, per), func(role string) bool { return desc[role].err == nil }, p)
	}
	res.SourceTopics = sourceTopicChoices(t, cur, per, func(role string) (clustercheck.Description, bool) {
		d := desc[role]
		return d.d, d.err == nil
	})
	flows, err := replicator.FlowsOf(t, current, peer)
	if err != nil {
		return // the field problems already say why
	}
	role := func(alias string) string {
		if alias == t.Current.Alias {
			return cur.role
		}
		return per.role
	}
	for _, f := range flows {
		fp := FlowPreview{Flow: f.Name(), Source: role(f.Source.Alias), Target: role(f.Target.Alias), Topics: []TopicPreview{}}
		if d := desc[fp.Source]; d.err != nil {
			fp.Error = d.err.Error()
		} else {
			pairs, conflicts := f.Policy.Select(d.d.Topics)
			for _, pr := range pairs {
				fp.Topics = append(fp.Topics, TopicPreview{Pair: pr})
			}
			fp.Conflicts = conflicts
			if len(pairs) == 0 {
				res.Warnings = append(res.Warnings, "flow "+f.Name()+" would replicate no topic yet: none of the "+fp.Source+" cluster's topics is selected (matching topics created later are picked up)")
			}
		}
		res.Flows = append(res.Flows, fp)
	}
	targetTopics := map[string][]string{}
	for role, d := range desc {
		if d.err == nil {
			targetTopics[role] = d.d.Topics
		}
	}
	labels := map[string]string{cur.role: cur.label, per.role: per.label}
	settings := map[string]cluster.Settings{cur.role: cur.settings, per.role: per.settings}
	res.Warnings = append(res.Warnings, s.checkMessageBytes(ctx, res.Flows, targetTopics, labels, settings)...)
}

// checkTransactions asks each reachable target of an exactly-once task
// whether it takes the task's transactions (the right on its transactional
// ids, the transaction timeout), with a probe id of the task's own: a
// running flow's id would be fenced by the probe.
func (s *Service) checkTransactions(ctx context.Context, t task.Task, tgs []side, reachable func(role string) bool, p *Problems) {
	probe := task.TransactionalIDPrefix(t.Name) + "check"
	timeout := task.TransactionTimeout(t.Rules.TransactionInterval())
	for _, tg := range tgs {
		if !reachable(tg.role) {
			continue
		}
		if err := s.kafka.Transactions(ctx, tg.settings, probe, timeout); err != nil {
			p.Add("rules.delivery", "exactly_once needs transactions on %s, which refuses them: %v", tg.label, err)
		}
	}
}

// ConnectivityResult is the answer of the connectivity check (/api/v1/openapi.json).
type ConnectivityResult struct {
	OK       bool           `json:"ok"`
	Clusters []ClusterCheck `json:"clusters"`
}

// ClusterCheck is one side's check, step by step.
type ClusterCheck struct {
	Role string `json:"role"` // current or peer
	// Cluster names the cluster: its registered name, or the peer's
	// addresses.
	Cluster string `json:"cluster"`
	clustercheck.Result
}

// Connectivity checks, step by step, that kmirror can use both clusters of
// a task with its settings (docs/TASKS.md, Connectivity check). Only the fields needed to connect must
// be valid; their problems come back as an invalid_task Error. A failed
// check is not an error: it is in the result.
func (s *Service) Connectivity(ctx context.Context, in task.Task) (ConnectivityResult, error) {
	if err := s.allow(ctx, RoleOperator); err != nil {
		return ConnectivityResult{}, err
	}
	t := NormalizeTask(in)
	var p Problems
	for _, pr := range ValidateTask(t) {
		if isConnectionField(pr.Field) {
			p = append(p, pr)
		}
	}
	current, peer, rp, err := s.resolveTask(ctx, t, p)
	if err != nil {
		return ConnectivityResult{}, err
	}
	if p = append(p, rp...); len(p) > 0 {
		return ConnectivityResult{}, invalidTask(p)
	}
	cur, per := sides(t, current, peer)
	res := ConnectivityResult{Clusters: make([]ClusterCheck, 2)}
	var wg sync.WaitGroup
	for i, sd := range []side{cur, per} {
		name := t.Current.Cluster
		if sd.role == "peer" {
			name = t.Peer.Cluster
			if t.Peer.ConfigType != task.PeerByCluster {
				name = strings.Join(t.Peer.Address, ",")
			}
		}
		wg.Go(func() {
			res.Clusters[i] = ClusterCheck{Role: sd.role, Cluster: name, Result: s.kafka.Check(ctx, sd.settings)}
		})
	}
	wg.Wait()
	res.OK = res.Clusters[0].OK && res.Clusters[1].OK
	return res, nil
}
