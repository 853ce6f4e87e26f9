package clocks

import (
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

func TestProducerClockOffset(t *testing.T) {
	s := func(seconds float64) int64 { return int64(seconds * float64(time.Second)) }
	type bounds struct{ lo, hi int64 }
	for _, tt := range []struct {
		name  string
		reads []bounds
		want  int64
	}{
		{name: "a read that allows an exact clock", reads: []bounds{{s(-3), s(7)}}, want: 0},
		{name: "reads that prove it 1.5 s behind, narrowing", reads: []bounds{{s(1.2), s(3)}, {s(0.5), s(1.6)}}, want: s(1.2)},
		{name: "reads that pin it: the middle", reads: []bounds{{s(1.4), s(3)}, {s(1), s(1.55)}}, want: s(1.475)},
		{name: "reads that prove it 0.3 s ahead", reads: []bounds{{s(-2), s(-0.25)}}, want: s(-0.25)},
		{name: "a range that many reads leave wide: the middle", reads: slices.Repeat([]bounds{{s(0.8), s(1.8)}}, clockSettled), want: s(1.3)},
		{name: "a range many reads leave wider than a second: closest to none, not seconds moved that no read shows", reads: slices.Repeat([]bounds{{s(-4.2), s(-0.15)}}, clockSettled), want: s(-0.15)},
		{name: "reads disagreeing within the tolerance: the middle", reads: []bounds{{s(1.5), s(2)}, {s(1), s(1.45)}}, want: s(1.475)},
		{name: "a clock stepped past the tolerance starts over", reads: []bounds{{s(1.5), s(2)}, {s(-0.5), s(-0.2)}}, want: s(-0.2)},
		{name: "an offset within the resolution is none", reads: []bounds{{s(0.05), s(1)}}, want: 0},
		{name: "pinned within the resolution is none", reads: []bounds{{s(0.02), s(0.15)}}, want: 0},
		{name: "a record older than its table bounds it from above only: no record is moved earlier than its stamp", reads: []bounds{{unbounded, s(-0.5)}}, want: 0},
		{name: "a range open below moves nothing however many reads", reads: slices.Repeat([]bounds{{unbounded, s(-4)}}, 2*clockSettled), want: 0},
		{name: "a range open below, then bounded: the bounds", reads: append(slices.Repeat([]bounds{{unbounded, s(-4)}}, clockSettled), bounds{s(-4.2), s(-3)}), want: -4_100_000_000},
		{name: "first reads of a jittery producer disagreeing by 0.5 s: the middle, not a restart", reads: []bounds{{s(0.6), s(2)}, {s(-1), s(0.1)}}, want: s(0.35)},
		{name: "a clock measured exact, then 0.55 s behind: a new clock", reads: append(slices.Repeat([]bounds{{s(-0.05), s(0.05)}}, clockKnown), bounds{s(0.5), s(0.6)}), want: s(0.55)},
		{name: "a spread measured 1 s wide: a read 0.6 s out is the same clock", reads: []bounds{{s(1), s(2)}, {s(-1), s(0)}, {s(0.9), s(2)}, {s(-1), s(0.1)}, {s(1.6), s(3)}}, want: s(0.8)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var clocks Partition
			for i, b := range tt.reads {
				clocks, _, _ = clocks.Learn(7, int64(i), b.lo, b.hi, int64(i))
			}
			require.Len(t, clocks, 1)
			require.Equal(t, tt.want, moveOf(clocks, 7))
			require.Zero(t, moveOf(clocks, 8), "another producer's clock is not measured")
			move := clocks.Shift(kafka.RecordTimestamp{Producer: 7}).By()
			require.Zero(t, move, "a timestamp not of a producer's clock (LogAppendTime) is not moved")
		})
	}
}

func TestOffCountsTheClocksMoved(t *testing.T) {
	second := int64(time.Second)
	orders := learnClocks(
		clockRead{1, 2 * second, 3 * second},                       // 2 s behind
		clockRead{2, -second, second},                              // allows an exact clock
		clockRead{3, -second/2 - second/20, -second/2 + second/20}, // pinned 0.5 s ahead
	)
	audit := learnClocks(clockRead{1, second / 20, second}) // within the resolution
	off, largest := orders.Off()
	require.Equal(t, 2, off)
	require.Equal(t, 2*time.Second, largest)
	off, largest = audit.Off()
	require.Zero(t, off)
	require.Zero(t, largest)
}

func TestPartitionClocksKeepTheProducersReadLatest(t *testing.T) {
	second := int64(time.Second)
	var clocks Partition
	for producer := range int64(clocksPerPartition + 1) {
		clocks, _, _ = clocks.Learn(producer, producer, 2*second, 3*second, producer)
	}
	require.Len(t, clocks, clocksPerPartition)
	require.Zero(t, moveOf(clocks, 0), "the producer read longest ago made room")
	for producer := int64(1); producer <= clocksPerPartition; producer++ {
		require.Equal(t, 2*second, moveOf(clocks, producer))
	}
}

