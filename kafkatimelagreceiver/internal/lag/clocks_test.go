package lag

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/clocks"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// clocksFixture is a partition written 10 records a second, record o
// appended at t0 + (o + 0.5) x 100 ms, sampled every second from t0 (end
// offset 10k at t0 + k s) up to t0 + 10 s, and scraped at t0 + 10.5 s
// with a group committed at 55.
func clocksFixture(t *testing.T) (*Tabled, *timetable.Store, int64, func(offset int64) int64) {
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
	require.Equal(t, []int64{59, 60, 69, 70, 79, 80, 89, 90, 99}, missing[0].Near, "either side of the next two samples, and, the stamps not measured yet, of the newest")

	const behind = 2 * time.Second
	stamped := func(offset, producer int64) kafka.RecordTimestamp {
		ms := (appended(offset) - int64(behind)) / 1e6 * 1e6
		return kafka.RecordTimestamp{Offset: offset, Timestamp: ms, ByProducer: true, Producer: producer}
	}
	found := map[recordAt]kafka.RecordTimestamp{}
	for _, o := range append(missing[0].Offsets, missing[0].Near...) {
		found[recordAt{TopicPartition: tp, Offset: o}] = stamped(o, 7)
	}
	records.PutAll(readsOf(found), recordcache.Existed{End: map[kafka.TopicPartition]int64{tp: 100}, EndAt: at, Received: at}, Proof(idx, tables, at))

	got, method, ok := AppendTimes(idx, tables, records, at)(0, 55)
	require.True(t, ok)
	require.Equal(t, MethodRecord, method)
	require.InDelta(t, appended(55), got, float64(60*time.Millisecond), "dated %v off the truth", time.Duration(got-appended(55)))

	// The same record by a producer whose clock no read measured: its
	// timestamp clamped to the bracket's start, 0.55 s early.
	other := appendStamped()
	other.PutAll(readsOf(map[recordAt]kafka.RecordTimestamp{{TopicPartition: tp, Offset: 55}: stamped(55, 8)}),
		recordcache.Existed{End: map[kafka.TopicPartition]int64{tp: 100}, EndAt: at, Received: at}, Proof(idx, tables, at))
	got, _, _ = AppendTimes(idx, tables, other, at)(0, 55)
	require.Equal(t, appended(55)-int64(550*time.Millisecond), got)
}

// Records stamped by exact clocks move nothing, and a producer's clock no
// read measured for an hour is forgotten.
func TestExactClocksMoveNothingAndOldClocksAreForgotten(t *testing.T) {
	idx, tables, at, appended := clocksFixture(t)
	tp := idx.Parts[0].TopicPartition
	records := recordcache.New()
	found := map[recordAt]kafka.RecordTimestamp{}
	for _, o := range []int64{55, 59, 60, 69, 70} {
		found[recordAt{TopicPartition: tp, Offset: o}] = kafka.RecordTimestamp{Offset: o, Timestamp: appended(o), ByProducer: true, Producer: 7}
	}
	proof := Proof(idx, tables, at)
	records.PutAll(readsOf(found), recordcache.Existed{Received: at}, proof)
	require.Len(t, records.ClocksOf(tp), 1)
	require.Zero(t, moveOf(records.ClocksOf(tp), 7))
	got, _, _ := AppendTimes(idx, tables, records, at)(0, 55)
	require.Equal(t, appended(55), got)

	proof.At += int64(time.Hour) + 1
	records.PutAll(kafka.RecordReads{}, recordcache.Existed{Received: proof.At}, proof)
	require.Empty(t, records.ClocksOf(tp), "no read of the producer for over an hour")
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
	idx := NewIndex(&Snapshot{At: at, Committed: kafka.CommitsByGroup(commits), End: map[kafka.TopicPartition]int64{tp: 16}, Start: map[kafka.TopicPartition]int64{}}).ResolveTables(tables)

	records := appendStamped()
	missing, _ := OutOfTable(idx, at, tables, records)
	require.Len(t, missing, 1)
	require.Len(t, missing[0].Offsets, 16, "every group's record is older than the table")
	found := map[recordAt]kafka.RecordTimestamp{}
	for _, o := range missing[0].Offsets {
		found[recordAt{TopicPartition: tp, Offset: o}] = kafka.RecordTimestamp{Offset: o, Timestamp: appended(o) + 4*second, ByProducer: true, Producer: 9}
	}
	for scrape := range 3 {
		records.PutAll(readsOf(found), recordcache.Existed{End: map[kafka.TopicPartition]int64{tp: 16}, EndAt: at, Received: at}, Proof(idx, tables, at))
		est := Estimate(idx.Index, AppendTimes(idx, tables, records, at))
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
	existed := recordcache.Existed{End: map[kafka.TopicPartition]int64{tp: 100}, EndAt: at, Received: at}
	proof := Proof(idx, tables, at)
	exact := map[recordAt]kafka.RecordTimestamp{}
	for _, o := range []int64{55, 59, 60, 69, 70} {
		exact[recordAt{TopicPartition: tp, Offset: o}] = kafka.RecordTimestamp{Offset: o, Timestamp: appended(o), ByProducer: true, Producer: 7}
	}
	for range 4 { // enough reads to measure the first process's clock
		records.PutAll(readsOf(exact), existed, proof)
	}
	before, _, ok := AppendTimes(idx, tables, records, at)(0, 55)
	require.True(t, ok)
	require.Equal(t, appended(55), before)

	behind := int64(550 * time.Millisecond)
	restarted := map[recordAt]kafka.RecordTimestamp{}
	for _, o := range []int64{79, 80} {
		restarted[recordAt{TopicPartition: tp, Offset: o}] = kafka.RecordTimestamp{Offset: o, Timestamp: appended(o) - behind, ByProducer: true, Producer: 7}
	}
	records.PutAll(readsOf(restarted), existed, proof)
	require.NotZero(t, moveOf(records.ClocksOf(tp), 7), "the new process's clock is measured")
	after, _, ok := AppendTimes(idx, tables, records, at)(0, 55)
	require.True(t, ok)
	require.Equal(t, before, after, "re-dated %v by the new process's clock", time.Duration(after-before))
}

// moveOf is how far the clocks move a record of producer.
func moveOf(pc clocks.Partition, producer int64) int64 {
	return pc.Shift(kafka.RecordTimestamp{ByProducer: true, Producer: producer}).By()
}
