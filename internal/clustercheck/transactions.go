package clustercheck

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
)

// InitTransactions asks the transaction coordinator of id for its producer
// id and epoch with the given transaction timeout (InitProducerId): what an
// exactly-once writer does first, fencing every earlier producer of id. It
// returns the coordinator's answer; errors are the broker's (see
// ExplainTransactions).
func InitTransactions(client sarama.Client, id string, timeout time.Duration) (pid int64, epoch int16, err error) {
	coord, err := client.TransactionCoordinator(id)
	if err != nil {
		return -1, -1, err
	}
	resp, err := coord.InitProducerID(InitProducerIDRequest(client.Config().Version, &id, timeout))
	if err != nil {
		_ = client.RefreshTransactionCoordinator(id)
		return -1, -1, err
	}
	if !errors.Is(resp.Err, sarama.ErrNoError) {
		if errors.Is(resp.Err, sarama.ErrNotCoordinatorForConsumer) || errors.Is(resp.Err, sarama.ErrConsumerCoordinatorNotAvailable) {
			_ = client.RefreshTransactionCoordinator(id)
		}
		return -1, -1, resp.Err
	}
	return resp.ProducerID, resp.ProducerEpoch, nil
}

// InitProducerIDRequest asks for a new producer id: transactional under id
// with the given timeout, or idempotent only when id is nil; at the version
// sarama's own producer uses for v (4 adds PRODUCER_FENCED).
func InitProducerIDRequest(v sarama.KafkaVersion, id *string, timeout time.Duration) *sarama.InitProducerIDRequest {
	req := &sarama.InitProducerIDRequest{TransactionalID: id, TransactionTimeout: timeout, ProducerID: -1, ProducerEpoch: -1}
	switch {
	case v.IsAtLeast(sarama.V2_7_0_0):
		req.Version = 4
	case v.IsAtLeast(sarama.V2_5_0_0):
		req.Version = 3
	case v.IsAtLeast(sarama.V2_0_0_0):
		req.Version = 1
	}
	return req
}

// ExplainTransactions words an InitTransactions error: what the cluster or
// the user lacks for exactly-once transactions under id, and what to do.
func ExplainTransactions(err error, id string, timeout time.Duration) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sarama.ErrInvalidTransactionTimeout):
		return fmt.Errorf("it refuses a transaction timeout of %s (%w): raise transaction.max.timeout.ms on its brokers to at least that, or lower the task's transaction interval", timeout, err)
	case errors.Is(err, sarama.ErrTransactionalIDAuthorizationFailed):
		return fmt.Errorf("%w: grant this task's user WRITE and DESCRIBE on transactional id %s (a prefixed ACL on the task's prefix covers every flow)", err, id)
	case errors.Is(err, sarama.ErrClusterAuthorizationFailed):
		return fmt.Errorf("%w: grant this task's user IDEMPOTENT_WRITE on the cluster", err)
	}
	return fmt.Errorf("transactional id %s: %w", id, err)
}

// transactionsWait bounds Transactions' asking again while the coordinator
// loads (a cluster's first transaction creates its state topic).
const transactionsWait = 10 * time.Second

// Transactions checks that the cluster takes exactly-once transactions
// under id (a probe id of the task's, never a running flow's: the probe
// fences whoever uses id) with the given timeout, and says what is missing
// when it does not.
func (Live) Transactions(ctx context.Context, s cluster.Settings, id string, timeout time.Duration) error {
	_, err := withClient(ctx, s, func(client sarama.Client) (struct{}, error) {
		deadline := time.Now().Add(transactionsWait)
		for {
			_, _, err := InitTransactions(client, id, timeout)
			busy := errors.Is(err, sarama.ErrOffsetsLoadInProgress) || errors.Is(err, sarama.ErrConsumerCoordinatorNotAvailable) ||
				errors.Is(err, sarama.ErrNotCoordinatorForConsumer) || errors.Is(err, sarama.ErrConcurrentTransactions)
			if !busy || time.Now().After(deadline) || ctx.Err() != nil {
				return struct{}{}, ExplainTransactions(err, id, timeout)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	return err
}
