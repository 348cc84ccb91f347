package replicator

import (
	"errors"
	"maps"
	"testing"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// lastStableOffsets asks every partition at once: where a read_committed
// reader's records end, before an open transaction; an unknown topic says
// so.
func TestLastStableOffsetsOfManyPartitions(t *testing.T) {
	k := kafkatest.Shared(t, 0)
	s := k.Settings(cluster.Plaintext, "")
	topic := kafkatest.NewTopic(t, k, 3, nil)
	produceKeys(t, s, topic, 3, 0, 7) // 3, 2, 2 records
	if err := e2e.ProduceTransactions(s, topic); err != nil {
		t.Fatal(err) // partition 0: +44 offsets, every transaction ended
	}
	// An open transaction on partition 1: its records are past the LSO.
	p := transactionalProducer(t, s, "lso-"+topic)
	if err := p.BeginTxn(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 1, Value: sarama.StringEncoder("open")}); err != nil {
		t.Fatal(err)
	}
	client, _ := admin(t, s)
	got, err := lastStableOffsets(client, []tp{{topic, 0}, {topic, 1}, {topic, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[tp]int64{{topic, 0}: 3 + 44, {topic, 1}: 2, {topic, 2}: 2}; !maps.Equal(got, want) {
		t.Errorf("last stable offsets %v, want %v", got, want)
	}
	if _, err := lastStableOffsets(client, []tp{{topic, 0}, {"no-such-topic-" + topic, 0}}); !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		t.Errorf("an unknown topic: %v", err)
	}
	_ = p.AbortTxn()
}
