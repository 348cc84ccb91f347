package connectengine

import "testing"

// The settled-tail look runs once a partition stops moving, once per
// position: a transactional partition at rest is not fetched every sample.
func TestSettledEndLooksOncePerPosition(t *testing.T) {
	p := &progress{tails: map[partitionKey]tail{}}
	key := partitionKey{"t", 0}
	looks := 0
	look := func(end int64, ok bool) func() (int64, bool) {
		return func() (int64, bool) { looks++; return end, ok }
	}
	for i, c := range []struct {
		next, end  int64
		answer     int64
		answerOK   bool
		want       int64
		wantOK     bool
		wantLooked int
	}{
		{next: 10, end: 11, answer: 11, answerOK: true, want: notLooked, wantOK: false, wantLooked: 0}, // first seen: moving?
		{next: 10, end: 11, answer: 11, answerOK: true, want: 11, wantOK: true, wantLooked: 1},         // at rest: looked
		{next: 10, end: 11, answer: 99, answerOK: true, want: 11, wantOK: true, wantLooked: 1},         // same position: kept
		{next: 10, end: 13, answer: unsettled, want: unsettled, wantLooked: 2},                         // new records: looked again
		{next: 10, end: 13, answer: 13, answerOK: true, want: unsettled, wantLooked: 2},                // a record still to copy: kept
		{next: 12, end: 13, answer: 13, answerOK: true, want: notLooked, wantLooked: 2},                // moved: not looked
	} {
		got, ok := p.settledEnd(key, c.next, c.end, look(c.answer, c.answerOK))
		if got != c.want || ok != c.wantOK || looks != c.wantLooked {
			t.Fatalf("step %d: settled %d (%v) after %d looks, want %d (%v) after %d", i, got, ok, looks, c.want, c.wantOK, c.wantLooked)
		}
	}
}
