package e2e

import (
	"slices"
	"testing"
)

func TestOutOfOrderCountsFewestMoves(t *testing.T) {
	for _, tc := range []struct {
		seq   []int
		moves int
	}{
		{nil, 0},
		{[]int{0, 1, 2, 3}, 0},
		{[]int{0, 2, 1, 3}, 1},       // a swap is one move
		{[]int{3, 0, 1, 2}, 1},       // one record early, not three late
		{[]int{1, 2, 3, 0}, 1},       // one record late
		{[]int{2, 1, 0}, 2},          // reversed: all but one move
		{[]int{0, 5, 6, 1, 2, 3}, 2}, // the shorter run moves
	} {
		got := outOfOrder(tc.seq)
		if len(got) != tc.moves {
			t.Errorf("outOfOrder(%v) = %v, want %d positions", tc.seq, got, tc.moves)
			continue
		}
		// What stays must be in order, or the positions named are wrong.
		var rest []int
		for i, v := range tc.seq {
			if !slices.Contains(got, i) {
				rest = append(rest, v)
			}
		}
		if !slices.IsSorted(rest) {
			t.Errorf("outOfOrder(%v) = %v leaves %v unordered", tc.seq, got, rest)
		}
	}
}

func TestCheckValue(t *testing.T) {
	good := recordValue(2, 7, 100)
	if len(good) != 100 {
		t.Fatalf("value has %d bytes, want 100", len(good))
	}
	if err := CheckValue([]byte("2-7"), good); err != nil {
		t.Fatal(err)
	}
	if small := recordValue(0, 0, 1); CheckValue([]byte("0-0"), small) != nil {
		t.Fatalf("a value smaller than its framing must still grow to a valid one, got %q", small)
	}
	bad := append([]byte(nil), good...)
	bad[50] ^= 1
	for _, tc := range []struct {
		name       string
		key, value []byte
	}{
		{"flipped bit", []byte("2-7"), bad},
		{"another record's value", []byte("2-8"), good},
		{"null for a payload", []byte("2-7"), nil},
		{"payload for a tombstone", []byte("2-9"), good},
		{"not a demo key", []byte("x"), good},
		{"truncated", []byte("2-7"), good[:60]},
	} {
		if err := CheckValue(tc.key, tc.value); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	if err := CheckValue([]byte("2-9"), nil); err != nil {
		t.Errorf("tombstone rejected: %v", err)
	}
}
