package timetable

import (
	"math"
	"math/rand"
	"runtime"
	"testing"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// partitionShape is how fast a partition is written, second by second.
type partitionShape struct {
	name string
	// rate returns the records appended in second s of the day.
	rate func(rng *rand.Rand, s int) float64
}

// The three shapes of busy partition the table sizing is measured on, each
// with per-second noise of +-20%.
var partitionShapes = []partitionShape{
	// A constant rate: a partition of a producer that never sleeps.
	{"steady", func(rng *rand.Rand, s int) float64 { return 200 * (0.8 + 0.4*rng.Float64()) }},
	// Quiet at night, busy in the afternoon.
	{"diurnal", func(rng *rand.Rand, s int) float64 {
		return (200 + 180*math.Sin(2*math.Pi*float64(s)/86400-math.Pi/2)) * (0.8 + 0.4*rng.Float64())
	}},
	// Bursts no straight line follows: each 10 s either a trickle or a
	// burst of up to 5000 records a second.
	{"bursty", func() func(rng *rand.Rand, s int) float64 {
		burst := 0.0
		return func(rng *rand.Rand, s int) float64 {
			if s%10 == 0 {
				burst = 0
				if rng.Float64() < 0.3 {
					burst = 500 + 4500*rng.Float64()
				}
			}
			return (5 + burst) * (0.8 + 0.4*rng.Float64())
		}
	}()},
}

// fillStore feeds a store of partitions tables a day of 10 s samples of
// shape, each partition with its own noise, each read received 0-20 ms
// after the sample was due.
func fillStore(tb testing.TB, shape partitionShape, partitions int, day time.Duration) *Store {
	tb.Helper()
	store := NewStore(512, 0, nil)
	tps := make(map[kafka.TopicPartition]struct{}, partitions)
	for p := range partitions {
		tps[kafka.TopicPartition{Topic: "busy", Partition: int32(p)}] = struct{}{}
	}
	base := time.Unix(1_700_000_000, 0)
	store.Track(tps, base, 0)
	rngs := make([]*rand.Rand, partitions)
	cum := make([]float64, partitions)
	for p := range rngs {
		rngs[p] = rand.New(rand.NewSource(int64(p + 1)))
	}
	jitter := rand.New(rand.NewSource(0))
	offsets := make(map[kafka.TopicPartition]int64, partitions)
	for s := 0; s <= int(day/time.Second); s++ {
		if s%10 == 0 {
			for tp := range tps {
				offsets[tp] = int64(cum[tp.Partition])
			}
			received := base.Add(time.Duration(s)*time.Second + time.Duration(jitter.Int63n(int64(20*time.Millisecond))))
			store.Record(kafka.OffsetRead{Offsets: offsets, Sent: received.Add(-2 * time.Millisecond), Received: received})
		}
		for p := range cum {
			cum[p] += shape.rate(rngs[p], s)
		}
	}
	return store
}

// liveHeap is the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkTableMemory measures the live heap of a store of 200 partitions
// after 24 h of 10 s samples at max_samples 512, per partition and per
// kept point, and the size of its saved state, for each shape:
//
//	cd kafkatimelagreceiver && go test -run '^$' -bench TableMemory -benchtime 1x ./internal/timetable/
func BenchmarkTableMemory(b *testing.B) {
	const partitions = 200
	for _, shape := range partitionShapes {
		b.Run(shape.name, func(b *testing.B) {
			for range b.N {
				before := liveHeap()
				store := fillStore(b, shape, partitions, 24*time.Hour)
				after := liveHeap()
				points := store.Points()
				perPartition := float64(after-before) / partitions
				b.ReportMetric(perPartition, "B/partition")
				b.ReportMetric(float64(points)/partitions, "points/partition")
				b.ReportMetric(float64(after-before)/float64(points), "B/point")
				b.ReportMetric(float64(len(store.EncodeState()))/partitions, "state-B/partition")
				runtime.KeepAlive(store)
			}
		})
	}
}
