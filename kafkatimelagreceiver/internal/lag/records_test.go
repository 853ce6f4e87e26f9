package lag

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// recordsFixture is one partition whose table holds end offset 100 at t0
// and 200 at t0+100s, read again at 250 at t0+150s by the scrape; groups
// are committed older than the table, inside it and at its end.
func recordsFixture(t *testing.T, maxGap time.Duration) (*Index, *timetable.Store, int64, kafka.TopicPartition) {
	t.Helper()
	tp := kafka.TopicPartition{Topic: "orders", Partition: 0}
	t0 := time.Unix(1_700_000_000, 0)
	tables := timetable.NewStore(16, maxGap, nil)
	tables.Track(map[kafka.TopicPartition]struct{}{tp: {}}, time.Time{}, 0)
	for _, p := range []struct {
		offset int64
		at     time.Time
	}{{100, t0}, {200, t0.Add(100 * time.Second)}} {
		tables.Record(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{tp: p.offset}, Sent: p.at, Received: p.at})
	}
	at := t0.Add(150 * time.Second).UnixNano()
	snap := &Snapshot{
		At: at,
		Committed: map[string]map[kafka.TopicPartition]int64{
			"old":       {tp: 50},
			"older":     {tp: 20},
			"in-table":  {tp: 150},
			"caught-up": {tp: 250},
		},
		End:   map[kafka.TopicPartition]int64{tp: 250},
		Start: map[kafka.TopicPartition]int64{},
	}
	idx := NewIndex(snap)
	idx.ResolveTables(tables)
	return idx, tables, at, tp
}

func TestOutOfTableListsWhatNoTableDates(t *testing.T) {
	idx, tables, at, tp := recordsFixture(t, 0)
	records := NewRecordTimes()

	missing, used := OutOfTable(idx, at, tables, records)
	require.Equal(t, []kafka.RecordAt{
		{TopicPartition: tp, Offset: 20}, // furthest behind first
		{TopicPartition: tp, Offset: 50},
	}, missing)
	require.Len(t, used, 2)

	records.PutAll(map[kafka.RecordAt]kafka.RecordTimestamp{{TopicPartition: tp, Offset: 50}: {Offset: 50, Timestamp: 1}})
	missing, used = OutOfTable(idx, at, tables, records)
	require.Equal(t, []kafka.RecordAt{{TopicPartition: tp, Offset: 20}}, missing, "a record read before is not read again")
	require.Len(t, used, 2, "but it is still in use")
}

