package service

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kmirror/kmirror/internal/connect"
)

// ConnectClusterCheck is the answer of the Connect cluster check
// (/api/v1/openapi.json): whether kmirror can run tasks on the cluster.
type ConnectClusterCheck struct {
	Name string `json:"name"`
	// OK is true when every check passed: the cluster is usable.
	OK bool `json:"ok"`
	// KafkaCluster is the registered Kafka cluster the workers are said to
	// write to; KafkaClusterID is the id the workers report (GET /).
	// kmirror does not compare them yet: it has no way to read a
	// registered cluster's id.
	KafkaCluster   string `json:"kafka_cluster"`
	KafkaClusterID string `json:"kafka_cluster_id,omitempty"`
	Version        string `json:"version,omitempty"`
	// Workers is each REST URL's answer.
	Workers []ConnectWorkerCheck `json:"workers"`
	// Checks are the verdicts, in order: reachable, mirror_plugins,
	// client_overrides, exactly_once (optional).
	Checks []ConnectCheckItem `json:"checks"`
}

// ConnectWorkerCheck is one REST URL's answer to GET /.
type ConnectWorkerCheck struct {
	URL            string `json:"url"`
	OK             bool   `json:"ok"`
	Version        string `json:"version,omitempty"`
	KafkaClusterID string `json:"kafka_cluster_id,omitempty"`
	Error          string `json:"error,omitempty"`
}

// ConnectCheckItem is one verdict in plain language and, when it failed or
// needs care, what to do.
type ConnectCheckItem struct {
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Skipped bool   `json:"skipped,omitempty"`
	// Optional is a capability only some tasks need: when it fails the
	// cluster stays usable for the others (OK ignores it).
	Optional bool   `json:"optional,omitempty"`
	Verdict  string `json:"verdict"`
	Fix      string `json:"fix,omitempty"`
}

// Names of the Connect cluster checks.
const (
	ConnectCheckReachable       = "reachable"
	ConnectCheckMirrorPlugins   = "mirror_plugins"
	ConnectCheckClientOverrides = "client_overrides"
	ConnectCheckExactlyOnce     = "exactly_once"
)

// Time a check may take: a user waits for the answer, and a dead worker
// should not hold the others' verdicts.
const (
	connectCheckWorkerTimeout = 5 * time.Second
	connectCheckDialTimeout   = 3 * time.Second
	// Validation loads the connector class on first use: it may take longer.
	connectCheckRequestTimeout = 15 * time.Second
)

// CheckConnectCluster asks a registered Connect cluster whether kmirror can
// run tasks on it: every worker answers, the MirrorMaker 2 connectors are
// installed, and connectors may set their own client settings (kmirror
// points each connector's clients at its task's clusters). A failed check
// is not an error: it is in the result.
func (s *Service) CheckConnectCluster(ctx context.Context, name string) (ConnectClusterCheck, error) {
	if err := s.allow(ctx, RoleViewer); err != nil {
		return ConnectClusterCheck{}, err
	}
	cs, err := s.ConnectClusterSettings(ctx, name)
	if err != nil {
		return ConnectClusterCheck{}, err
	}
	return checkConnect(ctx, cs), nil
}