// clockRead is one read's bounds on a producer's clock offset.
type clockRead struct{ producer, lo, hi int64 }

// learnClocks is a partition's clocks after reads, in order.
func learnClocks(reads ...clockRead) Partition {
	var clocks Partition
	for i, r := range reads {
		clocks, _, _ = clocks.Learn(r.producer, int64(i), r.lo, r.hi, int64(i))
	}
	return clocks
}

// BenchmarkClocksMemory measures what producers' clocks hold: 100,000
// partitions, each written by clocksPerPartition producers read once.
func BenchmarkClocksMemory(b *testing.B) {
	const partitions = 100_000
	for range b.N {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		byPartition := map[kafka.TopicPartition]Partition{}
		for p := range int32(partitions) {
			tp := kafka.TopicPartition{Topic: "topic-" + strconv.Itoa(int(p/100)), Partition: p % 100}
			var clocks Partition
			for producer := range int64(clocksPerPartition) {
				clocks, _, _ = clocks.Learn(producer, 0, int64(time.Second), 2*int64(time.Second), 0)
			}
			byPartition[tp] = clocks
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB")
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(partitions*clocksPerPartition), "B/clock")
		runtime.KeepAlive(byPartition)
	}
}

// TestSpreadClockPlacesRecordsByTheTable: where a producer's delays spread
// over at least half a record's bracket, the record is dated at its place
// among the bracket's records, kept within what its timestamp allows.
func TestSpreadClockPlacesRecordsByTheTable(t *testing.T) {
	s := func(seconds float64) int64 { return int64(seconds * float64(time.Second)) }
	spread := Shift{by: s(0.3), spread: true, from: s(-0.3), to: s(0.7)}
	for _, tt := range []struct {
		name                 string
		move                 Shift
		expected, ts, lo, hi int64
		want                 int64
		placed               bool
	}{
		{name: "the place, inside the window", move: spread, expected: s(100.05), ts: s(99.8), lo: s(100), hi: s(101), want: s(100.05), placed: true},
		{name: "a place before the window is kept within it", move: spread, expected: s(100.05), ts: s(100.6), lo: s(100), hi: s(101), want: s(100.3), placed: true},
		{name: "a place after the window is kept within it", move: spread, expected: s(100.9), ts: s(99.5), lo: s(100), hi: s(101), want: s(100.2), placed: true},
		{name: "a bracket over twice the spread: the timestamp dates it", move: spread, expected: s(105), ts: s(104), lo: s(100), hi: s(110)},
		{name: "no spread: the timestamp dates it", move: Shift{by: s(0.3)}, expected: s(100.05), ts: s(99.8), lo: s(100), hi: s(101)},
		{name: "a window that misses the bracket", move: spread, expected: s(100.05), ts: s(98), lo: s(100), hi: s(101)},
	} {
		got, placed := tt.move.Place(tt.expected, tt.ts, tt.lo, tt.hi)
		require.Equal(t, tt.placed, placed, tt.name)
		if placed {
			require.Equal(t, tt.want, got, tt.name)
		}
	}
}

// TestClocksApartNeedTwoProducersMeasuredApart: a partition's records are
// read rather than dated from the time index once reads measured two of
// its producers' clocks more than clocksApartBy apart; one producer off,
// or two close together, or the index's own clock, are not.
func TestClocksApartNeedTwoProducersMeasuredApart(t *testing.T) {
	s := func(seconds float64) int64 { return int64(seconds * float64(time.Second)) }
	measured := func(offsets ...int64) Partition {
		var clocks Partition
		for i, o := range offsets {
			producer := int64(i)
			if i == 0 {
				producer = TimeIndexClock
			}
			c := newClock(producer, 0, o-s(0.01), o+s(0.01), 0)
			c.reads = clockSettled
			clocks = append(clocks, c)
		}
		return clocks
	}
	require.False(t, measured(s(5)).Apart(), "the index's clock alone")
	require.False(t, measured(0, s(1.5)).Apart(), "one producer off")
	require.False(t, measured(0, s(1.5), s(1.6)).Apart(), "two producers 0.1 s apart")
	require.True(t, measured(0, s(1.5), s(-0.3)).Apart(), "two producers 1.8 s apart")
}

// moveOf is how far the clocks move a record of producer.
func moveOf(clocks Partition, producer int64) int64 {
	return clocks.Shift(kafka.RecordTimestamp{ByProducer: true, Producer: producer}).By()
}
