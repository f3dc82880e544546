package webtest

import (
	"slices"
	"testing"
	"time"
)

// TurnTimes are the times of one turn's text chunks from its start.
type TurnTimes struct {
	First time.Duration // to the first text chunk
	Chunk time.Duration // per chunk after the first
	N     int           // text chunks
}

// Report puts a run's p50 and p99 times to the first chunk, and the p50
// time per chunk, into b's results.
func Report(b *testing.B, ts []TurnTimes) {
	if len(ts) == 0 {
		return
	}
	firsts := make([]time.Duration, len(ts))
	chunks := make([]time.Duration, len(ts))
	for i, t := range ts {
		firsts[i], chunks[i] = t.First, t.Chunk
	}
	slices.Sort(firsts)
	slices.Sort(chunks)
	pct := func(d []time.Duration, p float64) float64 { return float64(d[int(p*float64(len(d)-1))].Microseconds()) }
	b.ReportMetric(pct(firsts, 0.5), "ttfc-p50-µs")
	b.ReportMetric(pct(firsts, 0.99), "ttfc-p99-µs")
	b.ReportMetric(pct(chunks, 0.5), "chunk-p50-µs")
	b.ReportMetric(float64(ts[0].N), "chunks/turn")
}
