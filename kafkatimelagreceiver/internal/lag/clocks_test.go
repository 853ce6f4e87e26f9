package lag

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
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
		{name: "reads disagreeing within the tolerance: the middle", reads: []bounds{{s(1.5), s(2)}, {s(1), s(1.45)}}, want: s(1.475)},
		{name: "a clock stepped past the tolerance starts over", reads: []bounds{{s(1.5), s(2)}, {s(-0.5), s(-0.2)}}, want: s(-0.2)},
		{name: "an offset within the resolution is none", reads: []bounds{{s(0.05), s(1)}}, want: 0},
		{name: "pinned within the resolution is none", reads: []bounds{{s(0.02), s(0.15)}}, want: 0},
		{name: "a record older than its table bounds it from above only", reads: []bounds{{unbounded, s(-0.5)}}, want: s(-0.5)},
		{name: "a range open below stays at its bound however many reads", reads: slices.Repeat([]bounds{{unbounded, s(-4)}}, 2*clockSettled), want: s(-4)},
		{name: "a range open below, then bounded: the bounds", reads: append(slices.Repeat([]bounds{{unbounded, s(-4)}}, clockSettled), bounds{s(-4.2), s(-3)}), want: -4_100_000_000},
		{name: "first reads of a jittery producer disagreeing by 0.5 s: the middle, not a restart", reads: []bounds{{s(0.6), s(2)}, {s(-1), s(0.1)}}, want: s(0.35)},
		{name: "a clock measured exact, then 0.55 s behind: a new clock", reads: append(slices.Repeat([]bounds{{s(-0.05), s(0.05)}}, clockKnown), bounds{s(0.5), s(0.6)}), want: s(0.55)},
		{name: "a spread measured 1 s wide: a read 0.6 s out is the same clock", reads: []bounds{{s(1), s(2)}, {s(-1), s(0)}, {s(0.9), s(2)}, {s(-1), s(0.1)}, {s(1.6), s(3)}}, want: s(0.8)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var clocks partitionClocks
			for i, b := range tt.reads {
				clocks, _, _ = clocks.learn(7, b.lo, b.hi, int64(i))
			}
			require.Len(t, clocks, 1)
			require.Equal(t, tt.want, moveOf(clocks, 7))
			require.Zero(t, moveOf(clocks, 8), "another producer's clock is not measured")
			move := clocks.move(kafka.RecordTimestamp{Producer: 7}).by
			require.Zero(t, move, "a timestamp not of a producer's clock (LogAppendTime) is not moved")
		})
	}
}

func TestClocksOffCountsTheClocksMoved(t *testing.T) {
	second := int64(time.Second)
	records := NewRecordTimes()
	orders, audit := kafka.TopicPartition{Topic: "orders"}, kafka.TopicPartition{Topic: "audit"}
	records.clocks[orders] = learnClocks(
		clockRead{1, 2 * second, 3 * second},                       // 2 s behind
		clockRead{2, -second, second},                              // allows an exact clock
		clockRead{3, -second/2 - second/20, -second/2 + second/20}, // pinned 0.5 s ahead
	)
	records.clocks[audit] = learnClocks(clockRead{1, second / 20, second}) // within the resolution
	clocks, largest := records.ClocksOff()
	require.Equal(t, 2, clocks)
	require.Equal(t, 2*time.Second, largest)
}

func TestPartitionClocksKeepTheProducersReadLatest(t *testing.T) {
	second := int64(time.Second)
	var clocks partitionClocks
	for producer := range int64(clocksPerPartition + 1) {
		clocks, _, _ = clocks.learn(producer, 2*second, 3*second, producer)
	}
	require.Len(t, clocks, clocksPerPartition)
	require.Zero(t, moveOf(clocks, 0), "the producer read longest ago made room")
	for producer := int64(1); producer <= clocksPerPartition; producer++ {
		require.Equal(t, 2*second, moveOf(clocks, producer))
	}
}

// clocksFixture is a partition written 10 records a second, record o
// appended at t0 + (o + 0.5) x 100 ms, sampled every second from t0 (end
// offset 10k at t0 + k s) up to t0 + 10 s, and scraped at t0 + 10.5 s
// with a group committed at 55.
func clocksFixture(t *testing.T) (*Index, *timetable.Store, int64, func(offset int64) int64) {
	t.Helper()
	tp := kafka.TopicPartition{Topic: "orders", Partition: 0}
	t0 := time.Unix(1_700_000_000, 0).UnixNano()
	var samples []timetable.Sample
	for k := range int64(11) {
		samples = append(samples, timetable.Sample{Offset: 10 * k, At: t0 + k*int64(time.Second)})
	}
	at := t0 + int64(10500*time.Millisecond)
	idx, tables := partitionFixture(t, tp, 64, 0, samples, at, 100, map[string]int64{"g": 55})
	appended := func(offset int64) int64 { return t0 + (2*offset+1)*int64(50*time.Millisecond) }
	return idx, tables, at, appended
}

