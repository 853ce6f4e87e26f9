package dating

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// churnLog is scalebench's churn workload in memory: partitions written
// once a second, a batch of 1 to 3 records sharing its millisecond, on
// brokers partition % brokers. It answers the time index as a broker does
// and counts what the asks would cost: entries (a partition and a time)
// and requests (a request names a partition once, so a broker answers a
// partition's times in as many requests, less those an answer implies).
type churnLog struct {
	brokers int
	// starts[p][k] is batch k's first offset, stamps[p][k] its millisecond.
	starts, stamps [][]int64
	entries        int
	requests       int
	fetched        int
}

func newChurnLog(partitions, batches, brokers int, t0Millis int64) *churnLog {
	l := &churnLog{brokers: brokers, starts: make([][]int64, partitions), stamps: make([][]int64, partitions)}
	for p := range partitions {
		var next int64
		for k := range batches {
			l.starts[p] = append(l.starts[p], next)
			l.stamps[p] = append(l.stamps[p], t0Millis+int64(k)*1000+int64((p*7+k*13)%50))
			next += int64(1 + (p+k)%3)
		}
	}
	return l
}

// end is the partition's end offset after the batches stamped up to ms.
func (l *churnLog) end(p int, ms int64) int64 {
	k := sort.Search(len(l.stamps[p]), func(i int) bool { return l.stamps[p][i] > ms })
	if k == len(l.starts[p]) {
		panic("past the log")
	}
	return l.starts[p][k]
}

func (l *churnLog) TimestampOffsets(_ context.Context, asks []kafka.PartitionTimes) (kafka.TimePoints, error) {
	out := kafka.TimePoints{}
	perBroker := make([]int, l.brokers)
	for _, a := range asks {
		p := int(a.Partition)
		times := slices.Clone(a.Millis)
		slices.Sort(times)
		times = slices.Compact(times)
		asked := 0
		for len(times) > 0 {
			asked++
			l.entries++
			k := sort.Search(len(l.stamps[p]), func(i int) bool { return l.stamps[p][i] >= times[0] })
			point := kafka.TimePoint{Offset: -1, TimestampMillis: -1}
			if k < len(l.stamps[p]) {
				point = kafka.TimePoint{Found: true, Offset: l.starts[p][k], TimestampMillis: l.stamps[p][k]}
			}
			for len(times) > 0 && (!point.Found || times[0] <= point.TimestampMillis) {
				implied := point
				implied.AtMillis = times[0]
				out[a.TopicPartition] = append(out[a.TopicPartition], implied)
				times = times[1:]
			}
		}
		perBroker[p%l.brokers] = max(perBroker[p%l.brokers], asked)
	}
	for _, n := range perBroker {
		l.requests += n
	}
	return out, nil
}

func (l *churnLog) RecordTimestamps(_ context.Context, wanted []kafka.PartitionOffsets) (kafka.RecordReads, error) {
	out := kafka.RecordReads{}
	for _, w := range wanted {
		p := int(w.Partition)
		l.fetched++
		for _, o := range append(slices.Clone(w.Offsets), w.Near...) {
			k := sort.Search(len(l.starts[p]), func(i int) bool { return l.starts[p][i] > o }) - 1
			rec := kafka.RecordTimestamp{Offset: o, Timestamp: l.stamps[p][k] * int64(time.Millisecond), Found: kafka.RecordTimed, ByProducer: true, Producer: 1}
			out[w.TopicPartition] = append(out[w.TopicPartition], kafka.RecordRead{Wanted: o, RecordTimestamp: rec})
		}
	}
	return out, nil
}

func (l *churnLog) StartOffsets(_ context.Context, tps []kafka.TopicPartition) (kafka.OffsetRead, error) {
	read := kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{}}
	for _, tp := range tps {
		read.Offsets[tp] = 0
	}
	return read, nil
}

// BenchmarkTimeIndexChurn1M is the receiver's side of a churning scrape at
// 1,000,000 pairs dated from the time index (scalebench -churn): 100
// groups x 10,000 partitions on 3 brokers, each written a batch of 1 to 3
// records a second and sampled every 5 s, every group committed 0 to 20
// records behind the end (21 records a partition to date, every scrape
// afresh: two scrapes' commits alternate, 21 records apart, and each
// forgets the other's). The index is answered in memory; entries/op and
// requests/op are what the brokers would be asked, fetches/op the
// partitions read (none expected).
func BenchmarkTimeIndexChurn1M(b *testing.B) {
	b.Run("time_index", func(b *testing.B) { benchmarkChurn1M(b, true) })
	b.Run("record_reads", func(b *testing.B) { benchmarkChurn1M(b, false) })
}

func benchmarkChurn1M(b *testing.B, timeIndex bool) {
	const partitions, groups = 10_000, 100
	log, tables, snapshots, at := newChurn(partitions, groups)
	atMs := at.UnixMilli()
	records := recordcache.New()
	opt := Options{MaxReads: partitions, TimeIndex: timeIndex, MaxReadBytes: 16 << 20, Now: func() time.Time { return at }}
	var rep Report
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		snap := snapshots[i%2]
		est, r, err := Date(context.Background(), log, tables, records, snap, lag.NewIndex(snap), opt)
		if err != nil {
			b.Fatal(err)
		}
		if i < 2 {
			// Every pair is dated, each within a millisecond of its
			// record's stamp.
			checkChurnDated(b, est, log, snap, atMs)
		}
		rep = r
	}
	b.ReportMetric(float64(log.entries)/float64(b.N), "entries/op")
	b.ReportMetric(float64(log.requests)/float64(b.N), "requests/op")
	b.ReportMetric(float64(log.fetched)/float64(b.N), "fetches/op")
	b.ReportMetric(float64(rep.IndexRounds), "rounds")
}

