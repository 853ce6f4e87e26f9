package lag

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/clocks"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// partitionFixture is one partition, tp, whose table (up to maxSamples
// points, gaps after maxGap) read the samples, scraped at at with its end
// offset at end and the groups committed where committed says.
func partitionFixture(t *testing.T, tp kafka.TopicPartition, maxSamples int, maxGap time.Duration, samples []timetable.Sample, at, end int64, committed map[string]int64) (*Tabled, *timetable.Store) {
	t.Helper()
	tables := timetable.NewStore(maxSamples, maxGap, nil)
	tables.Track(map[kafka.TopicPartition]struct{}{tp: {}}, time.Time{}, 0)
	for _, s := range samples {
		read := time.Unix(0, s.At)
		tables.Record(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{tp: s.Offset}, Sent: read, Received: read})
	}
	commits := map[string]map[kafka.TopicPartition]int64{}
	for group, offset := range committed {
		commits[group] = map[kafka.TopicPartition]int64{tp: offset}
	}
	snap := &Snapshot{
		At:        at,
		Committed: kafka.CommitsByGroup(commits),
		End:       map[kafka.TopicPartition]int64{tp: end},
		Start:     map[kafka.TopicPartition]int64{},
	}
	idx := NewIndex(snap).ResolveTables(tables)
	return idx, tables
}

// recordsFixture is one partition whose table holds end offset 100 at t0
// and 200 at t0+100s, read again at 250 at t0+150s by the scrape; groups
// are committed older than the table, inside it and at its end.
func recordsFixture(t *testing.T, maxGap time.Duration) (*Tabled, *timetable.Store, int64, kafka.TopicPartition) {
	t.Helper()
	tp := kafka.TopicPartition{Topic: "orders", Partition: 0}
	t0 := time.Unix(1_700_000_000, 0).UnixNano()
	at := t0 + int64(150*time.Second)
	idx, tables := partitionFixture(t, tp, 16, maxGap,
		[]timetable.Sample{{Offset: 100, At: t0}, {Offset: 200, At: t0 + int64(100*time.Second)}}, at, 250,
		map[string]int64{"old": 50, "older": 20, "in-table": 150, "caught-up": 250})
	return idx, tables, at, tp
}

func TestOutOfTableListsWhatNoTableDates(t *testing.T) {
	idx, tables, at, tp := recordsFixture(t, 0)
	records := recordcache.New()

	missing, used := OutOfTable(idx, at, tables, records)
	require.Equal(t, []recordAt{
		{TopicPartition: tp, Offset: 20}, // furthest behind first
		{TopicPartition: tp, Offset: 50},
		// Dated by the table, but its bracket (100 s) is as wide as the
		// time lag it yields (about 100 s): last.
		{TopicPartition: tp, Offset: 150},
	}, recordsOf(missing))
	require.Equal(t, 3, used.Len())

	records.PutAll(readsOf(map[recordAt]kafka.RecordTimestamp{{TopicPartition: tp, Offset: 50}: {Offset: 50, Timestamp: 1}}), recordcache.Existed{Received: at}, recordcache.Proof{})
	missing, used = OutOfTable(idx, at, tables, records)
	require.Equal(t, []recordAt{{TopicPartition: tp, Offset: 20}, {TopicPartition: tp, Offset: 150}}, recordsOf(missing), "a record read before is not read again")
	require.Equal(t, 3, used.Len(), "but it is still in use")
}

