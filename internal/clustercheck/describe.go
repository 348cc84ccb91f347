package clustercheck

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
)

// ConfigValue is one topic config as the cluster applies it.
type ConfigValue struct {
	Value string
	// TopicLevel is true when the value is set on the topic itself rather
	// than inherited from a broker or Kafka default: only such values are
	// copied to a target topic kmirror creates (as MM2 does).
	TopicLevel bool
}

// Description is what Describe learnt about a cluster.
type Description struct {
	Brokers int
	Topics  []string // sorted
}

// describeTimeout bounds one Describe: a user waits for the answer.
const describeTimeout = 15 * time.Second

// Live asks live clusters, with short-lived sarama clients, what the
// service needs of them: Check, Describe and TopicConfigs.
type Live struct{}

// Check is the package-level Check, so that Live is all a caller needs.
func (Live) Check(ctx context.Context, s cluster.Settings) Result {
	return Check(ctx, s)
}

// Describe returns the cluster's broker count and topic names, or an error
// that says what to fix (see Explain).
func (Live) Describe(ctx context.Context, s cluster.Settings) (Description, error) {
	return withClient(ctx, s, func(client sarama.Client) (Description, error) {
		topics, err := client.Topics()
		if err != nil {
			return Description{}, err
		}
		sort.Strings(topics)
		return Description{Brokers: len(client.Brokers()), Topics: topics}, nil
	})
}

// TopicConfigs returns the effective values of the named configs (all when
// names is empty) of the given topics, keyed by topic then config name.
// Topics the cluster does not have are left out.
func (Live) TopicConfigs(ctx context.Context, s cluster.Settings, topics, names []string) (map[string]map[string]ConfigValue, error) {
	out := map[string]map[string]ConfigValue{}
	if len(topics) == 0 {
		return out, nil
	}
	return withClient(ctx, s, func(client sarama.Client) (map[string]map[string]ConfigValue, error) {
		admin, err := sarama.NewClusterAdminFromClient(client)
		if err != nil {
			return nil, err
		}
		// Closing the admin would close the client too; withClient does that.
		resources := make([]*sarama.ConfigResource, len(topics))
		for i, t := range topics {
			resources[i] = &sarama.ConfigResource{Type: sarama.TopicResource, Name: t, ConfigNames: names}
		}
		results, err := admin.DescribeConfigs(resources, sarama.DescribeConfigsOptions{})
		if err != nil {
			return nil, err
		}
		for _, r := range results {
			switch {
			case errors.Is(r.ErrorCode, sarama.ErrUnknownTopicOrPartition):
				continue // deleted meanwhile, or never there: not an error here
			case r.ErrorCode != sarama.ErrNoError:
				return nil, fmt.Errorf("describe configs of topic %s: %w", r.Name, r.ErrorCode)
			}
			m := make(map[string]ConfigValue, len(r.Configs))
			for _, e := range r.Configs {
				if !e.Sensitive {
					m[e.Name] = ConfigValue{Value: e.Value, TopicLevel: e.Source == sarama.SourceTopic}
				}
			}
			out[r.Name] = m
		}
		return out, nil
	})
}

// withClient runs fn with a short-lived client of the cluster, bounded by
// describeTimeout: a user waits for the answer. Errors come back in words
// a user can act on (Explain).
func withClient[T any](ctx context.Context, s cluster.Settings, fn func(sarama.Client) (T, error)) (T, error) {
	var zero T
	cfg, err := s.Config("kmirror-describe")
	if err != nil {
		return zero, err
	}
	cfg.Net.DialTimeout = 5 * time.Second
	cfg.Net.ReadTimeout = 10 * time.Second
	cfg.Net.WriteTimeout = 10 * time.Second
	cfg.Metadata.Retry.Max = 0
	ctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()

	type answer struct {
		v   T
		err error
	}
	// sarama takes no context; the answer is awaited up to ctx and a late
	// client is closed by the goroutine itself.
	ch := make(chan answer, 1)
	go func() {
		client, err := sarama.NewClient(s.BootstrapServers, cfg)
		if err != nil {
			ch <- answer{err: Explain(s, "", err)}
			return
		}
		defer client.Close()
		v, err := fn(client)
		if err != nil {
			err = Explain(s, "", err)
		}
		ch <- answer{v, err}
	}()
	select {
	case a := <-ch:
		return a.v, a.err
	case <-ctx.Done():
		return zero, fmt.Errorf("no answer from %v within %s: check the address and that the brokers are running", s.BootstrapServers, describeTimeout)
	}
}