// A producer whose clock is 2 s behind: the records on either side of the
// samples past the group's (Near) show it, and the group's record is dated
// by its timestamp moved by that, not clamped to its bracket's start.
func TestRecordDatedByItsProducersMeasuredClock(t *testing.T) {
	idx, tables, at, appended := clocksFixture(t)
	tp := idx.Parts[0].TopicPartition
	records := appendStamped()

	missing, _ := OutOfTable(idx, at, tables, records)
	require.Len(t, missing, 1)
	require.Equal(t, []int64{55}, missing[0].Offsets, "the group's bracket (1 s) is coarse against its time lag (5 s)")
	require.Equal(t, []int64{59, 60, 69, 70}, missing[0].Near, "either side of the next two samples")

	const behind = 2 * time.Second
	stamped := func(offset, producer int64) kafka.RecordTimestamp {
		ms := (appended(offset) - int64(behind)) / 1e6 * 1e6
		return kafka.RecordTimestamp{Offset: offset, Timestamp: ms, ByProducer: true, Producer: producer}
	}
	found := map[recordAt]kafka.RecordTimestamp{}
	for _, o := range append(missing[0].Offsets, missing[0].Near...) {
		found[recordAt{TopicPartition: tp, Offset: o}] = stamped(o, 7)
	}
	records.PutAll(readsOf(found), Existed{End: map[kafka.TopicPartition]int64{tp: 100}, EndAt: at, Received: at}, Proof{Index: idx, Tables: tables, At: at})

	got, method, ok := AppendTimes(tables, records, at)(&idx.Parts[0], 55)
	require.True(t, ok)
	require.Equal(t, MethodRecord, method)
	require.InDelta(t, appended(55), got, float64(60*time.Millisecond), "dated %v off the truth", time.Duration(got-appended(55)))

	// The same record by a producer whose clock no read measured: its
	// timestamp clamped to the bracket's start, 0.55 s early.
	other := appendStamped()
	other.PutAll(readsOf(map[recordAt]kafka.RecordTimestamp{{TopicPartition: tp, Offset: 55}: stamped(55, 8)}),
		Existed{End: map[kafka.TopicPartition]int64{tp: 100}, EndAt: at, Received: at}, Proof{Index: idx, Tables: tables, At: at})
	got, _, _ = AppendTimes(tables, other, at)(&idx.Parts[0], 55)
	require.Equal(t, appended(55)-int64(550*time.Millisecond), got)
}

// Records stamped by exact clocks move nothing, and a producer's clock no
// read measured for an hour is forgotten.
func TestExactClocksMoveNothingAndOldClocksAreForgotten(t *testing.T) {
	idx, tables, at, appended := clocksFixture(t)
	tp := idx.Parts[0].TopicPartition
	records := NewRecordTimes()
	found := map[recordAt]kafka.RecordTimestamp{}
	for _, o := range []int64{55, 59, 60, 69, 70} {
		found[recordAt{TopicPartition: tp, Offset: o}] = kafka.RecordTimestamp{Offset: o, Timestamp: appended(o), ByProducer: true, Producer: 7}
	}
	proof := Proof{Index: idx, Tables: tables, At: at}
	records.PutAll(readsOf(found), Existed{Received: at}, proof)
	require.Len(t, records.clocks[tp], 1)
	require.Zero(t, moveOf(records.clocks[tp], 7))
	got, _, _ := AppendTimes(tables, records, at)(&idx.Parts[0], 55)
	require.Equal(t, appended(55), got)

	proof.At += int64(time.Hour) + 1
	records.PutAll(kafka.RecordReads{}, Existed{Received: proof.At}, proof)
	require.Empty(t, records.clocks, "no read of the producer for over an hour")
}

func TestForgetDropsThePartitionsClocks(t *testing.T) {
	records := NewRecordTimes()
	tp := kafka.TopicPartition{Topic: "orders"}
	records.clocks[tp] = learnClocks(clockRead{7, 0, 1})
	records.Forget([]kafka.TopicPartition{tp})
	require.Empty(t, records.clocks, fmt.Sprint(records.clocks))
}

// clockRead is one read's bounds on a producer's clock offset.
type clockRead struct{ producer, lo, hi int64 }