func TestAppendTimesTableThenRecord(t *testing.T) {
	idx, tables, at, tp := recordsFixture(t, 0)
	records := appendStamped()
	appendTime := AppendTimes(idx, tables, records, at)
	const p = 0 // the fixture's partition
	t0 := time.Unix(1_700_000_000, 0).UnixNano()

	got, method, ok := appendTime(p, 150)
	require.True(t, ok)
	require.Equal(t, MethodTable, method)
	require.Equal(t, t0+int64(100*time.Second)*51/101, got,
		"the 51st of the 100 records between 100@t0 and 200@t0+100s: expected 51/101 of the way")

	_, method, ok = appendTime(p, 50)
	require.False(t, ok, "older than the table and not read: no estimate")
	require.Equal(t, MethodNone, method)

	records.PutAll(readsOf(map[recordAt]kafka.RecordTimestamp{{TopicPartition: tp, Offset: 50}: {Offset: 50, Timestamp: t0 - int64(time.Hour)}}), recordcache.Existed{Received: at}, recordcache.Proof{})
	got, method, ok = appendTime(p, 50)
	require.True(t, ok)
	require.Equal(t, MethodRecord, method)
	require.Equal(t, t0-int64(time.Hour), got)

	records.Forget([]kafka.TopicPartition{tp})
	_, _, ok = appendTime(p, 50)
	require.False(t, ok, "forgotten with its partition's log")
}

// In a stretch the sampler did not watch (here 100 s between two points
// with a 30 s bound), the record's own timestamp wins when it was read; the
// record's expected place in the bracket is the fallback.
func TestAppendTimesInGap(t *testing.T) {
	idx, tables, at, tp := recordsFixture(t, 30*time.Second)
	records := appendStamped()
	const p = 0 // the fixture's partition
	t0 := time.Unix(1_700_000_000, 0).UnixNano()

	missing, _ := OutOfTable(idx, at, tables, records)
	require.Contains(t, recordsOf(missing), recordAt{TopicPartition: tp, Offset: 150}, "an offset in a gap is read")

	got, method, ok := AppendTimes(idx, tables, records, at)(p, 150)
	require.True(t, ok)
	require.Equal(t, MethodTable, method, "not read: its expected place in the bracket")
	require.Equal(t, t0+int64(100*time.Second)*51/101, got)

	records.PutAll(readsOf(map[recordAt]kafka.RecordTimestamp{{TopicPartition: tp, Offset: 150}: {Offset: 150, Timestamp: t0 + int64(90*time.Second)}}), recordcache.Existed{Received: at}, recordcache.Proof{})
	got, method, ok = AppendTimes(idx, tables, records, at)(p, 150)
	require.True(t, ok)
	require.Equal(t, MethodRecord, method)
	require.Equal(t, t0+int64(90*time.Second), got)

	records.Retain(recordcache.Used{})
	_, method, _ = AppendTimes(idx, tables, records, at)(p, 150)
	require.Equal(t, MethodTable, method, "entries no longer in use are dropped")
}

// A record older than the table cannot have been appended after the table's
// oldest point, whatever its producer's clock said; nor after the scrape
// when there is no table at all. One stamped after its read gives no time.
func TestRecordTimestampOlderThanTableIsNoNewerThanItsOldestPoint(t *testing.T) {
	idx, tables, at, tp := recordsFixture(t, 0)
	records := appendStamped()
	const p = 0 // the fixture's partition
	t0 := time.Unix(1_700_000_000, 0).UnixNano()

	records.PutAll(readsOf(map[recordAt]kafka.RecordTimestamp{{TopicPartition: tp, Offset: 50}: {Offset: 50, Timestamp: t0 + int64(2*time.Minute)}}), recordcache.Existed{Received: at}, recordcache.Proof{})
	got, method, ok := AppendTimes(idx, tables, records, at)(p, 50)
	require.True(t, ok)
	require.Equal(t, MethodRecord, method)
	require.Equal(t, t0, got, "a producer clock two minutes ahead is clamped to the oldest point (100@t0)")

	untimed := records.PutAll(readsOf(map[recordAt]kafka.RecordTimestamp{{TopicPartition: tp, Offset: 50}: {Offset: 50, Timestamp: t0 + int64(time.Hour)}}), recordcache.Existed{Received: at}, recordcache.Proof{})
	require.Equal(t, recordcache.Untimed{Future: 1}, untimed)
	_, method, ok = AppendTimes(idx, tables, records, at)(p, 50)
	require.False(t, ok, "an hour ahead, after its read: no time, and older than the table")
	require.Equal(t, MethodNone, method)

	records.PutAll(readsOf(map[recordAt]kafka.RecordTimestamp{{TopicPartition: tp, Offset: 20}: {Offset: 20, Timestamp: t0 - int64(time.Hour)}}), recordcache.Existed{Received: at}, recordcache.Proof{})
	got, _, _ = AppendTimes(idx, tables, records, at)(p, 20)
	require.Equal(t, t0-int64(time.Hour), got, "an older timestamp is within what the table proves")

	// Read a moment after the scrape's end offsets, stamped between the
	// two.
	untracked := kafka.TopicPartition{Topic: "untracked"}
	untrackedIdx := NewIndex(&Snapshot{At: at, End: map[kafka.TopicPartition]int64{untracked: 10}}).ResolveTables(tables)
	records.PutAll(readsOf(map[recordAt]kafka.RecordTimestamp{{TopicPartition: untracked, Offset: 5}: {Offset: 5, Timestamp: at + int64(5*time.Millisecond)}}), recordcache.Existed{Received: at + int64(10*time.Millisecond)}, recordcache.Proof{})
	got, _, ok = AppendTimes(untrackedIdx, tables, records, at)(0, 5)
	require.True(t, ok)
	require.Equal(t, at, got, "without a table, never after the scrape")
}

