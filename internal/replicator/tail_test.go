package replicator

import (
	"testing"

	"github.com/IBM/sarama"
)

// Batches as a read_committed fetch returns them.
func dataBatch(first int64, n int, pid int64, txn bool) *sarama.Records {
	return &sarama.Records{RecordBatch: &sarama.RecordBatch{FirstOffset: first, LastOffsetDelta: int32(n - 1),
		ProducerID: pid, IsTransactional: txn, Records: make([]*sarama.Record, n)}}
}

func marker(off, pid int64, commit bool) *sarama.Records {
	typ := byte(0)
	if commit {
		typ = 1
	}
	return &sarama.Records{RecordBatch: &sarama.RecordBatch{FirstOffset: off, ProducerID: pid, IsTransactional: true, Control: true,
		Records: []*sarama.Record{{Key: []byte{0, 0, 0, typ}}}}}
}

func TestControlOnlyEnd(t *testing.T) {
	cases := []struct {
		name    string
		from    int64
		set     []*sarama.Records
		aborted []*sarama.AbortedTransaction
		want    int64
		ok      bool
	}{
		{"commit marker after the last record", 10, []*sarama.Records{marker(10, 7, true)}, nil, 11, true},
		{"a batch before from is passed over", 10, []*sarama.Records{dataBatch(0, 10, 7, true), marker(10, 7, true)}, nil, 11, true},
		{"aborted records and their marker", 20, []*sarama.Records{dataBatch(20, 10, 7, true), marker(30, 7, false)},
			[]*sarama.AbortedTransaction{{ProducerID: 7, FirstOffset: 20}}, 31, true},
		{"committed data after a marker is delivered", 10, []*sarama.Records{marker(10, 7, true), dataBatch(11, 5, 7, true)}, nil, 0, false},
		{"plain data", 10, []*sarama.Records{dataBatch(10, 3, -1, false)}, nil, 0, false},
		{"the same producer commits after its abort", 20, []*sarama.Records{dataBatch(20, 5, 7, true), marker(25, 7, false), dataBatch(26, 5, 7, true)},
			[]*sarama.AbortedTransaction{{ProducerID: 7, FirstOffset: 20}}, 0, false},
		{"another producer's transaction is not aborted", 20, []*sarama.Records{dataBatch(20, 5, 8, true)},
			[]*sarama.AbortedTransaction{{ProducerID: 7, FirstOffset: 20}}, 0, false},
		{"a batch the data partly covers stops at its start", 10, []*sarama.Records{marker(10, 7, true),
			{RecordBatch: &sarama.RecordBatch{FirstOffset: 11, PartialTrailingRecord: true}}}, nil, 11, true},
		{"nothing returned", 10, nil, nil, 10, false},
		{"a legacy message set", 10, []*sarama.Records{{MsgSet: &sarama.MessageSet{}}}, nil, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			blk := &sarama.FetchResponseBlock{RecordsSet: c.set, AbortedTransactions: c.aborted}
			got, ok, err := controlOnlyEnd(blk, c.from)
			if err != nil {
				t.Fatal(err)
			}
			if ok != c.ok || (ok && got != c.want) {
				t.Fatalf("controlOnlyEnd from %d = %d, %v; want %d, %v", c.from, got, ok, c.want, c.ok)
			}
		})
	}
}