// learnClocks is a partition's clocks after reads, in order.
func learnClocks(reads ...clockRead) partitionClocks {
	var clocks partitionClocks
	for i, r := range reads {
		clocks, _, _ = clocks.learn(r.producer, r.lo, r.hi, int64(i))
	}
	return clocks
}

// moveOf is how far the clocks move a record of producer.
func moveOf(clocks partitionClocks, producer int64) int64 {
	move := clocks.move(kafka.RecordTimestamp{ByProducer: true, Producer: producer}).by
	return move
}

// A fresh start: the table's first point is newer than the records the
// groups sit on, so every read bounds its producer's clock from above
// only. A producer whose clock runs 4 s ahead stamps 16 such records, and
// 16 groups are committed on them: their clock is never taken from the
// middle of a range open below, and no date leaves what the table proves.
func TestClockAheadAtColdStartDatesNothingBeforeTheTable(t *testing.T) {
	tp := kafka.TopicPartition{Topic: "orders", Partition: 0}
	t0 := time.Unix(1_700_000_000, 0).UnixNano()
	second := int64(time.Second)
	// The records 0-15 were appended at t0 - 5 s + o x 100 ms; the table
	// starts at t0, end offset 16, and the scrape reads 16 again at t0 + 1 s.
	appended := func(o int64) int64 { return t0 - 5*second + o*second/10 }
	at := t0 + second
	committed := map[string]int64{}
	for o := range int64(16) {
		committed[fmt.Sprint("g", o)] = o
	}
	tables := timetable.NewStore(64, 0, nil)
	tables.Track(map[kafka.TopicPartition]struct{}{tp: {}}, time.Time{}, 0)
	read := time.Unix(0, t0)
	tables.Record(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{tp: 16}, Sent: read, Received: read})
	commits := map[string]map[kafka.TopicPartition]int64{}
	for g, o := range committed {
		commits[g] = map[kafka.TopicPartition]int64{tp: o}
	}
	idx := NewIndex(&Snapshot{At: at, Committed: kafka.CommitsByGroup(commits), End: map[kafka.TopicPartition]int64{tp: 16}, Start: map[kafka.TopicPartition]int64{}})
	idx.ResolveTables(tables)

	records := appendStamped()
	missing, _ := OutOfTable(idx, at, tables, records)
	require.Len(t, missing, 1)
	require.Len(t, missing[0].Offsets, 16, "every group's record is older than the table")
	found := map[recordAt]kafka.RecordTimestamp{}
	for _, o := range missing[0].Offsets {
		found[recordAt{TopicPartition: tp, Offset: o}] = kafka.RecordTimestamp{Offset: o, Timestamp: appended(o) + 4*second, ByProducer: true, Producer: 9}
	}
	for scrape := range 3 {
		records.PutAll(readsOf(found), Existed{End: map[kafka.TopicPartition]int64{tp: 16}, EndAt: at, Received: at}, Proof{Index: idx, Tables: tables, At: at})
		est := Estimate(idx, AppendTimes(tables, records, at))
		for g, o := range committed {
			lags := est.GroupLags(nil, g, at)
			require.Len(t, lags, 1)
			pl := lags[0]
			require.True(t, pl.HasTimeLag, "scrape %d, offset %d", scrape, o)
			// Appended 5 s - o x 100 ms before t0, stamped 4 s later: the
			// table proves it appended by t0, so it is at least 1 s old;
			// its stamp says 1 s - o x 100 ms, clamped to the table's 1 s.
			require.GreaterOrEqual(t, pl.TimeLag, 1.0, "scrape %d, offset %d", scrape, o)
			require.LessOrEqual(t, pl.TimeLag, 6.0, "scrape %d, offset %d: a time lag of %.0f s", scrape, o, pl.TimeLag)
		}
	}
	clocks, largest := records.ClocksOff()
	require.LessOrEqual(t, clocks, 1)
	require.Less(t, largest, 10*time.Second, "the clock offset measured")
}

