//go:build !unit

package timetable

import (
	"math/rand"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// busyStore returns a store of 100,000 tables of 100 bursty points each and
// its partitions, sorted.
func busyStore(b *testing.B) (*Store, []kafka.TopicPartition) {
	b.Helper()
	const tables, points = 100_000, 100
	store := NewStore(512, 0, nil)
	wanted := make(map[kafka.TopicPartition]struct{}, tables)
	for p := range tables {
		wanted[kafka.TopicPartition{Topic: "busy", Partition: int32(p)}] = struct{}{}
	}
	base := time.Unix(1_700_000_000, 0)
	tracked, _ := store.Track(wanted, base, 0)
	rng := rand.New(rand.NewSource(1))
	offsets := make(map[kafka.TopicPartition]int64, tables)
	for i := range points {
		for _, tp := range tracked {
			// Bursty: no point is on the line between its neighbours.
			offsets[tp] += 1 + rng.Int63n(5000)
		}
		at := base.Add(time.Duration(i) * 10 * time.Second)
		store.Record(kafka.OffsetRead{Offsets: offsets, Sent: at, Received: at})
	}
	return store, tracked
}

// BenchmarkEncodeStateChunk is the work EncodeState does per hold of the
// store's lock: encoding encodeChunk tables of 100 points. Its time per op
// is how long a save keeps the sampler or a scrape waiting at most, on an
// unloaded host:
//
//	cd kafkatimelagreceiver && go test -run '^$' -bench EncodeStateChunk ./internal/timetable/
func BenchmarkEncodeStateChunk(b *testing.B) {
	store, tracked := busyStore(b)
	var chunk, body []byte
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		from := i * encodeChunk % (len(tracked) - encodeChunk)
		chunk, body, _ = store.encodeTables(chunk[:0], body, tracked[from:from+encodeChunk])
	}
}

// BenchmarkEncodeStateLockHold saves a store of 100,000 tables of 100
// points each while another goroutine takes the store's lock as the
// sampler and a scrape do, and reports the longest that goroutine waited
// for it during a save (the lock hold a save imposes, plus scheduling on a
// busy host), the longest it waited while nothing was saved, and how long
// the save took:
//
//	cd kafkatimelagreceiver && go test -run '^$' -bench EncodeStateLockHold -benchtime 5x ./internal/timetable/
func BenchmarkEncodeStateLockHold(b *testing.B) {
	store, tracked := busyStore(b)
	refs := store.Refs(tracked[:1])
	// waitsWhile takes the lock in a loop while work runs, and returns the
	// waits over 0.1 ms, sorted: a save's chunks, or the host descheduling
	// the waiter (the baseline, with nothing holding the lock, shows how
	// much of that a loaded host adds).
	waitsWhile := func(work func()) []time.Duration {
		var (
			stop  atomic.Bool
			wg    sync.WaitGroup
			waits []time.Duration
		)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				start := time.Now()
				store.Idle(refs[0], 0, 0)
				if wait := time.Since(start); wait > 100*time.Microsecond {
					waits = append(waits, wait)
				}
			}
		}()
		work()
		stop.Store(true)
		wg.Wait()
		slices.Sort(waits)
		return waits
	}
	percentile := func(waits []time.Duration, q float64) time.Duration {
		if len(waits) == 0 {
			return 0
		}
		return waits[int(q*float64(len(waits)-1))]
	}
	b.ResetTimer()
	var save, saveP90, saveMax, baseMax time.Duration
	for range b.N {
		start := time.Now()
		var state []byte
		waits := waitsWhile(func() { state = store.EncodeState() })
		saved := time.Since(start)
		if len(state) == 0 {
			b.Fatal("nothing saved")
		}
		baseline := waitsWhile(func() { time.Sleep(saved) })
		save, saveP90 = max(save, saved), max(saveP90, percentile(waits, 0.9))
		saveMax, baseMax = max(saveMax, percentile(waits, 1)), max(baseMax, percentile(baseline, 1))
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(save), "save-ms")
	b.ReportMetric(ms(saveP90), "p90-wait-ms")
	b.ReportMetric(ms(saveMax), "max-wait-ms")
	b.ReportMetric(ms(baseMax), "max-wait-no-save-ms")
}
