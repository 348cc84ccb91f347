package service

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/connectivity"
)

// Kafka is what the service asks of a live cluster: a description for the
// replication-factor rule and the topic preview, and the step-wise
// connectivity check. Tests may replace it; the default talks to Kafka with
// sarama.
type Kafka interface {
	// Describe returns the cluster's broker count and topic names, or an
	// error that says what to fix (see connectivity.Explain).
	Describe(ctx context.Context, s cluster.Settings) (Description, error)
	// Check runs connectivity.Check.
	Check(ctx context.Context, s cluster.Settings) connectivity.Result
}

// Description is what Describe learnt about a cluster.
type Description struct {
	Brokers int
	Topics  []string // sorted
}

// describeTimeout bounds one Describe: a user waits for the answer.
const describeTimeout = 15 * time.Second

type saramaKafka struct{}

func (saramaKafka) Check(ctx context.Context, s cluster.Settings) connectivity.Result {
	return connectivity.Check(ctx, s)
}

func (saramaKafka) Describe(ctx context.Context, s cluster.Settings) (Description, error) {
	cfg, err := s.Config("kmirror-describe")
	if err != nil {
		return Description{}, err
	}
	cfg.Net.DialTimeout = 5 * time.Second
	cfg.Net.ReadTimeout = 10 * time.Second
	cfg.Net.WriteTimeout = 10 * time.Second
	cfg.Metadata.Retry.Max = 0
	ctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()

	type answer struct {
		d   Description
		err error
	}
	// sarama takes no context; the answer is awaited up to ctx and a late
	// client is closed by the goroutine itself.
	ch := make(chan answer, 1)
	go func() {
		client, err := sarama.NewClient(s.BootstrapServers, cfg)
		if err != nil {
			ch <- answer{err: connectivity.Explain(s, "", err)}
			return
		}
		defer client.Close()
		topics, err := client.Topics()
		if err != nil {
			ch <- answer{err: connectivity.Explain(s, "", err)}
			return
		}
		sort.Strings(topics)
		ch <- answer{d: Description{Brokers: len(client.Brokers()), Topics: topics}}
	}()
	select {
	case a := <-ch:
		return a.d, a.err
	case <-ctx.Done():
		return Description{}, fmt.Errorf("no answer from %v within %s: check the address and that the brokers are running", s.BootstrapServers, describeTimeout)
	}
}
