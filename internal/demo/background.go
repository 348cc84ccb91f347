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
	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/replicator"
)

// BackgroundRate is the records per second `kmirror serve --demo` keeps
// producing: enough to see throughput and lag move, little enough to run
// for hours.
const BackgroundRate = 200

// StartBackground starts the embedded "east" and "west" clusters, keeps
// producing to east's "orders" topic and replicates it to west with the demo
// task, until ctx ends. It returns the clusters to register as instances.
func StartBackground(ctx context.Context, log *slog.Logger) ([]cluster.Settings, error) {
	cs, err := embedded.StartAll([]string{"east", "west"})
	if err != nil {
		return nil, err
	}
	east, west := cs[0].Settings(), cs[1].Settings()
	// Seed the topic so the task has something to copy from the start.
	if _, err := e2e.Produce(ctx, east, "orders", 6, 1000, 256); err != nil {
		cs.Close()
		return nil, err
	}
	t := DemoTask("orders")
	eng := engine.New(replicator.Options{RefreshInterval: 5 * time.Second}, log)
	lookup := func(name string) (cluster.Settings, bool) {
		switch name {
		case "east":
			return east, true
		case "west":
			return west, true
		}
		return cluster.Settings{}, false
	}
	current, peer, err := t.Resolve(lookup)
	if err == nil {
		err = eng.Start(t, current, peer)
	}
	if err != nil {
		cs.Close()
		return nil, err
	}
	go func() {
		if err := trickle(ctx, east, "orders", BackgroundRate); err != nil && ctx.Err() == nil {
			log.Warn("demo producer stopped", "error", err)
		}
	}()
	go func() {
		<-ctx.Done()
		eng.Close()
		cs.Close()
	}()
	return []cluster.Settings{east, west}, nil
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
