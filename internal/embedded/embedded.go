// Package embedded starts in-process Kafka clusters so kmirror can run
// without a Kafka installation: `kmirror demo` replicates between two of them,
// and fast tests use them instead of real brokers.
//
// Each cluster is franz-go's kfake: a Kafka protocol implementation that keeps
// its log in memory and listens on 127.0.0.1 on free ports. kmirror reaches it
// over TCP through the same cluster.Settings -> sarama path as any broker, so
// nothing in the product knows it is talking to a fake.
//
// Invariants and limits:
//   - listeners are on 127.0.0.1 only, PLAINTEXT, on ports the OS picked;
//   - data lives in memory and is gone after Close;
//   - kfake is not Apache Kafka: auth failures, timings and some edge cases
//     differ (kfake closes the connection on any auth failure, where a broker answers with a SASL error). A behaviour proven only here is not proven:
//     the real-Kafka suites are the proof, this package is the fast path.
package embedded

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kmirror/kmirror/internal/cluster"
)

// Option changes how a cluster is started.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	brokers    int
	minSession time.Duration
}

func defaultConfig() config {
	return config{
		brokers: 1,
		// kfake's default minimum group session timeout is 6 s; sarama's
		// default session timeout is 10 s, so groups work either way. A lower
		// floor lets tests that use short sessions join without an error.
		minSession: 100 * time.Millisecond,
	}
}

func (c config) validate() error {
	var errs []error
	if c.brokers < 1 || c.brokers > 16 {
		errs = append(errs, fmt.Errorf("brokers = %d: use 1 to 16", c.brokers))
	}
	return errors.Join(errs...)
}

// Brokers sets how many brokers each cluster has, overriding the default of
// one. More brokers let replication factors above 1 be created and spread
// partition leaders, at the cost of one listener each.
func Brokers(n int) Option { return optionFunc(func(c *config) { c.brokers = n }) }

// Cluster is one running in-process Kafka cluster.
type Cluster struct {
	settings cluster.Settings
	fake     *kfake.Cluster
}

// Start starts one cluster named name (the name goes into its Settings and its
// cluster id). Close it when done.
func Start(name string, opts ...Option) (*Cluster, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o.apply(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("embedded cluster %q: %w", name, err)
	}
	kopts := []kfake.Opt{
		kfake.NumBrokers(cfg.brokers),
		kfake.ClusterID("kmirror-embedded-" + name),
		kfake.GroupMinSessionTimeout(cfg.minSession),
	}
	fake, err := kfake.NewCluster(kopts...)
	if err != nil {
		return nil, fmt.Errorf("start embedded cluster %q: %w (is the loopback interface up?)", name, err)
	}
	return &Cluster{
		settings: cluster.Settings{
			Name:             name,
			BootstrapServers: fake.ListenAddrs(),
			SecurityProtocol: cluster.Plaintext,
		},
		fake: fake,
	}, nil
}

// Settings is how to reach the cluster: PLAINTEXT on 127.0.0.1.
func (c *Cluster) Settings() cluster.Settings {
	s := c.settings
	s.BootstrapServers = append([]string(nil), s.BootstrapServers...)
	return s
}

// Fault makes the cluster fail matching requests (kfake.Fault), for tests of
// broker errors that real Kafka cannot be made to give on demand, such as a
// produce written but answered with a timeout (the answer "lost").
func (c *Cluster) Fault(faults ...kfake.Fault) *kfake.FaultHandle { return c.fake.Fault(faults...) }

// Close stops the cluster and drops its data. Clients still connected see
// their connections closed. Safe to call more than once.
func (c *Cluster) Close() { c.fake.Close() }

// Clusters is a set of clusters started together.
type Clusters []*Cluster

// StartAll starts one cluster per name with the same options. On error the
// clusters already started are closed.
func StartAll(names []string, opts ...Option) (Clusters, error) {
	seen := make(map[string]bool, len(names))
	cs := make(Clusters, 0, len(names))
	for _, n := range names {
		if seen[n] {
			cs.Close()
			return nil, fmt.Errorf("embedded cluster name %q given twice: names must be unique", n)
		}
		seen[n] = true
		c, err := Start(n, opts...)
		if err != nil {
			cs.Close()
			return nil, err
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// Settings returns each cluster's settings, in start order.
func (cs Clusters) Settings() []cluster.Settings {
	out := make([]cluster.Settings, len(cs))
	for i, c := range cs {
		out[i] = c.Settings()
	}
	return out
}

// Close closes every cluster.
func (cs Clusters) Close() {
	for _, c := range cs {
		c.Close()
	}
}
