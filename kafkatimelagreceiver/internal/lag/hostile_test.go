package lag

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// TestHostileOffsetsGiveNoLag: offsets a broken or hostile broker answers
// near the int64 limits, or negative, give no lag (a negative end, start or
// stable offset is none; a negative commit is no commit), never one near
// 9.2e18 from an overflowing subtraction; lags at the limit add up to the
// limit, not to a negative sum.
func TestHostileOffsetsGiveNoLag(t *testing.T) {
	tp := kafka.TopicPartition{Topic: "t"}
	none := func(kafka.TopicPartition, int64) (int64, Method, bool) { return 0, MethodTable, false }
	for _, tt := range []struct {
		name                    string
		end, committed          int64
		start, stable           int64 // 0: not read
		wantPair, wantEnd       bool
		wantLag, wantStableLag  int64
		wantLost                int64
		wantStable, wantHasLost bool
	}{
		{name: "end at MinInt64", end: math.MinInt64, committed: 5, wantPair: true},
		{name: "end -1", end: -1, committed: 5, wantPair: true},
		{name: "end at MaxInt64, committed 0", end: math.MaxInt64, committed: 0, wantPair: true, wantEnd: true, wantLag: math.MaxInt64},
		{name: "committed negative", end: 10, committed: -5},
		{name: "committed at MinInt64", end: math.MaxInt64, committed: math.MinInt64},
		{name: "stable at MinInt64", end: 10, committed: 5, stable: math.MinInt64, wantPair: true, wantEnd: true, wantLag: 5},
		{name: "start at MinInt64", end: 10, committed: 5, start: math.MinInt64, wantPair: true, wantEnd: true, wantLag: 5},
		{name: "start at MaxInt64", end: math.MaxInt64, committed: 5, start: math.MaxInt64, wantPair: true, wantEnd: true, wantLag: math.MaxInt64 - 5, wantLost: math.MaxInt64 - 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			snap := &Snapshot{
				Committed: kafka.CommitsByGroup(map[string]map[kafka.TopicPartition]int64{"g": {tp: tt.committed}}),
				End:       map[kafka.TopicPartition]int64{tp: tt.end},
				Start:     map[kafka.TopicPartition]int64{},
				Stable:    map[kafka.TopicPartition]int64{},
			}
			if tt.start != 0 {
				snap.Start[tp] = tt.start
			}
			if tt.stable != 0 {
				snap.Stable[tp] = tt.stable
			}
			lags := estimated(snap, none).GroupLags(nil, "g", 0)
			if !tt.wantPair {
				require.Empty(t, lags, "a negative commit is no commit")
				return
			}
			require.Len(t, lags, 1)
			pl := lags[0]
			require.Equal(t, tt.wantEnd, pl.HasEnd)
			require.Equal(t, tt.wantLag, pl.Lag)
			require.Equal(t, tt.wantLost, pl.Lost)
			require.False(t, pl.HasStableLag, "no stable offset was a valid one")
			require.GreaterOrEqual(t, pl.Lag, int64(0))
		})
	}
}

func TestLagSumsSaturate(t *testing.T) {
	for _, tt := range []struct{ a, b, want int64 }{
		{1, 2, 3},
		{math.MaxInt64, 1, math.MaxInt64},
		{math.MaxInt64 - 1, math.MaxInt64 - 1, math.MaxInt64},
		{math.MaxInt64, 0, math.MaxInt64},
		{0, math.MaxInt64, math.MaxInt64},
	} {
		require.Equal(t, tt.want, AddLags(tt.a, tt.b), "%d + %d", tt.a, tt.b)
	}
	tp := func(p int32) kafka.TopicPartition { return kafka.TopicPartition{Topic: "t", Partition: p} }
	aggs := Aggregate(nil, []PartitionLag{
		{Group: "g", TopicPartition: tp(0), HasEnd: true, Lag: math.MaxInt64 - 1},
		{Group: "g", TopicPartition: tp(1), HasEnd: true, Lag: math.MaxInt64 - 1},
	})
	require.Len(t, aggs, 1)
	require.Equal(t, int64(math.MaxInt64), aggs[0].LagSum, "saturated, not wrapped to -4")
}