func checkConnect(ctx context.Context, cs ConnectClusterSettings) ConnectClusterCheck {
	res := ConnectClusterCheck{Name: cs.Name, KafkaCluster: cs.KafkaCluster, Workers: make([]ConnectWorkerCheck, len(cs.URLs))}
	base := connectConfig(cs)
	base.Timeout, base.DialTimeout = connectCheckWorkerTimeout, connectCheckDialTimeout
	var wg sync.WaitGroup
	for i, u := range cs.URLs {
		wg.Go(func() { res.Workers[i] = checkWorker(ctx, base, u) })
	}
	wg.Wait()

	var live []string
	for _, w := range res.Workers {
		if w.OK {
			live = append(live, w.URL)
			if res.Version == "" {
				res.Version, res.KafkaClusterID = w.Version, w.KafkaClusterID
			}
		}
	}
	res.Checks = append(res.Checks, reachableVerdict(res.Workers, len(live)))

	var client *connect.Client
	if len(live) > 0 {
		cfg := base
		cfg.URLs, cfg.Timeout = live, connectCheckRequestTimeout
		client, _ = connect.New(cfg) // the same settings made a client per URL above
		defer client.Close()
	}
	plugins := pluginsVerdict(ctx, client)
	res.Checks = append(res.Checks, plugins, overridesVerdict(ctx, client, plugins), exactlyOnceVerdict(ctx, client, plugins))

	res.OK = true
	for _, c := range res.Checks {
		res.OK = res.OK && (c.OK || c.Optional)
	}
	return res
}

// checkWorker asks one URL for GET /, alone, so that each URL gets its own
// verdict.
func checkWorker(ctx context.Context, base connect.Config, url string) ConnectWorkerCheck {
	w := ConnectWorkerCheck{URL: url}
	cfg := base
	cfg.URLs = []string{url}
	c, err := connect.New(cfg)
	if err != nil {
		w.Error = err.Error()
		return w
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, connectCheckWorkerTimeout)
	defer cancel()
	si, err := c.ServerInfo(ctx)
	if err != nil {
		w.Error = err.Error()
		return w
	}
	w.OK, w.Version, w.KafkaClusterID = true, si.Version, si.KafkaClusterID
	return w
}

func reachableVerdict(workers []ConnectWorkerCheck, live int) ConnectCheckItem {
	it := ConnectCheckItem{Name: ConnectCheckReachable}
	if live == 0 {
		it.Verdict = "no worker answers"
		it.Fix = "check each URL's error: the URL, that the worker runs and kmirror can reach it, and the Connect cluster's credentials (user name and password, bearer token or client certificate) and CA certificate"
		return it
	}
	var ids, versions []string
	for _, w := range workers {
		if w.OK {
			if !slices.Contains(ids, w.KafkaClusterID) {
				ids = append(ids, w.KafkaClusterID)
			}
			if !slices.Contains(versions, w.Version) {
				versions = append(versions, w.Version)
			}
		}
	}
	if len(ids) > 1 {
		it.Verdict = fmt.Sprintf("the workers write to different Kafka clusters (%s): they are not one Connect cluster", strings.Join(ids, ", "))
		it.Fix = "list only the URLs of the workers of one Connect cluster (the same group.id and bootstrap.servers)"
		return it
	}
	it.OK = true
	it.Verdict = fmt.Sprintf("%d of %d workers answer (Kafka Connect %s)", live, len(workers), strings.Join(versions, ", "))
	if live < len(workers) {
		// Usable, as requests move on to a worker that answers; but one
		// worker fewer carries the tasks.
		it.Fix = "start the workers that do not answer, or remove their URLs from the Connect cluster"
	}
	return it
}

// skippedVerdict is a check that could not run because an earlier one
// failed.
func skippedVerdict(name, why string) ConnectCheckItem {
	return ConnectCheckItem{Name: name, Skipped: true, Verdict: "not checked: " + why}
}

