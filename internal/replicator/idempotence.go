package replicator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/clustercheck"
)

// producerIdentity is a worker's idempotent-producer id on the target. With
// it every batch carries the partition's sequence number, and the broker
// drops a retried batch it already wrote — so an answer lost on the way back
// (a connection cut, a broker restart) no longer means a record written
// twice. sarama's own idempotent producer cannot be used for this: it
// reorders a partition's batches when a broker comes back (its retry finds
// no leader in cached metadata, fails the batch and sends the later ones); with one request in flight per partition the sequences are simple.
//
// Partitions share the identity and each keeps its own sequence. When the
// broker no longer knows a partition's sequence (producer state expired,
// batches lost in an unclean leader change), that partition takes a fresh
// identity and starts again at 0; the batch then written may be a duplicate.
type producerIdentity struct {
	mu    sync.Mutex
	id    int64 // -1: the target does not allow idempotent writes, plain at-least-once
	epoch int16
	gen   int // counts renewals, so concurrent partitions renew once
}

// renew fetches a new identity unless one newer than gen was fetched
// already. A target that refuses idempotence for lack of rights leaves the
// worker at plain at-least-once writes, with a warning instead of an error.
func (p *producerIdentity) renew(dst sarama.Client, gen int) (warning string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gen != gen {
		return "", nil
	}
	id, epoch, err := initProducerID(dst)
	if errors.Is(err, sarama.ErrClusterAuthorizationFailed) || errors.Is(err, sarama.ErrTransactionalIDAuthorizationFailed) {
		id, epoch = -1, -1
		warning = fmt.Sprintf("idempotent writes are not authorized on the target (%v): a retried produce request may write records twice; grant IDEMPOTENT_WRITE on the cluster or WRITE on the topics", err)
	} else if err != nil {
		return "", fmt.Errorf("get an idempotent producer id from the target: %w", err)
	}
	p.id, p.epoch = id, epoch
	p.gen++
	return warning, nil
}

// first fetches a worker's first identity. A transaction coordinator that
// cannot answer yet (a fresh target creates and loads its state topic on
// the first request) is asked again (whileCoordinatorBusy) instead of
// failing the worker into its backoff (2 s lost on each fresh bench cluster).
func (p *producerIdentity) first(ctx context.Context, dst sarama.Client) (warning string, err error) {
	err = whileCoordinatorBusy(ctx, 100*time.Millisecond, func() error {
		warning, err = p.renew(dst, 0)
		return err
	})
	return warning, err
}

// coordinatorWait bounds asking a coordinator again while it is busy.
const coordinatorWait = 30 * time.Second

// coordinatorBusy says whether err is a coordinator's "not now": loading
// its state, not elected yet, or moved; asking again shortly succeeds.
func coordinatorBusy(err error) bool {
	return errors.Is(err, sarama.ErrOffsetsLoadInProgress) || errors.Is(err, sarama.ErrConsumerCoordinatorNotAvailable) ||
		errors.Is(err, sarama.ErrNotCoordinatorForConsumer)
}

// whileCoordinatorBusy calls f again, every pause, while it fails with a
// coordinator's "not now", for up to coordinatorWait and while ctx lasts;
// it returns f's last error.
func whileCoordinatorBusy(ctx context.Context, pause time.Duration, f func() error) error {
	deadline := time.Now().Add(coordinatorWait)
	for {
		err := f()
		if err == nil || !coordinatorBusy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
	}
}

func (p *producerIdentity) current() (id int64, epoch int16, gen int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.id, p.epoch, p.gen
}

func initProducerID(dst sarama.Client) (int64, int16, error) {
	b := dst.LeastLoadedBroker()
	if b == nil {
		return -1, -1, sarama.ErrOutOfBrokers
	}
	resp, err := b.InitProducerID(clustercheck.InitProducerIDRequest(dst.Config().Version, nil, 0)) // sarama closes a broken connection itself
	if err != nil {
		return -1, -1, err
	}
	if !errors.Is(resp.Err, sarama.ErrNoError) {
		return -1, -1, resp.Err
	}
	return resp.ProducerID, resp.ProducerEpoch, nil
}

// sequenceLost says whether the broker no longer accepts the partition's
// sequence under its producer id, so a fresh identity is needed.
func sequenceLost(err error) bool {
	return errors.Is(err, sarama.ErrOutOfOrderSequenceNumber) || errors.Is(err, sarama.ErrUnknownProducerID) ||
		errors.Is(err, sarama.ErrInvalidProducerEpoch) || errors.Is(err, sarama.ErrDuplicateSequenceNumber)
}

// nextSequence adds n records to a sequence, wrapping at MaxInt32 as the
// broker does.
func nextSequence(seq int32, n int) int32 {
	return int32((int64(seq) + int64(n)) % (math.MaxInt32 + 1))
}
