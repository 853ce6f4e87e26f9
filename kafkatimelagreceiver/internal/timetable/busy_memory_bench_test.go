package timetable

import (
	"math/rand"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"testing"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// heapClasses is what runtime/metrics says of the heap at one moment.
type heapClasses struct {
	objects, unused, free, released, allocs uint64
}

// retained is the heap memory the process holds from the OS: what RSS
// counts of the heap.
func (h heapClasses) retained() uint64 { return h.objects + h.unused + h.free }

var heapClassNames = []string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/released:bytes",
	"/gc/heap/allocs:bytes",
}

func readHeapClasses(samples []metrics.Sample) heapClasses {
	metrics.Read(samples)
	return heapClasses{
		objects:  samples[0].Value.Uint64(),
		unused:   samples[1].Value.Uint64(),
		free:     samples[2].Value.Uint64(),
		released: samples[3].Value.Uint64(),
		allocs:   samples[4].Value.Uint64(),
	}
}

// BenchmarkBusyTablesMemory feeds a store the reads of scalebench's busy
// mode (BENCHMARKS.md, "Memory model"): every partition written each second
// with 20 records, +-20 %, all at once, and sampled every 250 ms, so that
// each write is a step whose flat run keeps both ends and the tables fill
// to max_samples and thin. At GOGC=50, as the shipped settings run, it
// reports per table from the settled tables (10 s in, ~22 points) to full
// ones (1,200 samples later): the growth of the live heap after a
// collection, of the heap's unused and free bytes after it, and of the
// largest heap retained from the OS at any sample of the last minute (what
// RSS counts of the heap, before the scavenger returns any), and the bytes
// allocated per sample per table, the garbage that sets how far the heap
// runs past its live size:
//
//	cd kafkatimelagreceiver && go test -run '^$' -bench BusyTablesMemory -benchtime 1x ./internal/timetable/
func BenchmarkBusyTablesMemory(b *testing.B) {
	for _, partitions := range []int{6000, 20000} {
		b.Run(strconv.Itoa(partitions), func(b *testing.B) {
			for range b.N {
				benchmarkBusyTables(b, partitions)
			}
		})
	}
}

func benchmarkBusyTables(b *testing.B, partitions int) {
	const (
		sampling     = 250 * time.Millisecond
		settleAfter  = 40   // samples: 10 s
		fillSamples  = 1200 // samples past settled: 5 min
		peakWindow   = 240  // samples: the last minute
		recordsPerS  = 20
		writeNoise   = 0.2
		writeAtPhase = 100 * time.Millisecond
	)
	defer debug.SetGCPercent(debug.SetGCPercent(50))
	samples := make([]metrics.Sample, len(heapClassNames))
	for i, name := range heapClassNames {
		samples[i].Name = name
	}

	store := NewStore(512, 0, nil)
	tps := make([]kafka.TopicPartition, partitions)
	wanted := make(map[kafka.TopicPartition]struct{}, partitions)
	for p := range tps {
		tps[p] = kafka.TopicPartition{Topic: "busy", Partition: int32(p)}
		wanted[tps[p]] = struct{}{}
	}
	base := time.Unix(1_700_000_000, 0)
	store.Track(wanted, base, 0)
	rng := rand.New(rand.NewSource(1))
	ends := make([]int64, partitions)
	offsets := make(map[kafka.TopicPartition]int64, partitions)
	written := 0 // writes so far, each at writeAtPhase past a second
	var settled, end heapClasses
	var peak uint64
	total := settleAfter + fillSamples
	for s := 1; s <= total; s++ {
		due := time.Duration(s) * sampling
		for time.Duration(written)*time.Second+writeAtPhase <= due {
			for p := range ends {
				ends[p] += int64(recordsPerS*(1-writeNoise+2*writeNoise*rng.Float64()) + 0.5)
			}
			written++
		}
		for p, tp := range tps {
			offsets[tp] = ends[p]
		}
		received := base.Add(due + time.Duration(rng.Int63n(int64(20*time.Millisecond))))
		store.Record(kafka.OffsetRead{Offsets: offsets, Sent: received.Add(-2 * time.Millisecond), Received: received})
		if s == settleAfter {
			runtime.GC()
			settled = readHeapClasses(samples)
			peak = 0
		}
		if s > total-peakWindow {
			peak = max(peak, readHeapClasses(samples).retained())
		}
	}
	runtime.GC()
	end = readHeapClasses(samples)
	settledPeak := settled.retained()
	perTable := func(after, before uint64) float64 {
		return (float64(after) - float64(before)) / float64(partitions)
	}
	b.ReportMetric(float64(store.Points())/float64(partitions), "points/table")
	b.ReportMetric(perTable(end.objects, settled.objects), "live-B/table")
	b.ReportMetric(perTable(end.unused, settled.unused), "unused-B/table")
	b.ReportMetric(perTable(end.free, settled.free), "free-B/table")
	b.ReportMetric(perTable(peak, settledPeak), "peak-retained-B/table")
	b.ReportMetric(float64(end.allocs-settled.allocs)/float64(partitions)/fillSamples, "alloc-B/sample/table")
	runtime.KeepAlive(store)
}
