package e2e

import (
	"fmt"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
)

// ProduceTransactions writes four transactions of 10 records each to
// partition 0 of topic, keyed "<prefix>-<i>": "first" committed,
// "aborted" aborted, "second" committed, "aborted-tail" aborted. A copy
// that honours transactions holds first-0..9 then second-0..9 (20
// records); the source partition ends at offset 44 (each transaction ends
// in a marker).
func ProduceTransactions(s cluster.Settings, topic string) error {
	cfg, err := s.Config("kmirror-txn-producer")
	if err != nil {
		return err
	}
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Transaction.ID = "txn-" + topic
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Net.MaxOpenRequests = 1
	p, err := sarama.NewSyncProducer(s.BootstrapServers, cfg)
	if err != nil {
		return fmt.Errorf("transactional producer on %s: %w", s.Name, err)
	}
	defer p.Close()
	for _, b := range []struct {
		prefix string
		commit bool
	}{{"first", true}, {"aborted", false}, {"second", true}, {"aborted-tail", false}} {
		if err := p.BeginTxn(); err != nil {
			return err
		}
		msgs := make([]*sarama.ProducerMessage, 0, 10)
		for i := range 10 {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: 0, Key: sarama.StringEncoder(fmt.Sprintf("%s-%d", b.prefix, i))})
		}
		if err := p.SendMessages(msgs); err != nil {
			return err
		}
		end := p.CommitTxn
		if !b.commit {
			end = p.AbortTxn
		}
		if err := end(); err != nil {
			return err
		}
	}
	return nil
}