// A producer ID reused by another process (a restarted transactional
// producer) whose clock is 0.55 s behind the first's: the first
// process's record, read and remembered before, keeps its date.
func TestReusedProducerIDDoesNotRedateRecordsReadBefore(t *testing.T) {
	idx, tables, at, appended := clocksFixture(t)
	tp := idx.Parts[0].TopicPartition
	records := appendStamped()
	existed := Existed{End: map[kafka.TopicPartition]int64{tp: 100}, EndAt: at, Received: at}
	proof := Proof{Index: idx, Tables: tables, At: at}
	exact := map[recordAt]kafka.RecordTimestamp{}
	for _, o := range []int64{55, 59, 60, 69, 70} {
		exact[recordAt{TopicPartition: tp, Offset: o}] = kafka.RecordTimestamp{Offset: o, Timestamp: appended(o), ByProducer: true, Producer: 7}
	}
	for range clockKnown {
		records.PutAll(readsOf(exact), existed, proof)
	}
	before, _, ok := AppendTimes(tables, records, at)(&idx.Parts[0], 55)
	require.True(t, ok)
	require.Equal(t, appended(55), before)

	behind := int64(550 * time.Millisecond)
	restarted := map[recordAt]kafka.RecordTimestamp{}
	for _, o := range []int64{79, 80} {
		restarted[recordAt{TopicPartition: tp, Offset: o}] = kafka.RecordTimestamp{Offset: o, Timestamp: appended(o) - behind, ByProducer: true, Producer: 7}
	}
	records.PutAll(readsOf(restarted), existed, proof)
	require.NotZero(t, moveOf(records.clocks[tp], 7), "the new process's clock is measured")
	after, _, ok := AppendTimes(tables, records, at)(&idx.Parts[0], 55)
	require.True(t, ok)
	require.Equal(t, before, after, "re-dated %v by the new process's clock", time.Duration(after-before))
}

// BenchmarkClocksMemory measures what producers' clocks hold: 100,000
// partitions, each written by clocksPerPartition producers read once.
func BenchmarkClocksMemory(b *testing.B) {
	const partitions = 100_000
	for range b.N {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		records := NewRecordTimes()
		for p := range int32(partitions) {
			tp := kafka.TopicPartition{Topic: "topic-" + strconv.Itoa(int(p/100)), Partition: p % 100}
			var clocks partitionClocks
			for producer := range int64(clocksPerPartition) {
				clocks, _, _ = clocks.learn(producer, int64(time.Second), 2*int64(time.Second), 0)
			}
			records.clocks[tp] = clocks
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB")
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(partitions*clocksPerPartition), "B/clock")
		runtime.KeepAlive(records)
	}
}

// TestSpreadClockPlacesRecordsByTheTable: where a producer's delays spread
// over at least half a record's bracket, the record is dated at its place
// among the bracket's records, kept within what its timestamp allows.
func TestSpreadClockPlacesRecordsByTheTable(t *testing.T) {
	s := func(seconds float64) int64 { return int64(seconds * float64(time.Second)) }
	spread := clockMove{by: s(0.3), spread: true, from: s(-0.3), to: s(0.7)}
	for _, tt := range []struct {
		name                 string
		move                 clockMove
		expected, ts, lo, hi int64
		want                 int64
		placed               bool
	}{
		{name: "the place, inside the window", move: spread, expected: s(100.05), ts: s(99.8), lo: s(100), hi: s(101), want: s(100.05), placed: true},
		{name: "a place before the window is kept within it", move: spread, expected: s(100.05), ts: s(100.6), lo: s(100), hi: s(101), want: s(100.3), placed: true},
		{name: "a place after the window is kept within it", move: spread, expected: s(100.9), ts: s(99.5), lo: s(100), hi: s(101), want: s(100.2), placed: true},
		{name: "a bracket over twice the spread: the timestamp dates it", move: spread, expected: s(105), ts: s(104), lo: s(100), hi: s(110)},
		{name: "no spread: the timestamp dates it", move: clockMove{by: s(0.3)}, expected: s(100.05), ts: s(99.8), lo: s(100), hi: s(101)},
		{name: "a window that misses the bracket", move: spread, expected: s(100.05), ts: s(98), lo: s(100), hi: s(101)},
	} {
		got, placed := tt.move.place(tt.expected, tt.ts, tt.lo, tt.hi)
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
	tp := kafka.TopicPartition{Topic: "t"}
	measured := func(offsets ...int64) *RecordTimes {
		r := NewRecordTimes()
		var clocks partitionClocks
		for i, o := range offsets {
			producer := int64(i)
			if i == 0 {
				producer = TimeIndexClock
			}
			c := newProducerClock(producer, o-s(0.01), o+s(0.01), 0)
			c.reads = clockSettled
			clocks = append(clocks, c)
		}
		r.clocks[tp] = clocks
		return r
	}
	require.False(t, measured(s(5)).ClocksApart(tp), "the index's clock alone")
	require.False(t, measured(0, s(1.5)).ClocksApart(tp), "one producer off")
	require.False(t, measured(0, s(1.5), s(1.6)).ClocksApart(tp), "two producers 0.1 s apart")
	require.True(t, measured(0, s(1.5), s(-0.3)).ClocksApart(tp), "two producers 1.8 s apart")
}
