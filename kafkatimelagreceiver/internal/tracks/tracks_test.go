package tracks

import (
	"math"
	"reflect"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
)

func lagsOn(tps ...kafka.TopicPartition) []lag.PartitionLag {
	out := make([]lag.PartitionLag, len(tps))
	for i, tp := range tps {
		out[i] = lag.PartitionLag{Group: "g", TopicPartition: tp}
	}
	return out
}

func trackedPartitions(tracks *Tracks[int]) []kafka.TopicPartition {
	var out []kafka.TopicPartition
	for i := range tracks.Len() {
		tp, _ := tracks.At(i)
		out = append(out, tp)
	}
	return out
}

func trackedStates(tracks *Tracks[int]) []int {
	var out []int
	for i := range tracks.Len() {
		_, state := tracks.At(i)
		out = append(out, *state)
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

	var tracks Tracks[int]
	tracks.Merge(lagsOn(a0, b0), scrape, forget)
	require.Equal(t, []kafka.TopicPartition{a0, b0}, trackedPartitions(&tracks))
	for i, state := range tracks.Matched(lagsOn(a0, b0)) {
		*state = 10 * (i + 1)
	}

	// a1 is new, b0 missing once: kept with its state.
	scrape++
	tracks.Merge(lagsOn(a0, a1), scrape, forget)
	require.Equal(t, []kafka.TopicPartition{a0, a1, b0}, trackedPartitions(&tracks))
	require.Equal(t, []int{10, 0, 20}, trackedStates(&tracks))

	// b0 missing twice: dropped.
	scrape++
	tracks.Merge(lagsOn(a0, a1), scrape, forget)
	require.Equal(t, []kafka.TopicPartition{a0, a1}, trackedPartitions(&tracks))

	// The same partitions again, their topic names read anew (another
	// scrape's strings): in place, nothing allocated.
	again := lagsOn(kafka.TopicPartition{Topic: string([]byte("a")), Partition: 0}, kafka.TopicPartition{Topic: string([]byte("a")), Partition: 1})
	require.Zero(t, testing.AllocsPerRun(10, func() {
		scrape++
		tracks.Merge(again, scrape, forget)
	}))
	require.Equal(t, []int{10, 0}, trackedStates(&tracks))

	// Back after being dropped: starts from a zero state.
	scrape++
	tracks.Merge(lagsOn(a0, a1, b0), scrape, forget)
	require.Equal(t, []int{10, 0, 0}, trackedStates(&tracks))

	// A group's tracks on many topics keep each topic's name once.
	var many Tracks[int]
	var lags []lag.PartitionLag
	for _, topic := range []string{"a", "b", "c"} {
		for p := range int32(3) {
			lags = append(lags, lag.PartitionLag{Group: "g", TopicPartition: kafka.TopicPartition{Topic: topic, Partition: p}})
		}
	}
	many.Merge(lags, scrape, forget)
	var want []kafka.TopicPartition
	for _, pl := range lags {
		want = append(want, pl.TopicPartition)
	}
	require.Equal(t, want, trackedPartitions(&many))
	require.Len(t, many.topics, 3)
}

// TestMatchedAfterMerge: Matched yields each lag's own state whether the
// merge kept the tracks in place, dropped one, or kept one the scrape did
// not see between them; and a scrape that differs from the last one only
// part way marks seen only the partitions it saw.
func TestMatchedAfterMerge(t *testing.T) {
	a0 := kafka.TopicPartition{Topic: "a", Partition: 0}
	a1 := kafka.TopicPartition{Topic: "a", Partition: 1}
	a2 := kafka.TopicPartition{Topic: "a", Partition: 2}
	b0 := kafka.TopicPartition{Topic: "b", Partition: 0}
	const forget = 2
	matched := func(tracks *Tracks[int], lags []lag.PartitionLag) []int {
		var out []int
		for i, state := range tracks.Matched(lags) {
			require.Equal(t, len(out), i)
			out = append(out, *state)
		}
		return out
	}
	scrape := uint32(7)
	var tracks Tracks[int]
	tracks.Merge(lagsOn(a0, a1, a2), scrape, forget)
	for i, state := range tracks.Matched(lagsOn(a0, a1, a2)) {
		*state = i + 1
	}

	// The same partitions: in place.
	scrape++
	tracks.Merge(lagsOn(a0, a1, a2), scrape, forget)
	require.Equal(t, []int{1, 2, 3}, matched(&tracks, lagsOn(a0, a1, a2)))

	// a1 missing and b0 new, after a0 matched in place: a1 is kept
	// between the lags' tracks, and Matched passes over it.
	scrape++
	lags := lagsOn(a0, a2, b0)
	tracks.Merge(lags, scrape, forget)
	require.Equal(t, []kafka.TopicPartition{a0, a1, a2, b0}, trackedPartitions(&tracks))
	require.Equal(t, []int{1, 3, 0}, matched(&tracks, lags))

	// a1 was last seen two scrapes ago: dropped now, however the scrape
	// before began.
	scrape++
	tracks.Merge(lags, scrape, forget)
	require.Equal(t, []kafka.TopicPartition{a0, a2, b0}, trackedPartitions(&tracks))
	require.Equal(t, []int{1, 3, 0}, matched(&tracks, lags))
}

// A tracker holds one track per (group, partition) pair of the cluster:
// the partition and scrape number fit in 12 bytes, and a track adds no
// pointer to its state's, so that the garbage collector does not scan
// tracks of pointer-free states.
func TestTrackHeaderSize(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("sizes are those of a 64-bit platform")
	}
	require.Equal(t, uintptr(16), unsafe.Sizeof(Track[int32]{}))
	track := reflect.TypeFor[Track[int64]]()
	for i := range track.NumField() {
		switch track.Field(i).Type.Kind() {
		case reflect.Pointer, reflect.String, reflect.Slice, reflect.Map, reflect.Interface, reflect.Chan, reflect.Func, reflect.UnsafePointer:
			t.Errorf("field %s of a track holds a pointer", track.Field(i).Name)
		}
	}
}
