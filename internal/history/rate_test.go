package history

import (
	"testing"
	"time"
)

func TestRecordsPerSec(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(sec float64, records int64) Reading {
		return Reading{At: t0.Add(time.Duration(sec * float64(time.Second))), Records: records}
	}
	cases := []struct {
		name     string
		rs       []Reading
		window   time.Duration
		want     float64
		wantOver time.Duration
		wantOK   bool
	}{
		{"nothing read", nil, RateWindow, 0, 0, false},
		{"one read", []Reading{at(0, 100)}, RateWindow, 0, 0, false},
		{"two reads under a second apart", []Reading{at(0, 100), at(0.5, 200)}, RateWindow, 0, 500 * time.Millisecond, false},
		{"two reads", []Reading{at(0, 100), at(2, 300)}, RateWindow, 100, 2 * time.Second, true},
		{"within the window: from the oldest", []Reading{at(0, 0), at(5, 100), at(10, 400)}, RateWindow, 40, 10 * time.Second, true},
		{"beyond the window: from the newest read at its edge", []Reading{at(0, 0), at(5, 1000), at(20, 1300), at(25, 1400)}, RateWindow, 20, 20 * time.Second, true},
		{"stopped copying", []Reading{at(0, 0), at(5, 300), at(20, 300), at(25, 300)}, RateWindow, 0, 20 * time.Second, true},
		{"a restart: only the reads after it", []Reading{at(0, 500), at(5, 900), at(10, 20), at(12, 60)}, RateWindow, 20, 2 * time.Second, true},
		{"just restarted", []Reading{at(0, 500), at(5, 20)}, RateWindow, 0, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, over, ok := RecordsPerSec(c.rs, c.window)
			if got != c.want || over != c.wantOver || ok != c.wantOK {
				t.Errorf("RecordsPerSec = %v over %v ok %v, want %v over %v ok %v", got, over, ok, c.want, c.wantOver, c.wantOK)
			}
			if got < 0 {
				t.Errorf("negative rate %v", got)
			}
		})
	}
}