func pluginsVerdict(ctx context.Context, c *connect.Client) ConnectCheckItem {
	if c == nil {
		return skippedVerdict(ConnectCheckMirrorPlugins, "no worker answers")
	}
	it := ConnectCheckItem{Name: ConnectCheckMirrorPlugins}
	ctx, cancel := context.WithTimeout(ctx, connectCheckRequestTimeout)
	defer cancel()
	plugins, err := c.Plugins(ctx)
	if err != nil {
		it.Verdict = fmt.Sprintf("cannot list the workers' plugins: %v", err)
		it.Fix = "retry; check the worker's log if it persists"
		return it
	}
	var missing []string
	for _, class := range connect.MirrorConnectors {
		if !slices.ContainsFunc(plugins, func(p connect.Plugin) bool { return p.Class == class }) {
			missing = append(missing, shortClass(class))
		}
	}
	if len(missing) > 0 {
		it.Verdict = fmt.Sprintf("MirrorMaker 2 connectors missing: %s", strings.Join(missing, ", "))
		it.Fix = "put Kafka's connect-mirror plugin (connect-mirror and connect-mirror-client jars, shipped with Apache Kafka) on every worker's plugin.path and restart the workers"
		return it
	}
	it.OK = true
	it.Verdict = "the MirrorMaker 2 connectors are installed (MirrorSourceConnector, MirrorCheckpointConnector, MirrorHeartbeatConnector)"
	return it
}

// overridesVerdict asks the workers to validate a MirrorSourceConnector
// that sets a producer setting of its own: the workers'
// connector.client.config.override.policy refuses it unless it is All.
// Validation creates nothing.
func overridesVerdict(ctx context.Context, c *connect.Client, plugins ConnectCheckItem) ConnectCheckItem {
	switch {
	case c == nil:
		return skippedVerdict(ConnectCheckClientOverrides, "no worker answers")
	case !plugins.OK:
		return skippedVerdict(ConnectCheckClientOverrides, "MirrorSourceConnector is not known to be installed")
	}
	it := ConnectCheckItem{Name: ConnectCheckClientOverrides}
	ctx, cancel := context.WithTimeout(ctx, connectCheckRequestTimeout)
	defer cancel()
	refusal, err := c.OverridesRefused(ctx)
	if err != nil {
		it.Verdict = fmt.Sprintf("cannot ask the workers to validate a connector configuration: %v", err)
		it.Fix = "retry; check the worker's log if it persists"
		return it
	}
	if refusal != "" {
		it.Verdict = fmt.Sprintf("the workers refuse client settings in connector configurations: %s", refusal)
		it.Fix = "set connector.client.config.override.policy=All on every worker and restart them: kmirror points each connector's consumers and producers at its task's clusters"
		return it
	}
	it.OK = true
	it.Verdict = "the workers accept client settings in connector configurations (connector.client.config.override.policy)"
	return it
}

// exactlyOnceVerdict asks the workers to validate a MirrorSourceConnector
// that requires exactly-once delivery (KIP-618): only exactly_once tasks
// need it, so its failure leaves the cluster usable.
func exactlyOnceVerdict(ctx context.Context, c *connect.Client, plugins ConnectCheckItem) ConnectCheckItem {
	switch {
	case c == nil:
		return skippedVerdict(ConnectCheckExactlyOnce, "no worker answers")
	case !plugins.OK:
		return skippedVerdict(ConnectCheckExactlyOnce, "MirrorSourceConnector is not known to be installed")
	}
	it := ConnectCheckItem{Name: ConnectCheckExactlyOnce, Optional: true}
	ctx, cancel := context.WithTimeout(ctx, connectCheckRequestTimeout)
	defer cancel()
	refusal, err := c.ExactlyOnceRefused(ctx)
	if err != nil {
		it.Verdict = fmt.Sprintf("cannot ask the workers to validate a connector configuration: %v", err)
		it.Fix = "retry; check the worker's log if it persists"
		return it
	}
	if refusal != "" {
		it.Verdict = fmt.Sprintf("the workers do not run exactly-once source connectors (%s): at_least_once tasks only", refusal)
		it.Fix = "for exactly_once tasks, set exactly.once.source.support=preparing on every worker, then enabled, restarting them each time"
		return it
	}
	it.OK = true
	it.Verdict = "the workers run exactly-once source connectors (exactly.once.source.support=enabled): exactly_once tasks can run here"
	return it
}

// shortClass is a class's simple name.
func shortClass(class string) string {
	return class[strings.LastIndex(class, ".")+1:]
}
