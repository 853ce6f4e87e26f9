package lag

import (
	"fmt"
	"testing"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// BenchmarkEstimates1M is the per-pair work of a steady scrape at
// 1,000,000 pairs (100 groups x 10,000 partitions of one topic, the shape
// of scalebench's workload): the index, the out-of-table check before
// record reads, the estimates, then every group's lags with their time
// lags. Each partition holds 4
// records, older than its table; group g is committed at (g+p) mod 5, so
// 4 of 5 pairs are dated by their record's timestamp (its topic's stamps
// trusted), read once and cached, and the fifth is caught up.
func BenchmarkEstimates1M(b *testing.B) {
	t0 := time.Unix(1_700_000_000, 0)
	tables := timetable.NewStore(512, 30*time.Second, nil)
	end, committed := millionCommits()
	wanted := map[kafka.TopicPartition]struct{}{}
	for tp := range end {
		wanted[tp] = struct{}{}
	}
	tables.Track(wanted, t0, 0)
	for i := range 3 {
		at := t0.Add(time.Duration(i) * 10 * time.Second)
		tables.Record(kafka.OffsetRead{Offsets: end, Sent: at, Received: at})
	}
	at := t0.Add(30 * time.Second).UnixNano()
	snap := &Snapshot{At: at, Committed: committed, End: end, Start: map[kafka.TopicPartition]int64{}}
	idx := NewIndex(snap).ResolveTables(tables)
	// The records are older than any table, so no read shows whose clock
	// stamped them: trusted, as trusted_timestamp_topics makes them, they
	// date their pairs (untrusted, they would be withheld).
	records := recordcache.New(recordcache.TrustedStamps(func(string) bool { return true }))
	missing, _ := OutOfTable(idx, at, tables, records)
	found := make(map[recordAt]kafka.RecordTimestamp, len(missing))
	for _, rec := range recordsOf(missing) {
		found[rec] = kafka.RecordTimestamp{Offset: rec.Offset, Timestamp: t0.Add(-time.Hour).UnixNano()}
	}
	records.PutAll(readsOf(found), recordcache.Existed{Received: at}, recordcache.Proof{})
	if len(recordsOf(missing)) != 4*scalePartitions {
		b.Fatalf("%d records out of table, want %d", len(recordsOf(missing)), 4*scalePartitions)
	}
	names := make([]string, 0, scaleGroups)
	for g := range committed {
		names = append(names, g)
	}
	var lags []PartitionLag
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		idx := NewIndex(snap).ResolveTables(tables)
		missing, used := OutOfTable(idx, at, tables, records)
		if len(missing) != 0 {
			b.Fatalf("%d records still missing", len(missing))
		}
		records.Retain(used)
		lags = everyPairDated(b, Estimate(idx.Index, AppendTimes(idx, tables, records, at)), names, at, lags)
	}
}

// everyPairDated gathers every group's lags from est, as a scrape does, and
// fails unless each of the 1,000,000 pairs has a time lag. lags is reused.
func everyPairDated(b *testing.B, est *Estimates, names []string, at int64, lags []PartitionLag) []PartitionLag {
	timed := 0
	for _, g := range names {
		lags = est.GroupLags(lags[:0], g, at)
		for i := range lags {
			if lags[i].HasTimeLag {
				timed++
			}
		}
	}
	if timed != scaleGroups*scalePartitions {
		b.Fatalf("%d time lags, want %d", timed, scaleGroups*scalePartitions)
	}
	return lags
}

// BenchmarkIndex1M is what a scrape does with 1,000,000 commits before any
// estimate: index them (each group's commits arrive in map order) and walk
// every group's lags in (topic, partition) order.
func BenchmarkIndex1M(b *testing.B) {
	end, committed := millionCommits()
	snap := &Snapshot{At: 1, Committed: committed, End: end, Start: map[kafka.TopicPartition]int64{}}
	var lags []PartitionLag
	b.ReportAllocs()
	for b.Loop() {
		idx := NewIndex(snap)
		pairs := 0
		for g := range committed {
			lags = idx.GroupLags(lags[:0], g, snap.At)
			pairs += len(lags)
		}
		if pairs != scaleGroups*scalePartitions {
			b.Fatalf("%d pairs, want %d", pairs, scaleGroups*scalePartitions)
		}
	}
}

// scaleGroups groups each commit on all scalePartitions partitions of one
// topic: the shape of scalebench's 1,000,000-pair workload.
const scaleGroups, scalePartitions = 100, 10000

// millionCommits is that workload's end offsets (4 records a partition)
// and commits: group g at (g+p) mod 5 on partition p.
func millionCommits() (end map[kafka.TopicPartition]int64, committed map[string]kafka.Commits) {
	end = make(map[kafka.TopicPartition]int64, scalePartitions)
	for p := range int32(scalePartitions) {
		end[kafka.TopicPartition{Topic: "scale", Partition: p}] = 4
	}
	committed = make(map[string]kafka.Commits, scaleGroups)
	for g := range scaleGroups {
		offsets := make(map[kafka.TopicPartition]int64, scalePartitions)
		for p := range int32(scalePartitions) {
			offsets[kafka.TopicPartition{Topic: "scale", Partition: p}] = int64((g + int(p)) % 5)
		}
		committed[fmt.Sprintf("group-%03d", g)] = kafka.CommitsOf(offsets)
	}
	return end, committed
}
