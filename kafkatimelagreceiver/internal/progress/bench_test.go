package progress

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
)

// BenchmarkObserve100k follows 100,000 pairs (50 groups x 2,000 partitions
// of one topic, the scale benchmark's workload) scrape after scrape, every
// pair moving and with lag. It reports the time of one scrape's
// observations and summaries, and the heap the tracker holds per pair once
// every pair has its full set of marks (BENCHMARKS.md).
func BenchmarkObserve100k(b *testing.B) {
	const groups, partitions = 50, 2000
	lags := make([][]lag.PartitionLag, groups)
	for g := range lags {
		name := fmt.Sprintf("group-%02d", g)
		lags[g] = make([]lag.PartitionLag, partitions)
		for p := range lags[g] {
			lags[g][p] = lag.PartitionLag{Group: name, TopicPartition: kafka.TopicPartition{Topic: "topic", Partition: int32(p)},
				HasEnd: true, HasProduceRate: true, ProduceRate: 10}
		}
	}
	scrapeNo := 0
	var topics []Topic
	scrape := func(tr *Tracker) {
		scrapeNo++
		at := t0 + int64(scrapeNo)*int64(30*time.Second)
		tr.BeginScrape(time.Unix(0, at))
		for g := range lags {
			for p := range lags[g] {
				pl := &lags[g][p]
				pl.Committed = int64(scrapeNo * 300)
				pl.End = pl.Committed + 50
				pl.Lag = 50
			}
			parts := tr.ObserveGroup(lags[g][0].Group, lags[g], at)
			topics = Summarize(topics[:0], lags[g], parts)
		}
		tr.EndScrape()
	}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tr := NewTracker(5 * time.Minute)
	for range 20 { // ten minutes of 30 s scrapes: every pair has all its marks
		scrape(tr)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := float64(after.HeapAlloc-before.HeapAlloc) / (groups * partitions)

	b.ResetTimer()
	for b.Loop() {
		scrape(tr)
	}
	runtime.KeepAlive(tr)
	b.ReportMetric(held, "heap-B/pair")
}
