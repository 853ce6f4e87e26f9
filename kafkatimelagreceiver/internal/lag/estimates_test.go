package lag

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
)

// setStartsSnapshot has partitions whose log starts a scrape may read after
// indexing: one with none yet, one that will pass its end, one left alone,
// one whose start will go back and one that will read a negative start.
func setStartsSnapshot() *Snapshot {
	tp := func(topic string, p int32) kafka.TopicPartition {
		return kafka.TopicPartition{Topic: topic, Partition: p}
	}
	return &Snapshot{
		At: unixSec(100),
		Committed: kafka.CommitsByGroup(map[string]map[kafka.TopicPartition]int64{
			"a": {tp("t", 0): 10, tp("t", 1): 5, tp("t", 2): 1, tp("u", 0): 30, tp("w", 0): 3},
			"b": {tp("t", 0): 20, tp("t", 1): 10, tp("t", 2): 2, tp("u", 0): 50},
			"c": {tp("t", 0): 30, tp("u", 0): 45},
			"d": {tp("t", 0): 50, tp("w", 0): 3},
			"e": {tp("t", 0): 99, tp("t", 2): 10},
		}),
		End:   map[kafka.TopicPartition]int64{tp("t", 0): 100, tp("t", 1): 50, tp("t", 2): 10, tp("u", 0): 60, tp("w", 0): 10},
		Start: map[kafka.TopicPartition]int64{tp("t", 1): 3, tp("u", 0): 40},
	}
}

// SetStarts leaves the index as building it again from the snapshot with
// those starts would: the partitions' starts and the offsets groups lag
// from, whether they rose (moved in place) or went back (gathered again).
func TestSetStartsIsARebuild(t *testing.T) {
	tp := func(topic string, p int32) kafka.TopicPartition {
		return kafka.TopicPartition{Topic: topic, Partition: p}
	}
	for name, starts := range map[string]map[kafka.TopicPartition]int64{
		"risen": {tp("t", 0): 25, tp("t", 1): 60, tp("w", 0): -1, tp("absent", 0): 5},
		"back":  {tp("t", 0): 25, tp("u", 0): 20},
		"same":  {tp("t", 1): 3},
	} {
		t.Run(name, func(t *testing.T) {
			snap := setStartsSnapshot()
			idx := NewIndex(snap)
			before := slices.Clone(idx.laggingOffsets().of(0))
			idx.SetStarts(starts)
			for tp, start := range starts {
				snap.Start[tp] = start
			}
			rebuilt := NewIndex(snap)
			require.Equal(t, rebuilt.laggingOffsets(), idx.laggingOffsets())
			require.Equal(t, rebuilt, idx)
			if name == "risen" {
				require.Equal(t, []int64{10, 20, 30, 50, 99}, before, "t/0 before")
				require.Equal(t, []int64{25, 30, 50, 99}, idx.lagging.of(0), "t/0 moved up to its start")
				require.Empty(t, idx.lagging.of(1), "t/1 started past its end: nobody lags there")
				require.Equal(t, []int64{1, 2}, idx.lagging.of(2), "t/2 as it was")
			}
		})
	}
}

// The computation (Estimate, ResolveProduceRates, GroupLags, Gauges) reads
// the index the read built and changes nothing of it: the index is equal
// to a twin no computation touched, and lags asked of it afterwards are
// still those before any estimate.
func TestComputationLeavesIndexAlone(t *testing.T) {
	tp := kafka.TopicPartition{Topic: "orders", Partition: 0}
	idx, tables, at, _ := recordsFixture(t, 0)
	twin, _, _, _ := recordsFixture(t, 0)
	records := appendStamped()
	missing, _ := OutOfTable(idx, at, tables, records)
	require.NotEmpty(t, missing)
	found := map[recordAt]kafka.RecordTimestamp{}
	for _, rec := range recordsOf(missing) {
		found[rec] = kafka.RecordTimestamp{Offset: rec.Offset, Timestamp: at - int64(time.Hour), Found: kafka.RecordTimed}
	}
	records.PutAll(readsOf(found), recordcache.Existed{Received: at}, recordcache.Proof{})
	_, _ = OutOfTable(twin, at, tables, records)
	before := idx.GroupLags(nil, "old", at)

	est := Estimate(idx.Index, AppendTimes(idx, tables, records, at))
	est.ResolveProduceRates(idx, tables, 100*time.Second)
	for _, g := range []string{"old", "older", "in-table", "caught-up"} {
		lags := est.GroupLags(nil, g, at)
		require.Len(t, lags, 1)
		require.True(t, lags[0].HasTimeLag, "group %s dated", g)
	}
	require.Len(t, est.Gauges(map[kafka.TopicPartition]struct{}{tp: {}}), 1)

	require.Equal(t, twin.Index, idx.Index, "the index holds values: what dating looked up stays beside it")
	require.Equal(t, before, idx.GroupLags(nil, "old", at))
}

func TestResolveProduceRates(t *testing.T) {
	idx, tables, at, tp := recordsFixture(t, 0)
	// The scrape's own read, as sampler.Read records it before indexing.
	tables.Record(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{tp: 250}, Received: time.Unix(0, at), Sent: time.Unix(0, at)})
	est := Estimate(idx.Index, AppendTimes(idx, tables, recordcache.New(), at))
	est.ResolveProduceRates(idx, tables, 100*time.Second)
	gauges := est.Gauges(nil)
	require.True(t, gauges[0].HasProduceRate)
	// 200 at +100 s, 250 at +150 s: 1/s over the last 100 s.
	require.InDelta(t, 1.0, gauges[0].ProduceRate, 1e-9)

	lags := est.GroupLags(nil, "in-table", at)
	require.Len(t, lags, 1)
	require.True(t, lags[0].HasProduceRate, "a group's lags carry their partition's rate")
	require.InDelta(t, 1.0, lags[0].ProduceRate, 1e-9)

	// A partition whose end offset was not read has no rate this scrape.
	snap := &Snapshot{At: at, Committed: kafka.CommitsByGroup(map[string]map[kafka.TopicPartition]int64{"g": {tp: 1}})}
	idx = NewIndex(snap).ResolveTables(tables)
	est = Estimate(idx.Index, AppendTimes(idx, tables, recordcache.New(), at))
	est.ResolveProduceRates(idx, tables, 100*time.Second)
	require.False(t, est.Gauges(nil)[0].HasProduceRate)
}