// Inside a stretch the sampler did not watch, the table still proves the
// record was appended between the stretch's two points: a timestamp outside
// them is clamped to them, and one after its read gives no time: the
// record's expected place in the stretch dates it.
func TestRecordTimestampInGapStaysInsideTheGap(t *testing.T) {
	idx, tables, at, tp := recordsFixture(t, 30*time.Second)
	records := appendStamped()
	const p = 0 // the fixture's partition
	t0 := time.Unix(1_700_000_000, 0).UnixNano()
	in150 := recordAt{TopicPartition: tp, Offset: 150}

	records.PutAll(readsOf(map[recordAt]kafka.RecordTimestamp{in150: {Offset: 150, Timestamp: t0 - int64(24*time.Hour)}}), recordcache.Existed{Received: at}, recordcache.Proof{})
	got, method, ok := AppendTimes(idx, tables, records, at)(p, 150)
	require.True(t, ok)
	require.Equal(t, MethodRecord, method)
	require.Equal(t, t0, got, "a day behind: clamped to the gap's start (100@t0)")

	records.PutAll(readsOf(map[recordAt]kafka.RecordTimestamp{in150: {Offset: 150, Timestamp: t0 + int64(120*time.Second)}}), recordcache.Existed{Received: at}, recordcache.Proof{})
	got, _, _ = AppendTimes(idx, tables, records, at)(p, 150)
	require.Equal(t, t0+int64(100*time.Second), got, "after the gap, before the read: clamped to the gap's end (200@t0+100s)")

	records.PutAll(readsOf(map[recordAt]kafka.RecordTimestamp{in150: {Offset: 150, Timestamp: t0 + int64(time.Hour)}}), recordcache.Existed{Received: at}, recordcache.Proof{})
	got, method, _ = AppendTimes(idx, tables, records, at)(p, 150)
	require.Equal(t, MethodTable, method, "an hour ahead, after its read: no time")
	require.Equal(t, t0+int64(100*time.Second)*51/101, got)

	in220 := recordAt{TopicPartition: tp, Offset: 220}
	records.PutAll(readsOf(map[recordAt]kafka.RecordTimestamp{in220: {Offset: 220, Timestamp: at + int64(5*time.Millisecond)}}), recordcache.Existed{Received: at + int64(10*time.Millisecond)}, recordcache.Proof{})
	got, _, _ = AppendTimes(idx, tables, records, at)(p, 220)
	require.Equal(t, at, got, "in the stretch up to the scrape's own read: never after the scrape")
}

