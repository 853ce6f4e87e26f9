package lag

import (
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// A day of steady production (200 records/s, +-20% noise each second)
// sampled every 10 s, as the receiver samples it by default: simplification
// merges the samples into segments hours wide, which date their records to
// within a sample and the tolerance. Groups minutes to most of a day behind
// are then dated by the tables alone, within 0.6% of their time lag (10 s
// for the ones minutes behind), and no scrape reads a record for them: the
// count of record reads is that of tables that keep every sample, zero.
func TestSteadyPartitionsFarBehindNeedNoRecordReads(t *testing.T) {
	const (
		partitions = 20
		day        = 86400
		interval   = 10
	)
	base := time.Unix(1_700_000_000, 0)
	tables := timetable.NewStore(512, 3*interval*time.Second, nil)
	tps := map[kafka.TopicPartition]struct{}{}
	for p := range int32(partitions) {
		tps[kafka.TopicPartition{Topic: "steady", Partition: p}] = struct{}{}
	}
	tables.Track(tps, base, 0)
	rng := rand.New(rand.NewSource(1))
	// cum[p][s] is partition p's end offset at second s.
	cum := make([][]int64, partitions)
	for p := range cum {
		cum[p] = make([]int64, day+1)
		total := 0.0
		for s := range cum[p] {
			cum[p][s] = int64(total)
			total += 200 * (0.8 + 0.4*rng.Float64())
		}
	}
	for s := 0; s <= day; s += interval {
		offsets := map[kafka.TopicPartition]int64{}
		for tp := range tps {
			offsets[tp] = cum[tp.Partition][s]
		}
		received := base.Add(time.Duration(s)*time.Second + time.Duration(rng.Int63n(int64(20*time.Millisecond))))
		tables.Record(kafka.OffsetRead{Offsets: offsets, Sent: received.Add(-2 * time.Millisecond), Received: received})
	}
	require.Less(t, tables.Points(), partitions*100, "the tables are simplified: this is what the test is about")

	now := day
	at := base.Add(time.Duration(now)*time.Second + 5*time.Second).UnixNano()
	lags := []int{120, 600, 3600, 6 * 3600, 23 * 3600}
	snap := &Snapshot{At: at, Committed: map[string]kafka.Commits{}, End: map[kafka.TopicPartition]int64{}, Start: map[kafka.TopicPartition]int64{}}
	for tp := range tps {
		snap.End[tp] = cum[tp.Partition][now]
	}
	for _, lag := range lags {
		group := map[kafka.TopicPartition]int64{}
		for tp := range tps {
			group[tp] = cum[tp.Partition][now-lag] + 1
		}
		snap.Committed[time.Duration(lag*int(time.Second)).String()] = kafka.CommitsOf(group)
	}
	idx := NewIndex(snap).ResolveTables(tables)
	records := recordcache.New()
	missing, _ := OutOfTable(idx, at, tables, records)
	require.Empty(t, missing, "no record reads for groups the tables date well")

	appendTime := AppendTimes(idx, tables, records, at)
	for i := range idx.Parts {
		p := &idx.Parts[i]
		for _, lag := range lags {
			c := cum[p.Partition][now-lag] + 1
			got, method, ok := appendTime(int32(i), c)
			require.True(t, ok)
			require.Equal(t, MethodTable, method)
			// Record c was appended in the second s whose production took
			// the end offset past it.
			s := sort.Search(day, func(s int) bool { return cum[p.Partition][s+1] > c })
			truth := base.Add(time.Duration(s) * time.Second).UnixNano()
			timeLag := at - truth
			require.InDelta(t, truth, got, max(0.006*float64(timeLag), float64(10*time.Second)), "partition %d, %d s behind", p.Partition, lag)
		}
	}
}