func TestAppendTimesTableThenRecord(t *testing.T) {
	idx, tables, at, tp := recordsFixture(t, 0)
	records := NewRecordTimes()
	appendTime := AppendTimes(tables, records, at)
	p := &idx.Parts[0]
	t0 := time.Unix(1_700_000_000, 0).UnixNano()

	got, method, ok := appendTime(p, 150)
	require.True(t, ok)
	require.Equal(t, MethodTable, method)
	require.Equal(t, t0+int64(50*time.Second), got, "halfway between 100@t0 and 200@t0+100s")

	_, method, ok = appendTime(p, 50)
	require.False(t, ok, "older than the table and not read: no estimate")
	require.Equal(t, MethodNone, method)

	records.PutAll(map[kafka.RecordAt]kafka.RecordTimestamp{{TopicPartition: tp, Offset: 50}: {Offset: 50, Timestamp: t0 - int64(time.Hour)}})
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
// straight line is the fallback.
func TestAppendTimesInGap(t *testing.T) {
	idx, tables, at, tp := recordsFixture(t, 30*time.Second)
	records := NewRecordTimes()
	p := &idx.Parts[0]
	t0 := time.Unix(1_700_000_000, 0).UnixNano()

	missing, _ := OutOfTable(idx, at, tables, records)
	require.Contains(t, missing, kafka.RecordAt{TopicPartition: tp, Offset: 150}, "an offset in a gap is read")

	got, method, ok := AppendTimes(tables, records, at)(p, 150)
	require.True(t, ok)
	require.Equal(t, MethodTable, method, "not read: the straight line")
	require.Equal(t, t0+int64(50*time.Second), got)

	records.PutAll(map[kafka.RecordAt]kafka.RecordTimestamp{{TopicPartition: tp, Offset: 150}: {Offset: 150, Timestamp: t0 + int64(90*time.Second)}})
	got, method, ok = AppendTimes(tables, records, at)(p, 150)
	require.True(t, ok)
	require.Equal(t, MethodRecord, method)
	require.Equal(t, t0+int64(90*time.Second), got)

	records.Retain(map[kafka.RecordAt]struct{}{})
	_, method, _ = AppendTimes(tables, records, at)(p, 150)
	require.Equal(t, MethodTable, method, "entries no longer in use are dropped")
}

// A record older than the table cannot have been appended after the table's
// oldest point, whatever its producer's clock said; nor after the scrape
// when there is no table at all.
func TestRecordTimestampOlderThanTableIsNoNewerThanItsOldestPoint(t *testing.T) {
	idx, tables, at, tp := recordsFixture(t, 0)
	records := NewRecordTimes()
	p := &idx.Parts[0]
	t0 := time.Unix(1_700_000_000, 0).UnixNano()

	records.PutAll(map[kafka.RecordAt]kafka.RecordTimestamp{{TopicPartition: tp, Offset: 50}: {Offset: 50, Timestamp: t0 + int64(time.Hour)}})
	got, method, ok := AppendTimes(tables, records, at)(p, 50)
	require.True(t, ok)
	require.Equal(t, MethodRecord, method)
	require.Equal(t, t0, got, "a producer clock an hour ahead is clamped to the oldest point (100@t0)")

	records.PutAll(map[kafka.RecordAt]kafka.RecordTimestamp{{TopicPartition: tp, Offset: 20}: {Offset: 20, Timestamp: t0 - int64(time.Hour)}})
	got, _, _ = AppendTimes(tables, records, at)(p, 20)
	require.Equal(t, t0-int64(time.Hour), got, "an older timestamp is within what the table proves")

	untracked := &Partition{TopicPartition: kafka.TopicPartition{Topic: "untracked"}, End: 10, HasEnd: true}
	records.PutAll(map[kafka.RecordAt]kafka.RecordTimestamp{{TopicPartition: untracked.TopicPartition, Offset: 5}: {Offset: 5, Timestamp: at + int64(time.Hour)}})
	got, _, ok = AppendTimes(tables, records, at)(untracked, 5)
	require.True(t, ok)
	require.Equal(t, at, got, "without a table, never after the scrape")
}

// Inside a stretch the sampler did not watch, the table still proves the
// record was appended between the stretch's two points: a timestamp outside
// them is clamped to them.
func TestRecordTimestampInGapStaysInsideTheGap(t *testing.T) {
	idx, tables, at, tp := recordsFixture(t, 30*time.Second)
	records := NewRecordTimes()
	p := &idx.Parts[0]
	t0 := time.Unix(1_700_000_000, 0).UnixNano()
	in150 := kafka.RecordAt{TopicPartition: tp, Offset: 150}

	records.PutAll(map[kafka.RecordAt]kafka.RecordTimestamp{in150: {Offset: 150, Timestamp: t0 - int64(24*time.Hour)}})
	got, method, ok := AppendTimes(tables, records, at)(p, 150)
	require.True(t, ok)
	require.Equal(t, MethodRecord, method)
	require.Equal(t, t0, got, "a day behind: clamped to the gap's start (100@t0)")

	records.PutAll(map[kafka.RecordAt]kafka.RecordTimestamp{in150: {Offset: 150, Timestamp: t0 + int64(time.Hour)}})
	got, _, _ = AppendTimes(tables, records, at)(p, 150)
	require.Equal(t, t0+int64(100*time.Second), got, "an hour ahead: clamped to the gap's end (200@t0+100s)")

	in220 := kafka.RecordAt{TopicPartition: tp, Offset: 220}
	records.PutAll(map[kafka.RecordAt]kafka.RecordTimestamp{in220: {Offset: 220, Timestamp: at + int64(time.Hour)}})
	got, _, _ = AppendTimes(tables, records, at)(p, 220)
	require.Equal(t, at, got, "in the stretch up to the scrape's own read: never after the scrape")
}
