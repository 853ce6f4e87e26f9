package lag

import (
	"fmt"
	"testing"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// BenchmarkRecordReadsChurn1M is the receiver's side of a churning scrape at
// 1,000,000 pairs (scalebench -churn): 100 groups x 10,000 partitions, each
// written 2 records a second and sampled every 5 s, every group committed
// 0 to 20 records behind the end, on offsets that move from one scrape to
// the next. Every committed offset sits in the newest, coarse bracket, so
// the scrape lists every distinct one for a read (21 a partition),
// remembers the answers (here made up in memory: no Fetch), drops the last
// scrape's, and dates every pair. Two scrapes' commits alternate, on
// offsets apart, so each scrape reads all of its records afresh.
func BenchmarkRecordReadsChurn1M(b *testing.B) {
	const behind, sampled, rate = 20, 5 * time.Second, 2
	t0 := time.Unix(1_700_000_000, 0)
	tables := timetable.NewStore(512, 30*time.Second, nil)
	tps := make([]kafka.TopicPartition, scalePartitions)
	wanted := map[kafka.TopicPartition]struct{}{}
	for p := range tps {
		tps[p] = kafka.TopicPartition{Topic: "scale", Partition: int32(p)}
		wanted[tps[p]] = struct{}{}
	}
	tables.Track(wanted, t0, 0)
	endAt := func(i int) map[kafka.TopicPartition]int64 {
		end := make(map[kafka.TopicPartition]int64, scalePartitions)
		for p, tp := range tps {
			end[tp] = int64(1000 + i*int(sampled.Seconds())*rate + p%3)
		}
		return end
	}
	const samples = 12
	for i := range samples {
		at := t0.Add(time.Duration(i) * sampled)
		tables.Record(kafka.OffsetRead{Offsets: endAt(i), Sent: at, Received: at})
	}
	at := t0.Add(samples*sampled - 2*time.Second).UnixNano()
	snapshots := make([]*Snapshot, 2)
	for s := range snapshots {
		// The second set's ends, and so its commits, lie past the first's.
		end := endAt(samples + 3*s)
		committed := make(map[string]kafka.Commits, scaleGroups)
		for g := range scaleGroups {
			offsets := make(map[kafka.TopicPartition]int64, scalePartitions)
			for p, tp := range tps {
				offsets[tp] = end[tp] - int64((g*5+p)%(behind+1))
			}
			committed[fmt.Sprintf("group-%03d", g)] = kafka.CommitsOf(offsets)
		}
		snapshots[s] = &Snapshot{At: at, Committed: committed, End: end, Start: map[kafka.TopicPartition]int64{}}
	}
	names := make([]string, 0, scaleGroups)
	for g := range scaleGroups {
		names = append(names, fmt.Sprintf("group-%03d", g))
	}
	records := recordcache.New()
	var lags []PartitionLag
	read := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		snap := snapshots[i%2]
		idx := NewIndex(snap).ResolveTables(tables)
		missing, used := OutOfTable(idx, at, tables, records)
		found := make(kafka.RecordReads, len(missing))
		read = 0
		for _, w := range missing {
			reads := make([]kafka.RecordRead, len(w.Offsets))
			for j, o := range w.Offsets {
				// Stamped by one of a few idempotent producers, as the
				// default clients since Kafka 3.0 are: their clocks are
				// measured.
				reads[j] = kafka.RecordRead{Wanted: o, RecordTimestamp: kafka.RecordTimestamp{Offset: o, Timestamp: at - (snap.End[w.TopicPartition]-o)*int64(time.Second)/rate, ByProducer: true, Producer: o % 3}}
			}
			found[w.TopicPartition] = reads
			read += len(reads)
		}
		records.PutAll(found, recordcache.Existed{End: snap.End, EndAt: at, Received: at}, Proof(idx, tables, at))
		records.Retain(used)
		lags = everyPairDated(b, Estimate(idx.Index, AppendTimes(idx, tables, records, at)), names, at, lags)
	}
	b.ReportMetric(float64(read), "records/op")
}
