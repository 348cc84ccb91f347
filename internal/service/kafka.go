package service

import (
	"context"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/clustercheck"
)

// Kafka is what the service asks of a live cluster: a description for the
// replication-factor rule and the topic preview, and the step-wise
// connectivity check. Tests may replace it; the default,
// clustercheck.Live, talks to Kafka with sarama.
type Kafka interface {
	// Describe returns the cluster's broker count and topic names, or an
	// error that says what to fix (see clustercheck.Explain).
	Describe(ctx context.Context, s cluster.Settings) (clustercheck.Description, error)
	// Check runs clustercheck.Check.
	Check(ctx context.Context, s cluster.Settings) clustercheck.Result
	// TopicConfigs returns the effective values of the named configs (all
	// when names is empty) of the given topics, keyed by topic then config
	// name. Topics the cluster does not have are left out; the dry run
	// uses it to compare max.message.bytes across a flow.
	TopicConfigs(ctx context.Context, s cluster.Settings, topics, names []string) (map[string]map[string]clustercheck.ConfigValue, error)
	// Transactions checks that the cluster takes exactly-once transactions
	// under transactional id id with the given timeout, or says what is
	// missing (clustercheck.Live.Transactions).
	Transactions(ctx context.Context, s cluster.Settings, id string, timeout time.Duration) error
}
