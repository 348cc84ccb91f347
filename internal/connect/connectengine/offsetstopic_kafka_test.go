package connectengine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// A dedicated MirrorMaker 2 with exactly-once source support writes its
// offsets topic in transactions: the reader takes committed records only
// (an aborted offset was never the progress), a tombstone removes an
// offset, other connectors' records are not this one's, and an aborted
// transaction at the end (never delivered to a read_committed reader) does
// not keep it waiting.
func TestReadOffsetsTopicTakesCommittedRecordsOnly(t *testing.T) {
	k := kafkatest.Shared(t, 0)
	s := k.Settings(cluster.Plaintext, "")
	topic := kafkatest.NewTopic(t, k, 1, nil)
	cfg, err := s.Config("offsets-writer")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Producer.Idempotent, cfg.Producer.RequiredAcks, cfg.Producer.Return.Successes = true, sarama.WaitForAll, true
	cfg.Producer.Transaction.ID, cfg.Net.MaxOpenRequests = "offsets-"+topic, 1
	p, err := sarama.NewSyncProducer(s.BootstrapServers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	key := func(connector string, part int) sarama.Encoder {
		return sarama.StringEncoder(fmt.Sprintf(`[%q,{"cluster":"A","partition":%d,"topic":"orders"}]`, connector, part))
	}
	offset := func(o int) sarama.Encoder { return sarama.StringEncoder(fmt.Sprintf(`{"offset":%d}`, o)) }
	for _, txn := range []struct {
		commit bool
		msgs   []*sarama.ProducerMessage
	}{
		{true, []*sarama.ProducerMessage{{Topic: topic, Key: key("MirrorSourceConnector", 0), Value: offset(10)},
			{Topic: topic, Key: key("MirrorSourceConnector", 1), Value: offset(5)}, {Topic: topic, Key: key("other", 0), Value: offset(7)}}},
		{false, []*sarama.ProducerMessage{{Topic: topic, Key: key("MirrorSourceConnector", 0), Value: offset(99)}}},
		{true, []*sarama.ProducerMessage{{Topic: topic, Key: key("MirrorSourceConnector", 1)}}}, // a tombstone
		{false, []*sarama.ProducerMessage{{Topic: topic, Key: key("MirrorSourceConnector", 0), Value: offset(98)}}},
	} {
		if err := p.BeginTxn(); err != nil {
			t.Fatal(err)
		}
		if err := p.SendMessages(txn.msgs); err != nil {
			t.Fatal(err)
		}
		end := p.CommitTxn
		if !txn.commit {
			end = p.AbortTxn
		}
		if err := end(); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	offs, err := ReadOffsetsTopic(ctx, s, topic, "MirrorSourceConnector")
	if err != nil {
		t.Fatal(err)
	}
	if len(offs) != 1 {
		t.Fatalf("offsets %v, want partition 0's only", offs)
	}
	pos, err := offs[0].MirrorSource()
	if err != nil || pos.Partition != 0 || pos.Offset != 10 {
		t.Fatalf("offset %+v (%v), want partition 0 at 10: committed records only", pos, err)
	}
}
