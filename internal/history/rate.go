package history

import "time"

// Reading is a records counter (records copied since the flow or task
// started) read at a time.
type Reading struct {
	At      time.Time
	Records int64
}

// RateWindow is how far back a current records/s looks: long enough to
// smooth the copy loop's batches, short enough that a stopped flow shows it
// soon.
const RateWindow = 15 * time.Second

// minRateSpan is the shortest time a rate is measured over: two reads
// closer than this say more about batching than about throughput.
const minRateSpan = time.Second

// RecordsPerSec is the one place records/s is computed, for the charts,
// the dashboard, the task page and the Smart Connect list alike. rs are
// reads of one counter, oldest first; the rate is measured at the newest,
// back to the newest read at least window older (so it spans the whole
// window when it can), else to the oldest. A counter that went down began
// again (a restart): only the reads after that count. ok is false when the
// two reads are less than a second apart (a single read included), so an
// unknown rate is never shown as 0 nor ever negative.
func RecordsPerSec(rs []Reading, window time.Duration) (perSec float64, over time.Duration, ok bool) {
	n := len(rs)
	if n == 0 {
		return 0, 0, false
	}
	last := rs[n-1]
	start := n - 1
	for start > 0 && rs[start-1].Records <= rs[start].Records {
		start--
		if last.At.Sub(rs[start].At) >= window {
			break
		}
	}
	first := rs[start]
	over = last.At.Sub(first.At)
	if over < minRateSpan {
		return 0, over, false
	}
	return float64(last.Records-first.Records) / over.Seconds(), over, true
}

// readings are a flow's points as counter reads.
func readings(pts []Point) []Reading {
	rs := make([]Reading, len(pts))
	for i, p := range pts {
		rs[i] = Reading{At: p.At, Records: p.Records}
	}
	return rs
}
