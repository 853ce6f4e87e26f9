package lag

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/statecodec"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// measuredClocks is the fixture's partition after reads of producer 7,
// whose clock is 1.5 s behind, measured by the records on either side of
// the samples past the group's.
func measuredClocks(t *testing.T) (*RecordTimes, int64, func(offset int64) int64) {
	t.Helper()
	idx, tables, at, appended := clocksFixture(t)
	tp := idx.Parts[0].TopicPartition
	records := NewRecordTimes()
	found := map[recordAt]kafka.RecordTimestamp{}
	for _, o := range []int64{55, 59, 60, 69, 70} {
		found[recordAt{TopicPartition: tp, Offset: o}] = kafka.RecordTimestamp{Offset: o, Timestamp: appended(o) - int64(1500*time.Millisecond), ByProducer: true, Producer: 7}
	}
	records.PutAll(readsOf(found), Existed{Received: at}, Proof{Index: idx, Tables: tables, At: at})
	require.InDelta(t, int64(1500*time.Millisecond), moveOf(records.clocks[tp], 7), float64(60*time.Millisecond))
	return records, at, appended
}

// After a restart, the producers' clocks come back with the tables: a
// record of the producer whose clock is 1.5 s behind, read at the first
// scrape on tables that hold no point yet older than it, is dated within
// 0.1 s, where a receiver measuring from nothing takes its timestamp as
// it stands (the table only bounds it from above).
func TestRestoredClockDatesTheFirstScrapesRecords(t *testing.T) {
	records, at, appended := measuredClocks(t)
	saved := records.EncodeClocks()

	// The restarted receiver: tables with one point, its first scrape's
	// read, 20 s later; the group sits on record 55, older than that.
	tp := kafka.TopicPartition{Topic: "orders", Partition: 0}
	restartAt := at + int64(20*time.Second)
	fresh := func(restore bool) int64 {
		tables := timetable.NewStore(64, 0, nil)
		tables.Track(map[kafka.TopicPartition]struct{}{tp: {}}, time.Time{}, 0)
		read := time.Unix(0, restartAt)
		tables.Record(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{tp: 300}, Sent: read, Received: read})
		idx := NewIndex(&Snapshot{At: restartAt, Committed: kafka.CommitsByGroup(map[string]map[kafka.TopicPartition]int64{"g": {tp: 55}}),
			End: map[kafka.TopicPartition]int64{tp: 300}, Start: map[kafka.TopicPartition]int64{}})
		idx.ResolveTables(tables)
		restarted := NewRecordTimes()
		if restore {
			restored, err := restarted.RestoreClocks(saved, time.Unix(0, restartAt))
			require.NoError(t, err)
			require.Equal(t, RestoredClocks{Partitions: 1, Clocks: 1}, restored)
		}
		missing, _ := OutOfTable(idx, restartAt, tables, restarted)
		require.Equal(t, []int64{55}, missing[0].Offsets)
		rec := kafka.RecordTimestamp{Offset: 55, Timestamp: appended(55) - int64(1500*time.Millisecond), ByProducer: true, Producer: 7}
		restarted.PutAll(kafka.RecordReads{tp: {{Wanted: 55, RecordTimestamp: rec}}}, Existed{Received: restartAt}, Proof{Index: idx, Tables: tables, At: restartAt})
		got, method, ok := AppendTimes(tables, restarted, restartAt)(&idx.Parts[0], 55)
		require.True(t, ok)
		require.Equal(t, MethodRecord, method)
		return got - appended(55)
	}
	require.InDelta(t, 0, fresh(true), float64(100*time.Millisecond), "restored: dated %v off", time.Duration(fresh(true)))
	require.InDelta(t, -int64(1500*time.Millisecond), fresh(false), float64(10*time.Millisecond), "measured from nothing: the skew")
}

func TestRestoreClocksChecks(t *testing.T) {
	records, at, _ := measuredClocks(t)
	now := time.Unix(0, at)
	saved := records.EncodeClocks()

	t.Run("aged as a clock read then would be: forgotten an hour after its last read", func(t *testing.T) {
		restored, err := NewRecordTimes().RestoreClocks(saved, now.Add(time.Hour+time.Second))
		require.NoError(t, err)
		require.Zero(t, restored.Clocks)
	})
	t.Run("a damaged partition is left out, the state restored", func(t *testing.T) {
		damaged := append([]byte(nil), saved...)
		// A bit inside the clock's last-read time (a varint of 9 bytes
		// before reads, window reads and the checksum): the frame still
		// reads, its checksum does not match.
		damaged[len(damaged)-8] ^= 0x01
		r := NewRecordTimes()
		restored, err := r.RestoreClocks(damaged, now)
		require.NoError(t, err)
		require.Len(t, restored.Skipped, 1)
		require.True(t, errors.Is(restored.Skipped[0], statecodec.ErrDamaged), "%v", restored.Skipped[0])
		require.Empty(t, r.clocks)
	})
	t.Run("read in the future: implausible", func(t *testing.T) {
		restored, err := NewRecordTimes().RestoreClocks(saved, now.Add(-time.Hour))
		require.NoError(t, err)
		require.Len(t, restored.Skipped, 1)
		require.ErrorContains(t, restored.Skipped[0], "last read at")
	})
	t.Run("another version is refused whole", func(t *testing.T) {
		other := append([]byte(nil), saved...)
		other[len(clocksStateMagic)] = clocksStateVersion + 1
		_, err := NewRecordTimes().RestoreClocks(other, now)
		require.ErrorIs(t, err, statecodec.ErrCorrupt)
		_, err = NewRecordTimes().RestoreClocks([]byte("tables"), now)
		require.ErrorIs(t, err, statecodec.ErrCorrupt)
	})
	t.Run("round trip", func(t *testing.T) {
		r := NewRecordTimes()
		_, err := r.RestoreClocks(saved, now)
		require.NoError(t, err)
		require.Equal(t, saved, r.EncodeClocks())
	})
}
