package demo

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/embedded"
	"github.com/kmirror/kmirror/internal/task"
)

// BackgroundRate is the records per second `kmirror serve --demo` keeps
// producing: enough to see throughput and lag move, little enough to run
// for hours.
const BackgroundRate = 200

// Background is the running part of `kmirror serve --demo`: the embedded
// "east" and "west" clusters with records trickling into east's "orders"
// topic. The demo task itself is a stored task like any other, created by
// the caller through the service (see Task), so the console and the API
// show it.
type Background struct {
	// Clusters are east and west, to register as instances.
	Clusters []cluster.Settings
	// Topic is the topic records trickle into.
	Topic string

	cs     embedded.Clusters
	cancel context.CancelFunc
	done   chan struct{}
}

// Task is the demo task to create once Clusters are registered.
func (b *Background) Task() task.Task { return Task(b.Topic) }

// StartBackground starts the embedded clusters, seeds east's "orders" topic
// and keeps producing to it until Close.
func StartBackground(ctx context.Context, log *slog.Logger) (*Background, error) {
	cs, err := embedded.StartAll([]string{"east", "west"})
	if err != nil {
		return nil, err
	}
	east, west := cs[0].Settings(), cs[1].Settings()
	const topic = "orders"
	// Seed the topic so the task has something to copy from the start.
	if _, err := e2e.Produce(ctx, east, topic, 6, 1000, 256); err != nil {
		cs.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	b := &Background{Clusters: []cluster.Settings{east, west}, Topic: topic, cs: cs, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		if err := trickle(ctx, east, topic, BackgroundRate); err != nil && ctx.Err() == nil {
			log.Warn("demo producer stopped", "error", err)
		}
	}()
	return b, nil
}

// Close stops the producer and the clusters. Stop the demo task first: its
// graceful stop commits progress to these clusters.
func (b *Background) Close() {
	b.cancel()
	<-b.done
	b.cs.Close()
}

// trickle produces rate records per second until ctx ends.
func trickle(ctx context.Context, s cluster.Settings, topic string, rate int) error {
	cfg, err := s.Config("kmirror-demo-trickle")
	if err != nil {
		return err
	}
	cfg.Producer.Return.Errors = false
	p, err := sarama.NewAsyncProducer(s.BootstrapServers, cfg)
	if err != nil {
		return fmt.Errorf("demo producer: %w", err)
	}
	defer p.Close()
	const ticks = 10
	tick := time.NewTicker(time.Second / ticks)
	defer tick.Stop()
	var n int64
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			for i := 0; i < rate/ticks; i++ {
				n++
				p.Input() <- &sarama.ProducerMessage{Topic: topic,
					Key:   sarama.StringEncoder(fmt.Sprintf("order-%d", n)),
					Value: sarama.StringEncoder(fmt.Sprintf(`{"order":%d,"at":%q}`, n, time.Now().Format(time.RFC3339Nano)))}
			}
		}
	}
}