// newChurn is the churn workload of partitions on 3 brokers and groups:
// the log, its tables sampled every 5 s for 120 s, the scrape's instant,
// and two scrapes' commits, 0 to 20 records behind the end, 21 records
// apart.
func newChurn(partitions, groups int) (log *churnLog, tables *timetable.Store, snapshots []*lag.Snapshot, at time.Time) {
	const brokers, behind = 3, 20
	t0 := time.Unix(1_700_000_000, 0)
	t0ms := t0.UnixMilli()
	log = newChurnLog(partitions, 200, brokers, t0ms)
	tables = timetable.NewStore(512, 30*time.Second, nil)
	tps := make([]kafka.TopicPartition, partitions)
	tracked := map[kafka.TopicPartition]struct{}{}
	for p := range tps {
		tps[p] = kafka.TopicPartition{Topic: "scale", Partition: int32(p)}
		tracked[tps[p]] = struct{}{}
	}
	tables.Track(tracked, t0, 0)
	const scrapeSecond = 120
	for s := int64(0); s < scrapeSecond; s += 5 {
		ms := t0ms + s*1000 + 200
		ends := make(map[kafka.TopicPartition]int64, partitions)
		for p, tp := range tps {
			ends[tp] = log.end(p, ms)
		}
		read := time.UnixMilli(ms)
		tables.Record(kafka.OffsetRead{Offsets: ends, Sent: read, Received: read})
	}
	atMs := t0ms + scrapeSecond*1000 + 300
	at = time.UnixMilli(atMs)
	end := make(map[kafka.TopicPartition]int64, partitions)
	for p, tp := range tps {
		end[tp] = log.end(p, atMs)
	}
	snapshots = make([]*lag.Snapshot, 2)
	for s := range snapshots {
		committed := make(map[string]kafka.Commits, groups)
		for g := range groups {
			offsets := make(map[kafka.TopicPartition]int64, partitions)
			for p, tp := range tps {
				offsets[tp] = end[tp] - int64(s*(behind+1)+(g*5+p)%(behind+1))
			}
			committed[fmt.Sprintf("group-%03d", g)] = kafka.CommitsOf(offsets)
		}
		snapshots[s] = &lag.Snapshot{At: at.UnixNano(), Committed: committed, End: end, Start: map[kafka.TopicPartition]int64{}}
	}
	return log, tables, snapshots, at
}

func checkChurnDated(b testing.TB, est *lag.Estimates, log *churnLog, snap *lag.Snapshot, atMs int64) {
	b.Helper()
	var lags []lag.PartitionLag
	for g := range snap.Committed {
		lags = est.GroupLags(lags[:0], g, snap.At)
		for _, pl := range lags {
			if !pl.HasTimeLag {
				b.Fatalf("%s %v: no time lag", g, pl.TopicPartition)
			}
			p := int(pl.Partition)
			o := pl.Committed
			if o >= snap.End[pl.TopicPartition] {
				if pl.TimeLag != 0 {
					b.Fatalf("%s %v: caught up, time lag %.3f s", g, pl.TopicPartition, pl.TimeLag)
				}
				continue
			}
			k := sort.Search(len(log.starts[p]), func(i int) bool { return log.starts[p][i] > o }) - 1
			truth := float64(atMs-log.stamps[p][k]) / 1e3
			if d := pl.TimeLag - truth; d > 0.002 || d < -0.002 {
				b.Fatalf("%s %v at %d: time lag %.3f s, its record's stamp says %.3f s", g, pl.TopicPartition, o, pl.TimeLag, truth)
			}
		}
	}
}

// heldInRounds passes a Source's calls on and, at each round of the time
// index (while a search's targets and answers are held), collects the
// garbage and notes the live heap.
type heldInRounds struct {
	Source
	peak uint64
}

func (h *heldInRounds) TimestampOffsets(ctx context.Context, asks []kafka.PartitionTimes) (kafka.TimePoints, error) {
	h.peak = max(h.peak, liveHeap())
	return h.Source.TimestampOffsets(ctx, asks)
}

// liveHeap is the bytes the heap holds after a collection.
func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkTimeIndexSearchHeld1M is what the churning scrape of
// BenchmarkTimeIndexChurn1M holds while it searches the time index: the
// live heap at the fullest round above what was live before the scrape
// (held-MiB), and what was live before it (before-MiB: the workload in
// memory, the tables and the record cache the last scrape left).
func BenchmarkTimeIndexSearchHeld1M(b *testing.B) {
	const partitions, groups = 10_000, 100
	log, tables, snapshots, at := newChurn(partitions, groups)
	records := recordcache.New()
	opt := Options{MaxReads: partitions, TimeIndex: true, MaxReadBytes: 16 << 20, Now: func() time.Time { return at }}
	var held, before uint64
	for i := range b.N {
		snap := snapshots[i%2]
		idx := lag.NewIndex(snap)
		live := liveHeap()
		src := &heldInRounds{Source: log}
		if _, _, err := Date(context.Background(), src, tables, records, snap, idx, opt); err != nil {
			b.Fatal(err)
		}
		held = max(held, src.peak-min(src.peak, live))
		before = max(before, live)
	}
	b.ReportMetric(float64(held)/(1<<20), "held-MiB")
	b.ReportMetric(float64(before)/(1<<20), "before-MiB")
}