// The k-th (from 0) of a bracket's n records is expected at (k+1)/(n+1) of
// it: a lone record in the middle, never at either end.
func TestExpectedAppendPlacesRecordsAsOrderStatistics(t *testing.T) {
	lo, hi := timetable.Sample{Offset: 10, At: 1000}, timetable.Sample{Offset: 11, At: 2000}
	require.Equal(t, int64(1500), ExpectedAppend(lo, hi, 10), "one record: the middle")

	hi = timetable.Sample{Offset: 13, At: 2000}
	require.Equal(t, []int64{1250, 1500, 1750},
		[]int64{ExpectedAppend(lo, hi, 10), ExpectedAppend(lo, hi, 11), ExpectedAppend(lo, hi, 12)})

	huge := timetable.Sample{Offset: 10 + 1<<60, At: 1 << 62}
	got := ExpectedAppend(lo, huge, huge.Offset-1)
	require.Greater(t, got, lo.At)
	require.LessOrEqual(t, got, huge.At, "float rounding never leaves the bracket")
}

// coarseFixture: a partition sampled at 100@t0 and 200@t0+1s, scraped at 250
// at scrape; one group at 150.
func coarseFixture(t *testing.T, scrape time.Duration) (*Tabled, *timetable.Store, int64, kafka.TopicPartition) {
	t.Helper()
	tp := kafka.TopicPartition{Topic: "bursts", Partition: 0}
	t0 := time.Unix(1_700_000_000, 0).UnixNano()
	at := t0 + int64(scrape)
	idx, tables := partitionFixture(t, tp, 16, 0,
		[]timetable.Sample{{Offset: 100, At: t0}, {Offset: 200, At: t0 + int64(time.Second)}}, at, 250,
		map[string]int64{"reader": 150})
	return idx, tables, at, tp
}

// A bracket of 1 s dates a time lag of a minute well enough (the error is
// at most the bracket): nothing is read. For a time lag of 2 s it does not:
// the 100 records may have been one burst anywhere in that second, so the
// record is read, and its timestamp, clamped to the bracket, dates it.
func TestCoarseBracketIsDatedByTheRecord(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0).UnixNano()
	idx, tables, at, tp := coarseFixture(t, time.Minute)
	records := appendStamped()
	missing, _ := OutOfTable(idx, at, tables, records)
	require.Empty(t, missing, "a 1 s bracket, a minute behind")
	_, method, _ := AppendTimes(idx, tables, records, at)(0, 150)
	require.Equal(t, MethodTable, method)

	idx, tables, at, tp = coarseFixture(t, 2*time.Second)
	missing, _ = OutOfTable(idx, at, tables, records)
	rec := recordAt{TopicPartition: tp, Offset: 150}
	require.Equal(t, []recordAt{rec}, recordsOf(missing), "a 1 s bracket, 1.5 s behind")
	got, method, _ := AppendTimes(idx, tables, records, at)(0, 150)
	require.Equal(t, MethodTable, method, "not read (capped): the table's expected place")
	require.Equal(t, t0+int64(time.Second)*51/101, got)

	burst := t0 + int64(900*time.Millisecond)
	records.PutAll(readsOf(map[recordAt]kafka.RecordTimestamp{rec: {Offset: 150, Found: kafka.RecordTimed, Timestamp: burst}}), recordcache.Existed{Received: at}, recordcache.Proof{})
	got, method, _ = AppendTimes(idx, tables, records, at)(0, 150)
	require.Equal(t, MethodRecord, method)
	require.Equal(t, burst, got)

	records.PutAll(readsOf(map[recordAt]kafka.RecordTimestamp{rec: {Offset: 150, Found: kafka.RecordTimed, Timestamp: t0 - int64(time.Hour)}}), recordcache.Existed{Received: at}, recordcache.Proof{})
	got, _, _ = AppendTimes(idx, tables, records, at)(0, 150)
	require.Equal(t, t0, got, "never older than the bracket proves")
}

