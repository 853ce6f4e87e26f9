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

// After a restart, the producers' clocks come back with the tables, but a
// producer ID may now be another process's (a transactional producer keeps
// its ID across hosts): a restored clock moves no record until a read the
// tables bound on both sides agrees with it. The group sits on record 55,
// older than the restarted receiver's one point; the producer's saved
// clock is 1.5 s behind.
func TestRestoredClockMovesNothingUntilAReadAgrees(t *testing.T) {
	records, at, appended := measuredClocks(t)
	saved := records.EncodeClocks()
	tp := kafka.TopicPartition{Topic: "orders", Partition: 0}
	restartAt := at + int64(20*time.Second)
	// restarted is the receiver after the restart, its first scrape having
	// read record 55, stamped by a clock behind by behind; more reads a
	// record the tables bound on both sides, at offset 350, at a second
	// scrape.
	restarted := func(behind time.Duration, more bool) (int64, Method) {
		tables := timetable.NewStore(64, 0, nil)
		tables.Track(map[kafka.TopicPartition]struct{}{tp: {}}, time.Time{}, 0)
		record := func(end, when int64) {
			read := time.Unix(0, when)
			tables.Record(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{tp: end}, Sent: read, Received: read})
		}
		record(300, restartAt)
		scrape := func(end, when int64) *Index {
			idx := NewIndex(&Snapshot{At: when, Committed: kafka.CommitsByGroup(map[string]map[kafka.TopicPartition]int64{"g": {tp: 55}}),
				End: map[kafka.TopicPartition]int64{tp: end}, Start: map[kafka.TopicPartition]int64{}})
			idx.ResolveTables(tables)
			return idx
		}
		r := NewRecordTimes()
		_, err := r.RestoreClocks(saved, time.Unix(0, restartAt))
		require.NoError(t, err)
		idx := scrape(300, restartAt)
		rec := kafka.RecordTimestamp{Offset: 55, Timestamp: appended(55) - int64(behind), ByProducer: true, Producer: 7}
		r.PutAll(kafka.RecordReads{tp: {{Wanted: 55, RecordTimestamp: rec}}}, Existed{Received: restartAt}, Proof{Index: idx, Tables: tables, At: restartAt})
		if more {
			// Offsets 300 to 400 appended evenly over the next 10 s, the
			// record at 350 between samples a second either side of it.
			second := restartAt + int64(10*time.Second)
			record(340, restartAt+int64(4*time.Second))
			record(360, restartAt+int64(6*time.Second))
			record(400, second)
			idx = scrape(400, second+int64(time.Millisecond))
			appendedAt := restartAt + int64(time.Second)/10*50 // offset 350
			near := kafka.RecordTimestamp{Offset: 350, Timestamp: appendedAt - int64(behind), ByProducer: true, Producer: 7}
			r.PutAll(kafka.RecordReads{tp: {{Wanted: 350, RecordTimestamp: near}}}, Existed{Received: second}, Proof{Index: idx, Tables: tables, At: second})
			restartAt = second + int64(time.Millisecond)
			defer func() { restartAt = second - int64(10*time.Second) }()
		}
		got, method, ok := AppendTimes(tables, r, restartAt)(&idx.Parts[0], 55)
		if !ok {
			return 0, method
		}
		return got - appended(55), method
	}
	off := func(behind time.Duration, more bool) int64 {
		got, method := restarted(behind, more)
		require.Equal(t, MethodRecord, method)
		return got
	}
	require.InDelta(t, -int64(1500*time.Millisecond), off(1500*time.Millisecond, false), float64(10*time.Millisecond),
		"unconfirmed: the stamp as it stands")
	require.InDelta(t, 0, off(1500*time.Millisecond, true), float64(100*time.Millisecond),
		"confirmed by a read bounded on both sides: moved by the saved clock")
	require.InDelta(t, 0, off(0, false), float64(10*time.Millisecond),
		"the ID is now an exact clock's, no read since: the stamp as it stands")
	_, method := restarted(0, true)
	require.Equal(t, MethodUnproven, method,
		"the ID is now an exact clock's: its read disagrees, the saved clock is dropped, and one read shows nothing yet of the new one")
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
