package replicator

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/mm2"
)

// heartbeater writes the flow's MM2 heartbeats to the heartbeats topic on
// its target, as MM2's MirrorHeartbeatConnector does: key source and target
// alias, value version 0 and the time in milliseconds, one record every
// interval on partition 0. Replicated onward as "<alias>.heartbeats"
// (policy.Selected), they are how MM2's MirrorClient finds a cluster's
// upstream clusters and replication hops.
//
// A heartbeat is a signal, not data: a failed write is logged once and
// retried at the next beat, never fails the flow, and shows as the flow's
// degraded reason only once heartbeats failed for DegradedAfter.
//
// It has its own client, connected at the first beat (a target away is a
// failed beat like any other), so a beat still waiting on the target when
// the flow stops holds up neither the stop nor the flow's own clients.
type heartbeater struct {
	flow   Flow
	state  *flowState
	log    *slog.Logger
	client sarama.Client // the target's, nil until connected
	admin  sarama.ClusterAdmin
	prod   sarama.SyncProducer
	ready  bool // the topic exists: checked at the first beat and after a failure
	now    func() time.Time
}

// heartbeatStopWait bounds how long a stopping flow waits for a beat on its
// way; the beat ends by itself within the client's timeouts.
const heartbeatStopWait = 2 * time.Second

// startHeartbeats runs a heartbeater until the returned stop is called.
func startHeartbeats(ctx context.Context, h *heartbeater, every time.Duration) (stop func()) {
	hctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); h.run(hctx, every) }()
	return func() {
		cancel()
		select {
		case <-done:
		case <-time.After(heartbeatStopWait):
			h.log.Warn("a heartbeat is still on its way at the stop; it ends by itself", "waited", heartbeatStopWait)
		}
	}
}

func (h *heartbeater) run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	defer h.close()
	for {
		h.report(h.beat())
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// beat writes one heartbeat, creating the topic first when it may be missing.
func (h *heartbeater) beat() error {
	if h.client == nil {
		id := "kmirror-" + h.flow.Task + "-" + h.flow.Name() + "-heartbeats"
		client, admin, err := adminClient(h.flow.Target.Settings, id)
		if err != nil {
			return fmt.Errorf("target %s: %w", h.flow.Target.Alias, err)
		}
		h.client, h.admin = client, admin
	}
	if !h.ready {
		if _, err := ensureInternalTopic(h.client, h.admin, h.flow.HeartbeatsTopic, h.flow.ReplicationFactor, nil); err != nil {
			return err
		}
		h.ready = true
	}
	if h.prod == nil {
		p, err := sarama.NewSyncProducerFromClient(h.client)
		if err != nil {
			return fmt.Errorf("heartbeats producer: %w", err)
		}
		h.prod = p
	}
	now := h.now()
	hb := mm2.Heartbeat{SourceAlias: h.flow.Source.Alias, TargetAlias: h.flow.Target.Alias, Timestamp: now.UnixMilli()}
	_, _, err := h.prod.SendMessage(&sarama.ProducerMessage{Topic: h.flow.HeartbeatsTopic, Partition: 0,
		Key: sarama.ByteEncoder(hb.Key()), Value: sarama.ByteEncoder(hb.Value()), Timestamp: time.UnixMilli(hb.Timestamp)})
	if err != nil {
		h.ready = false // deleted meanwhile? created again at the next beat
		return fmt.Errorf("write heartbeat to %s: %w", h.flow.HeartbeatsTopic, err)
	}
	return nil
}

func (h *heartbeater) close() {
	if h.prod != nil {
		h.prod.Close()
	}
	if h.admin != nil {
		h.admin.Close() // closes the client too
	}
}

// report logs the first failure of a run of them and the recovery, and
// keeps the flow's heartbeat health for its status.
func (h *heartbeater) report(err error) {
	failing := h.state.heartbeatFailing()
	switch {
	case err != nil && !failing:
		h.log.Warn("heartbeat not written; copying goes on, will retry", "topic", h.flow.HeartbeatsTopic, "error", err)
	case err == nil && failing:
		h.log.Info("heartbeats written again", "topic", h.flow.HeartbeatsTopic)
	}
	h.state.heartbeat(err, h.now())
}
