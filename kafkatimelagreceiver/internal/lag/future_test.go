package lag

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// TestRecordStampedAfterItExistedHidesNoLag: a partition written at 100
// records a second, sampled every second; a group 0.75 s behind; its
// producer's clock ahead. The table's bracket of a second is coarse against
// 0.75 s, so the record is read: its stamp, after the scrape's end-offset
// read (which proves the record existed) gives no time, and the table's
// bracket dates the record (to within it) instead of the stamp clamped to
// the bracket's end, which would report 0.00, 0.30 and 0.60 s at three
// phases of the scrape against the samples. A clock only a second ahead is
// caught too, however late the record read returns.
func TestRecordStampedAfterItExistedHidesNoLag(t *testing.T) {
	const behind = 750 * time.Millisecond
	tp := kafka.TopicPartition{Topic: "orders", Partition: 0}
	t0 := time.Unix(1_700_000_000, 0)
	offsetAt := func(at time.Time) int64 { return int64(at.Sub(t0) / (10 * time.Millisecond)) }
	for _, tt := range []struct {
		phase, producerAhead, readAfter time.Duration
	}{
		{0, 5 * time.Minute, 20 * time.Millisecond},
		{300 * time.Millisecond, 5 * time.Minute, 20 * time.Millisecond},
		{600 * time.Millisecond, 5 * time.Minute, 20 * time.Millisecond},
		{300 * time.Millisecond, time.Second, 2 * time.Second},
	} {
		t.Run(fmt.Sprintf("scraped %s after a sample, clock %s ahead, read %s later", tt.phase, tt.producerAhead, tt.readAfter), func(t *testing.T) {
			tables := timetable.NewStore(16, 30*time.Second, nil)
			tables.Track(map[kafka.TopicPartition]struct{}{tp: {}}, t0, 0)
			for i := range 3 {
				at := t0.Add(time.Duration(i) * time.Second)
				tables.Record(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{tp: offsetAt(at)}, Sent: at, Received: at})
			}
			scrape := t0.Add(2*time.Second + tt.phase)
			committed := offsetAt(scrape.Add(-behind))
			snap := &Snapshot{
				At:        scrape.UnixNano(),
				Committed: kafka.CommitsByGroup(map[string]map[kafka.TopicPartition]int64{"g": {tp: committed}}),
				End:       map[kafka.TopicPartition]int64{tp: offsetAt(scrape)},
				Start:     map[kafka.TopicPartition]int64{},
			}
			idx := NewIndex(snap).ResolveTables(tables)
			records := recordcache.New()
			missing, _ := OutOfTable(idx, snap.At, tables, records)
			rec := recordAt{TopicPartition: tp, Offset: committed}
			require.Equal(t, []recordAt{rec}, recordsOf(missing), "a coarse bracket: the record is read")
			stamp := scrape.Add(-behind).Add(tt.producerAhead)
			untimed := records.PutAll(readsOf(map[recordAt]kafka.RecordTimestamp{rec: {Offset: committed, Timestamp: stamp.UnixNano()}}),
				recordcache.Existed{End: snap.End, EndAt: snap.At, Received: scrape.Add(tt.readAfter).UnixNano()}, recordcache.Proof{})
			require.Equal(t, recordcache.Untimed{Future: 1}, untimed, "counted")

			lags := Estimate(idx.Index, AppendTimes(idx, tables, records, snap.At)).GroupLags(nil, "g", snap.At)
			require.Len(t, lags, 1)
			t.Logf("time lag %.3f s (%s), truth %.2f s", lags[0].TimeLag, lags[0].Method, behind.Seconds())
			require.InDelta(t, behind.Seconds(), lags[0].TimeLag, 0.05, "time lag %.2f s, truth %.2f s", lags[0].TimeLag, behind.Seconds())
			require.Equal(t, MethodTable.String(), lags[0].Method.String(), "the stamp gives no time")
		})
	}
}

// A record the read found at or past the end offset the scrape read was
// appended after that read: only a stamp after the record read returned
// is provably wrong for it.
func TestRecordPastTheScrapesEndExistedByItsRead(t *testing.T) {
	tp := kafka.TopicPartition{Topic: "orders", Partition: 0}
	const endAt, received = int64(1000), int64(2000)
	existed := recordcache.Existed{End: map[kafka.TopicPartition]int64{tp: 10}, EndAt: endAt, Received: received}
	records := recordcache.New()
	untimed := records.PutAll(readsOf(map[recordAt]kafka.RecordTimestamp{
		{TopicPartition: tp, Offset: 5}:  {Offset: 5, Timestamp: endAt + 1},     // below the end: existed by endAt
		{TopicPartition: tp, Offset: 6}:  {Offset: 12, Timestamp: endAt + 1},    // first data record past the end
		{TopicPartition: tp, Offset: 7}:  {Offset: 13, Timestamp: received + 1}, // stamped after the read
		{TopicPartition: tp, Offset: 8}:  {Offset: 8, Found: kafka.RecordUntimed},
		{TopicPartition: tp, Offset: 9}:  {Offset: 9, Timestamp: endAt},
		{TopicPartition: tp, Offset: 20}: {Offset: 20, Found: kafka.RecordNone},
	}), existed, recordcache.Proof{})
	require.Equal(t, recordcache.Untimed{Future: 2, Invalid: 1}, untimed)
	for offset, want := range map[int64]kafka.RecordFound{5: kafka.RecordUntimed, 6: kafka.RecordTimed, 7: kafka.RecordUntimed, 9: kafka.RecordTimed, 20: kafka.RecordNone} {
		got, ok := records.Known(tp, offset)
		require.True(t, ok)
		require.Equal(t, want, got.Found, "offset %d", offset)
	}
}
