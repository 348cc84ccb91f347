package replicator

import (
	"fmt"
	"slices"
	"testing"

	"github.com/kmirror/kmirror/internal/policy"
)

// Target topics are asked for in requests the controller takes: a KRaft
// controller refuses a CreateTopics that would write over 10,000 metadata
// records as a whole (measured: 500 topics of 20 partitions, one request,
// every topic refused, round after round).
func TestCreateBatchesStayUnderTheControllersBound(t *testing.T) {
	topics := func(n int, partitions int32, configs int) []newTopic {
		var out []newTopic
		for i := range n {
			c := map[string]string{}
			for j := range configs {
				c[fmt.Sprintf("k%d", j)] = "v"
			}
			out = append(out, newTopic{pair: policy.Pair{Source: fmt.Sprintf("t%d", i), Target: fmt.Sprintf("A.t%d", i)}, partitions: partitions, configs: c})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		todo    []newTopic
		batches []int // topics per request
	}{
		{"none", nil, nil},
		{"one small topic", topics(1, 6, 2), []int{1}},
		{"the bench's 10,000 partitions", topics(500, 20, 0), []int{238, 238, 24}},
		{"configs count", topics(3, 2000, 400), []int{2, 1}},
		{"a topic over the bound goes alone", append(topics(1, 3, 0), topics(2, 6000, 0)...), []int{1, 1, 1}},
		{"exactly at the bound", topics(2, 2499, 0), []int{2}},
		{"one record over", topics(2, 2500, 0), []int{1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			var flat []newTopic
			for _, b := range createBatches(tc.todo) {
				got = append(got, len(b))
				flat = append(flat, b...)
				records := 0
				for _, t := range b {
					records += 1 + int(t.partitions) + len(t.configs)
				}
				if records > createRecords && len(b) > 1 {
					t.Errorf("a request of %d topics makes %d records, over %d", len(b), records, createRecords)
				}
			}
			if !slices.Equal(got, tc.batches) {
				t.Errorf("topics per request %v, want %v", got, tc.batches)
			}
			if len(flat) != len(tc.todo) {
				t.Fatalf("%d topics asked for, of %d", len(flat), len(tc.todo))
			}
			for i := range flat {
				if flat[i].pair != tc.todo[i].pair {
					t.Fatalf("topic %d is %v, want %v (each once, in order)", i, flat[i].pair, tc.todo[i].pair)
				}
			}
		})
	}
}