// The README's worked example: points (212, 1597304241), (240, 1597304361)
// and (260, 1597304421); the record at 250 is the 11th of the 20 records of
// its bracket, expected 11/21 of the way through its 60 s.
func TestWorkedExample(t *testing.T) {
	tp := kafka.TopicPartition{Topic: "orders", Partition: 0}
	tables := timetable.NewStore(16, 0, nil)
	tables.Track(map[kafka.TopicPartition]struct{}{tp: {}}, time.Time{}, 0)
	for _, p := range []struct{ offset, at int64 }{{212, 1597304241}, {240, 1597304361}, {260, 1597304421}} {
		at := time.Unix(p.at, 0)
		tables.Record(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{tp: p.offset}, Sent: at, Received: at})
	}
	scrape := time.Unix(1597305000, 0).UnixNano()
	snap := &Snapshot{At: scrape, Committed: kafka.CommitsByGroup(map[string]map[kafka.TopicPartition]int64{"g": {tp: 250}}), End: map[kafka.TopicPartition]int64{tp: 275}}
	idx := NewIndex(snap).ResolveTables(tables)
	lags := Estimate(idx.Index, AppendTimes(idx, tables, recordcache.New(), scrape)).GroupLags(nil, "g", scrape)
	require.Len(t, lags, 1)
	require.Equal(t, MethodTable, lags[0].Method)
	require.InDelta(t, 1597304392.428571, float64(scrape)/1e9-lags[0].TimeLag, 1e-6)
	require.InDelta(t, 607.571, lags[0].TimeLag, 1e-3)
}

// Of the records a table dates only coarsely, those of a partition within
// refineSpan of the furthest behind are read: one read, from the furthest
// behind, answers the others its batches hold.
func TestCoarseBracketsReadNearTheFurthestBehind(t *testing.T) {
	idx, tables, at, tp := coarseFixture(t, 2*time.Second)
	snap := &Snapshot{
		At: at,
		Committed: kafka.CommitsByGroup(map[string]map[kafka.TopicPartition]int64{
			"a": {tp: 150}, "b": {tp: 120}, "c": {tp: 180}, "old": {tp: 50},
		}),
		End:   map[kafka.TopicPartition]int64{tp: 250},
		Start: map[kafka.TopicPartition]int64{},
	}
	idx = NewIndex(snap).ResolveTables(tables)
	missing, used := OutOfTable(idx, at, tables, recordcache.New())
	require.Equal(t, []recordAt{{TopicPartition: tp, Offset: 50}, {TopicPartition: tp, Offset: 120}, {TopicPartition: tp, Offset: 150}, {TopicPartition: tp, Offset: 180}}, recordsOf(missing),
		"older than the table first, then the coarse ones from the furthest behind")
	require.Equal(t, 4, used.Len(), "every record in use stays cached")
}

// A coarse record further than refineSpan from the partition's furthest
// behind would cost a Fetch round of its own: it keeps the table's
// estimate.
func TestCoarseBracketsFarApartReadOnlyTheFurthestBehind(t *testing.T) {
	tp := kafka.TopicPartition{Topic: "busy", Partition: 0}
	t0 := time.Unix(1_700_000_000, 0)
	tables := timetable.NewStore(16, 0, nil)
	tables.Track(map[kafka.TopicPartition]struct{}{tp: {}}, time.Time{}, 0)
	for i, offset := range []int64{0, 2000} {
		at := t0.Add(time.Duration(i) * time.Second)
		tables.Record(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{tp: offset}, Sent: at, Received: at})
	}
	at := t0.Add(2 * time.Second).UnixNano()
	far := int64(100 + refineSpan)
	snap := &Snapshot{
		At: at,
		Committed: kafka.CommitsByGroup(map[string]map[kafka.TopicPartition]int64{
			"behind": {tp: 100}, "near": {tp: far - 1}, "far": {tp: far},
		}),
		End:   map[kafka.TopicPartition]int64{tp: 2000},
		Start: map[kafka.TopicPartition]int64{},
	}
	idx := NewIndex(snap).ResolveTables(tables)
	missing, used := OutOfTable(idx, at, tables, recordcache.New())
	require.Equal(t, []recordAt{{TopicPartition: tp, Offset: 100}, {TopicPartition: tp, Offset: far - 1}}, recordsOf(missing))
	require.Equal(t, 3, used.Len(), "every record in use stays cached")
}

