package lag

import (
	"math"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

func lagsOn(tps ...kafka.TopicPartition) []PartitionLag {
	out := make([]PartitionLag, len(tps))
	for i, tp := range tps {
		out[i] = PartitionLag{Group: "g", TopicPartition: tp}
	}
	return out
}

func trackedPartitions(tracks []Track[int]) []kafka.TopicPartition {
	var out []kafka.TopicPartition
	for i := range tracks {
		out = append(out, tracks[i].TopicPartition())
	}
	return out
}

func TestMergeTracks(t *testing.T) {
	a0 := kafka.TopicPartition{Topic: "a", Partition: 0}
	a1 := kafka.TopicPartition{Topic: "a", Partition: 1}
	b0 := kafka.TopicPartition{Topic: "b", Partition: 0}
	const forget = 2
	// Scrape numbers wrap; the merge only ever subtracts them.
	scrape := uint32(math.MaxUint32 - 1)

	tracks := MergeTracks[int](nil, lagsOn(a0, b0), scrape, forget)
	require.Equal(t, []kafka.TopicPartition{a0, b0}, trackedPartitions(tracks))
	tracks[0].State, tracks[1].State = 10, 20

	// a1 is new, b0 missing once: kept with its state.
	scrape++
	tracks = MergeTracks(tracks, lagsOn(a0, a1), scrape, forget)
	require.Equal(t, []kafka.TopicPartition{a0, a1, b0}, trackedPartitions(tracks))
	require.Equal(t, []int{10, 0, 20}, []int{tracks[0].State, tracks[1].State, tracks[2].State})

	// b0 missing twice: dropped.
	scrape++
	tracks = MergeTracks(tracks, lagsOn(a0, a1), scrape, forget)
	require.Equal(t, []kafka.TopicPartition{a0, a1}, trackedPartitions(tracks))

	// The same partitions again: in place, nothing allocated.
	require.Zero(t, testing.AllocsPerRun(10, func() {
		scrape++
		tracks = MergeTracks(tracks, lagsOn(a0, a1)[:2:2], scrape, forget)
	}))
	require.Equal(t, 10, tracks[0].State)

	// Back after being dropped: starts from a zero state.
	scrape++
	tracks = MergeTracks(tracks, lagsOn(a0, a1, b0), scrape, forget)
	require.Equal(t, 0, tracks[2].State)
}

// A tracker holds one track per (group, partition) pair of the cluster:
// the partition and scrape number fit in 24 bytes.
func TestTrackHeaderSize(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("sizes are those of a 64-bit platform")
	}
	require.Equal(t, uintptr(32), unsafe.Sizeof(Track[int64]{}))
}

func TestResolveProduceRates(t *testing.T) {
	idx, tables, at, tp := recordsFixture(t, 0)
	// The scrape's own read, as sampler.Read records it before indexing.
	tables.Record(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{tp: 250}, Received: time.Unix(0, at), Sent: time.Unix(0, at)})
	idx.ResolveProduceRates(tables, 100*time.Second)
	require.True(t, idx.Parts[0].HasProduceRate)
	// 200 at +100 s, 250 at +150 s: 1/s over the last 100 s.
	require.InDelta(t, 1.0, idx.Parts[0].ProduceRate, 1e-9)

	lags := idx.GroupLags(nil, "in-table", at, func(*Partition, int64) (int64, Method, bool) { return 0, MethodNone, false })
	require.Len(t, lags, 1)
	require.True(t, lags[0].HasProduceRate, "a group's lags carry their partition's rate")
	require.InDelta(t, 1.0, lags[0].ProduceRate, 1e-9)

	// A partition whose end offset was not read has no rate this scrape.
	snap := &Snapshot{At: at, Committed: map[string]map[kafka.TopicPartition]int64{"g": {tp: 1}}}
	idx = NewIndex(snap)
	idx.ResolveTables(tables)
	idx.ResolveProduceRates(tables, 100*time.Second)
	require.False(t, idx.Parts[0].HasProduceRate)
}
