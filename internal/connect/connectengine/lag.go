package connectengine

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/connect/connectplan"
	"github.com/kmirror/kmirror/internal/switchover"
)

// lagSampler samples the copy progress of every task deployed on one
// Connect cluster, in rounds of the poll interval: each round reads the
// offsets of one copy connector in connectorsPerRound (at least one), in
// turn, and the ends of their partitions with one ListOffsets per source
// broker, through one client per source cluster kept for the sampler's
// life. The console, the API and metrics all read what it sampled; a
// switchover samples its flow at once (positions). Apart from the status
// poll, so a slow source never delays the state of the cluster's tasks.
type lagSampler struct {
	log    *slog.Logger
	config func() connect.Config // the Connect cluster's, as registered now
	copies func() []copyOf       // every copy connector deployed there
	quit   chan struct{}
	done   chan struct{}

	mu      sync.Mutex
	sources map[string]sarama.Client // by source settings (sourceKey)
	next    int                      // the round's first connector, in turn
}

// copyOf is one copy connector of a deployed task.
type copyOf struct {
	dep *deployment
	c   connectplan.Connector
}

func newLagSampler(config func() connect.Config, copies func() []copyOf, every time.Duration, log *slog.Logger) *lagSampler {
	l := &lagSampler{log: log, config: config, copies: copies, quit: make(chan struct{}), done: make(chan struct{}),
		sources: map[string]sarama.Client{}}
	go l.run(every)
	return l
}

func (l *lagSampler) run(every time.Duration) {
	defer close(l.done)
	defer l.close()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		l.round()
		select {
		case <-l.quit:
			return
		case <-tick.C:
		}
	}
}

func (l *lagSampler) stop() {
	close(l.quit)
	<-l.done
}

func (l *lagSampler) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.sources {
		_ = c.Close()
	}
	l.sources = map[string]sarama.Client{}
}

// round samples the next connectors in turn.
func (l *lagSampler) round() {
	all := l.copies()
	if len(all) == 0 {
		return
	}
	n := max(1, len(all)/connectorsPerRound)
	l.mu.Lock()
	first := l.next % len(all)
	l.next = (first + n) % len(all)
	l.mu.Unlock()
	for i := range min(n, len(all)) {
		it := all[(first+i)%len(all)]
		if err := l.sample(it); err != nil {
			l.log.Debug("connector offsets not read", "connector", it.c.Name, "error", err)
		}
	}
}

// sample reads one copy connector's offsets and its partitions' ends now.
func (l *lagSampler) sample(it copyOf) error {
	rest, err := l.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), sampleBudget)
	defer cancel()
	offs, err := rest.Offsets(ctx, it.c.Name)
	if err != nil {
		return err
	}
	it.dep.progress.sample(offs, it.c, l.source(it.c.Copy.Source))
	return nil
}

// positions samples the copy connector of flow now, then gives the flow's
// positions: a switchover waits on them, and a turn may be a minute away.
func (l *lagSampler) positions(dep *deployment, flow string) ([]switchover.Position, error) {
	for _, c := range dep.connectors {
		if c.Copy != nil && c.Flow == flow {
			if err := l.sample(copyOf{dep, c}); err != nil {
				dep.progress.log.Debug("connector offsets not read", "connector", c.Name, "error", err)
			}
		}
	}
	return dep.progress.positions(flow)
}

// client is the sampler's REST client for the cluster's settings as
// registered now (connect.Shared). Each request to one URL is bounded well
// inside a sample's budget, and the client keeps the URL that answered
// last, so a hung worker costs one try and the next URL answers in the same
// sample.
func (l *lagSampler) client() (*connect.Client, error) {
	cfg := l.config()
	if cfg.Timeout <= 0 || cfg.Timeout > sampleRequestTimeout {
		cfg.Timeout = sampleRequestTimeout
	}
	return connect.Shared(cfg)
}

// source is the sampler's client of a source cluster, nil when it cannot
// be reached (tried again next time): Connect's offsets still say where the
// copy stands (an emergency switchover needs no more).
func (l *lagSampler) source(s cluster.Settings) sarama.Client {
	key := sourceKey(s)
	l.mu.Lock()
	c, ok := l.sources[key]
	l.mu.Unlock()
	if ok && !c.Closed() {
		return c
	}
	cfg, err := s.Config("kmirror-connect-lag")
	if err == nil {
		c, err = sarama.NewClient(s.BootstrapServers, cfg)
	}
	if err != nil {
		l.log.Debug("source not reached for lag", "cluster", s.Name, "error", err)
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.sources[key]; ok && !old.Closed() {
		_ = c.Close() // another sample made one meanwhile
		return old
	}
	l.sources[key] = c
	return c
}

// sourceKey names a source cluster's settings, secrets included but only
// hashed: tasks on the same cluster with the same settings share a client.
func sourceKey(s cluster.Settings) string {
	b, _ := json.Marshal(s)
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// copiesOn are the copy connectors of the tasks deployed on a Connect
// cluster, by name.
func (e *Engine) copiesOn(clusterName string) []copyOf {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []copyOf
	for _, dep := range e.tasks {
		if dep.cluster != clusterName {
			continue
		}
		for _, c := range dep.connectors {
			// A held copy's source gains the way back's records, which it
			// skips: no lag of its own.
			if c.Copy != nil && !c.Held {
				out = append(out, copyOf{dep, c})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].c.Name < out[j].c.Name })
	return out
}