// TestRetainKeepsTheRecordsInUse: records a scrape's estimates may still
// date from stay cached, the others go; uses gathered in two passes (a
// retry after log starts were read) merge.
func TestRetainKeepsTheRecordsInUse(t *testing.T) {
	a, b := kafka.TopicPartition{Topic: "a"}, kafka.TopicPartition{Topic: "b"}
	records := recordcache.New()
	found := map[recordAt]kafka.RecordTimestamp{}
	for _, at := range []recordAt{{TopicPartition: a, Offset: 1}, {TopicPartition: a, Offset: 5}, {TopicPartition: a, Offset: 9}, {TopicPartition: b, Offset: 2}} {
		found[at] = kafka.RecordTimestamp{Offset: at.Offset, Timestamp: 1}
	}
	records.PutAll(readsOf(found), recordcache.Existed{Received: 2}, recordcache.Proof{})
	used := recordcache.Used{a: {5}}
	used.Merge(recordcache.Used{a: {1, 5}, b: {7}})
	require.Equal(t, recordcache.Used{a: {1, 5}, b: {7}}, used)
	require.Equal(t, 3, used.Len())
	records.Retain(used)
	for at, want := range map[recordAt]bool{
		{TopicPartition: a, Offset: 1}: true, {TopicPartition: a, Offset: 5}: true,
		{TopicPartition: a, Offset: 9}: false, {TopicPartition: b, Offset: 2}: false,
	} {
		_, ok := records.Known(at.TopicPartition, at.Offset)
		require.Equal(t, want, ok, "%v", at)
	}
}

// recordsOf is missing record by record, partition by partition.
func recordsOf(missing []kafka.PartitionOffsets) []recordAt {
	var out []recordAt
	for _, w := range missing {
		for _, offset := range w.Offsets {
			out = append(out, recordAt{TopicPartition: w.TopicPartition, Offset: offset})
		}
	}
	return out
}

// readsOf is found as a read returns it.
func readsOf(found map[recordAt]kafka.RecordTimestamp) kafka.RecordReads {
	reads := kafka.RecordReads{}
	for at, ts := range found {
		reads[at.TopicPartition] = append(reads[at.TopicPartition], kafka.RecordRead{Wanted: at.Offset, RecordTimestamp: ts})
	}
	return reads
}

// recordAt names the record at an offset of a partition.
type recordAt struct {
	kafka.TopicPartition
	Offset int64
}

// TestMarkersPossibleUntilAReadShowsNone: a partition may hold transaction
// markers until a record read there shows a batch written outside
// transactions; a read that shows one written in a transaction, or only
// markers, makes it hold markers for good. Records the time index dated
// say nothing of it.
func TestMarkersPossibleUntilAReadShowsNone(t *testing.T) {
	plain, txns := kafka.TopicPartition{Topic: "plain"}, kafka.TopicPartition{Topic: "txns"}
	r := recordcache.New()
	require.True(t, r.MarkersPossible(plain), "never read")
	put := func(tp kafka.TopicPartition, rec kafka.RecordTimestamp) {
		r.PutAll(kafka.RecordReads{tp: {{Wanted: rec.Offset, RecordTimestamp: rec}}}, recordcache.Existed{Received: time.Now().UnixNano()}, recordcache.Proof{})
	}
	at := time.Now().Add(-time.Minute).UnixNano()
	put(plain, kafka.RecordTimestamp{Offset: 5, Timestamp: at, ByProducer: true, Producer: clocks.TimeIndexClock})
	require.True(t, r.MarkersPossible(plain), "dated from the index only")
	put(plain, kafka.RecordTimestamp{Offset: 6, Timestamp: at})
	require.False(t, r.MarkersPossible(plain), "a data record read outside transactions")

	put(txns, kafka.RecordTimestamp{Offset: 6, Timestamp: at, Transactional: true})
	require.True(t, r.MarkersPossible(txns))
	put(txns, kafka.RecordTimestamp{Offset: 9, Timestamp: at})
	require.True(t, r.MarkersPossible(txns), "transactions seen once are possible for good")
	put(plain, kafka.RecordTimestamp{Offset: 8, Found: kafka.RecordNone})
	require.True(t, r.MarkersPossible(plain), "a read that found only markers")

	r.Forget([]kafka.TopicPartition{plain})
	require.True(t, r.MarkersPossible(plain), "forgotten with the partition")
}
