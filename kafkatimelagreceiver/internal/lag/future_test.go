package lag

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// TestRecordStampedAfterItsReadHidesNoLag: a partition written at 100
// records a second, sampled every second; a group 0.75 s behind; its
// producer's clock 5 minutes ahead. The tables' bracket of a second is
// coarse against 0.75 s, so the record is read: its stamp, after the read
// that returned it, gives no time, and the table's bracket dates the
// record (to within it) instead of the stamp clamped to the bracket's end,
// which would report 0.00, 0.30 and 0.60 s at three phases.
func TestRecordStampedAfterItsReadHidesNoLag(t *testing.T) {
	const behind = 750 * time.Millisecond
	const producerAhead = 5 * time.Minute
	tp := kafka.TopicPartition{Topic: "orders", Partition: 0}
	t0 := time.Unix(1_700_000_000, 0)
	offsetAt := func(at time.Time) int64 { return int64(at.Sub(t0) / (10 * time.Millisecond)) }
	for _, phase := range []time.Duration{0, 300 * time.Millisecond, 600 * time.Millisecond} {
		t.Run(fmt.Sprintf("scraped %s after a sample", phase), func(t *testing.T) {
			tables := timetable.NewStore(16, 30*time.Second, nil)
			tables.Track(map[kafka.TopicPartition]struct{}{tp: {}}, t0, 0)
			for i := range 3 {
				at := t0.Add(time.Duration(i) * time.Second)
				tables.Record(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{tp: offsetAt(at)}, Sent: at, Received: at})
			}
			scrape := t0.Add(2*time.Second + phase)
			committed := offsetAt(scrape.Add(-behind))
			snap := &Snapshot{
				At:        scrape.UnixNano(),
				Committed: kafka.CommitsByGroup(map[string]map[kafka.TopicPartition]int64{"g": {tp: committed}}),
				End:       map[kafka.TopicPartition]int64{tp: offsetAt(scrape)},
				Start:     map[kafka.TopicPartition]int64{},
			}
			idx := NewIndex(snap)
			idx.ResolveTables(tables)
			records := NewRecordTimes()
			missing, _ := OutOfTable(idx, snap.At, tables, records)
			rec := kafka.RecordAt{TopicPartition: tp, Offset: committed}
			require.Equal(t, []kafka.RecordAt{rec}, missing, "a coarse bracket: the record is read")
			read := scrape.Add(20 * time.Millisecond)
			stamp := scrape.Add(-behind).Add(producerAhead)
			untimed := records.PutAll(map[kafka.RecordAt]kafka.RecordTimestamp{rec: {Offset: committed, Timestamp: stamp.UnixNano()}}, read.UnixNano())
			require.Equal(t, Untimed{AfterRead: 1}, untimed, "counted")

			idx.Estimate(AppendTimes(tables, records, snap.At))
			lags := idx.GroupLags(nil, "g", snap.At)
			require.Len(t, lags, 1)
			require.InDelta(t, behind.Seconds(), lags[0].TimeLag, 0.05, "time lag %.2f s, truth %.2f s", lags[0].TimeLag, behind.Seconds())
			require.Equal(t, MethodTable.String(), lags[0].Method.String(), "the stamp gives no time")
		})
	}
}