// FuzzGroupLags: whatever offsets a broker answers, every lag is >= 0, no
// larger than the end offset, and the per-topic sums are >= 0.
func FuzzGroupLags(f *testing.F) {
	f.Add(int64(10), int64(5), int64(0), int64(8), int64(20), int64(3))
	f.Add(int64(math.MinInt64), int64(5), int64(-1), int64(math.MaxInt64), int64(math.MaxInt64), int64(0))
	f.Fuzz(func(t *testing.T, end0, committed0, start0, stable0, end1, committed1 int64) {
		tp0, tp1 := kafka.TopicPartition{Topic: "t", Partition: 0}, kafka.TopicPartition{Topic: "t", Partition: 1}
		snap := &Snapshot{
			Committed: kafka.CommitsByGroup(map[string]map[kafka.TopicPartition]int64{"g": {tp0: committed0, tp1: committed1}}),
			End:       map[kafka.TopicPartition]int64{tp0: end0, tp1: end1},
			Start:     map[kafka.TopicPartition]int64{tp0: start0},
			Stable:    map[kafka.TopicPartition]int64{tp0: stable0},
		}
		lags := estimated(snap, func(kafka.TopicPartition, int64) (int64, Method, bool) { return 0, MethodTable, true }).GroupLags(nil, "g", 0)
		for _, pl := range lags {
			if pl.Lag < 0 || pl.Lost < 0 || pl.StableLag < 0 || pl.Committed < 0 {
				t.Fatalf("negative: %+v", pl)
			}
			if pl.HasEnd && (pl.End < 0 || pl.Lag > pl.End) {
				t.Fatalf("lag beyond the end offset: %+v", pl)
			}
		}
		for _, agg := range Aggregate(nil, lags) {
			if agg.LagSum < 0 || agg.LagMax < 0 {
				t.Fatalf("negative sum: %+v", agg)
			}
		}
	})
}

// TestHostilePartitionNumbers: partition numbers no topic has (negative,
// near the int32 limit, far past the topic's others, announced out of
// order by end offsets) index like any other: every commit gets its lag on
// its own partition, in (topic, partition) order, and each partition is
// listed once.
func TestHostilePartitionNumbers(t *testing.T) {
	partitions := []int32{math.MinInt32, -1, 0, 1, 2, 5000, 1 << 20, math.MaxInt32 - 1, math.MaxInt32}
	committed := map[string]map[kafka.TopicPartition]int64{}
	end := map[kafka.TopicPartition]int64{}
	for _, g := range []string{"a", "b"} {
		committed[g] = map[kafka.TopicPartition]int64{}
		for _, topic := range []string{"t", "u"} {
			for _, p := range partitions {
				committed[g][kafka.TopicPartition{Topic: topic, Partition: p}] = 1
				end[kafka.TopicPartition{Topic: topic, Partition: p}] = 3
			}
		}
	}
	// Partitions only an end offset names, past every commit.
	end[kafka.TopicPartition{Topic: "t", Partition: 1 << 24}] = 3
	end[kafka.TopicPartition{Topic: "v", Partition: 7}] = 3
	snap := &Snapshot{Committed: kafka.CommitsByGroup(committed), End: end}

	listed := Partitions(snap.Committed)
	require.Len(t, listed, 2*len(partitions))
	kafka.SortPartitions(listed)
	require.Equal(t, len(listed), len(slices.Compact(slices.Clone(listed))), "each partition once")

	idx := NewIndex(snap)
	require.Len(t, idx.Parts, len(end))
	require.True(t, slices.IsSortedFunc(idx.Parts, func(a, b Partition) int { return a.Compare(b.TopicPartition) }))
	for _, g := range []string{"a", "b"} {
		lags := idx.GroupLags(nil, g, 0)
		var got []kafka.TopicPartition
		for _, pl := range lags {
			require.Equal(t, int64(2), pl.Lag, "%v", pl.TopicPartition)
			got = append(got, pl.TopicPartition)
		}
		require.Equal(t, listed, got, "group %s", g)
	}
}
