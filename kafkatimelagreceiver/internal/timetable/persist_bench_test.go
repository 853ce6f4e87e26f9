package timetable

import (
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// BenchmarkEncodeStateLockHold saves a store of 100,000 tables of 100
// points each while another goroutine takes the store's lock as the
// sampler and a scrape do, and reports the longest that goroutine waited
// for it (the lock hold a save imposes, plus scheduling on a busy host) and
// how long the save took:
//
//	go test -run '^$' -bench EncodeStateLockHold -benchtime 5x ./kafkatimelagreceiver/internal/timetable/
func BenchmarkEncodeStateLockHold(b *testing.B) {
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
	refs := store.Refs(tracked[:1])
	b.ResetTimer()
	var worstWait, worstSave time.Duration
	for range b.N {
		var (
			stop    atomic.Bool
			wg      sync.WaitGroup
			longest time.Duration
		)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				start := time.Now()
				store.Idle(refs[0], 0)
				longest = max(longest, time.Since(start))
			}
		}()
		start := time.Now()
		state := store.EncodeState()
		saved := time.Since(start)
		stop.Store(true)
		wg.Wait()
		if len(state) == 0 {
			b.Fatal("nothing saved")
		}
		worstWait, worstSave = max(worstWait, longest), max(worstSave, saved)
	}
	b.ReportMetric(float64(worstWait.Microseconds())/1000, "max-lock-wait-ms")
	b.ReportMetric(float64(worstSave.Microseconds())/1000, "max-save-ms")
}
