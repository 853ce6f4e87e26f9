package lag

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/statecodec"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// measuredClocks is the fixture's partition after reads of producer 7,
// whose clock is 1.5 s behind, measured by the records on either side of
// the samples past the group's.
func measuredClocks(t *testing.T) (*recordcache.Cache, int64, func(offset int64) int64) {
	t.Helper()
	idx, tables, at, appended := clocksFixture(t)
	tp := idx.Parts[0].TopicPartition
	records := recordcache.New()
	found := map[recordAt]kafka.RecordTimestamp{}
	for _, o := range []int64{55, 59, 60, 69, 70} {
		found[recordAt{TopicPartition: tp, Offset: o}] = kafka.RecordTimestamp{Offset: o, Timestamp: appended(o) - int64(1500*time.Millisecond), ByProducer: true, Producer: 7}
	}
	records.PutAll(readsOf(found), recordcache.Existed{Received: at}, Proof(idx, tables, at))
	require.InDelta(t, int64(1500*time.Millisecond), moveOf(records.ClocksOf(tp), 7), float64(60*time.Millisecond))
	return records, at, appended
}

// After a restart, the producers' clocks come back with the tables, but a
// producer ID may now be another process's (a transactional producer keeps
// its ID across hosts): a restored clock moves and vouches for no record
// until a read the tables bound on both sides agrees with it. The group sits on record 55,
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
		scrape := func(end, when int64) *Tabled {
			idx := NewIndex(&Snapshot{At: when, Committed: kafka.CommitsByGroup(map[string]map[kafka.TopicPartition]int64{"g": {tp: 55}}),
				End: map[kafka.TopicPartition]int64{tp: end}, Start: map[kafka.TopicPartition]int64{}}).ResolveTables(tables)
			return idx
		}
		r := recordcache.New()
		_, err := r.RestoreClocks(saved, time.Unix(0, restartAt))
		require.NoError(t, err)
		idx := scrape(300, restartAt)
		rec := kafka.RecordTimestamp{Offset: 55, Timestamp: appended(55) - int64(behind), ByProducer: true, Producer: 7}
		r.PutAll(kafka.RecordReads{tp: {{Wanted: 55, RecordTimestamp: rec}}}, recordcache.Existed{Received: restartAt}, Proof(idx, tables, restartAt))
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
			r.PutAll(kafka.RecordReads{tp: {{Wanted: 350, RecordTimestamp: near}}}, recordcache.Existed{Received: second}, Proof(idx, tables, second))
			restartAt = second + int64(time.Millisecond)
			defer func() { restartAt = second - int64(10*time.Second) }()
		}
		got, method, ok := AppendTimes(idx, tables, r, restartAt)(0, 55)
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
	_, method := restarted(1500*time.Millisecond, false)
	require.Equal(t, MethodUnproven, method, "unconfirmed: the saved clock neither moves the stamp nor vouches for it")
	require.InDelta(t, 0, off(1500*time.Millisecond, true), float64(100*time.Millisecond),
		"confirmed by a read bounded on both sides: moved by the saved clock")
	_, method = restarted(0, false)
	require.Equal(t, MethodUnproven, method, "the ID is now an exact clock's, no read since: withheld")
	_, method = restarted(0, true)
	require.Equal(t, MethodUnproven, method,
		"the ID is now an exact clock's: its read disagrees, the saved clock is dropped, and one read shows nothing yet of the new one")
}

func TestRestoreClocksChecks(t *testing.T) {
	records, at, _ := measuredClocks(t)
	now := time.Unix(0, at)
	saved := records.EncodeClocks()

	t.Run("aged as a clock read then would be: forgotten an hour after its last read", func(t *testing.T) {
		restored, err := recordcache.New().RestoreClocks(saved, now.Add(time.Hour+time.Second))
		require.NoError(t, err)
		require.Zero(t, restored.Clocks)
	})
	t.Run("a damaged partition is left out, the state restored", func(t *testing.T) {
		damaged := append([]byte(nil), saved...)
		// A bit inside the clock's last-read time (a varint of 9 bytes
		// before reads, window reads and the checksum): the frame still
		// reads, its checksum does not match.
		damaged[len(damaged)-8] ^= 0x01
		r := recordcache.New()
		restored, err := r.RestoreClocks(damaged, now)
		require.NoError(t, err)
		require.Len(t, restored.Skipped, 1)
		require.True(t, errors.Is(restored.Skipped[0], statecodec.ErrDamaged), "%v", restored.Skipped[0])
		require.Empty(t, r.ClocksOf(kafka.TopicPartition{Topic: "orders", Partition: 0}))
	})
	t.Run("read in the future: implausible", func(t *testing.T) {
		restored, err := recordcache.New().RestoreClocks(saved, now.Add(-time.Hour))
		require.NoError(t, err)
		require.Len(t, restored.Skipped, 1)
		require.ErrorContains(t, restored.Skipped[0], "last read at")
	})
	t.Run("another version is refused whole", func(t *testing.T) {
		other := append([]byte(nil), saved...)
		other[len("KTLC")]++ // the version, after the magic
		_, err := recordcache.New().RestoreClocks(other, now)
		require.ErrorIs(t, err, statecodec.ErrCorrupt)
		_, err = recordcache.New().RestoreClocks([]byte("tables"), now)
		require.ErrorIs(t, err, statecodec.ErrCorrupt)
	})
	t.Run("round trip", func(t *testing.T) {
		r := recordcache.New()
		_, err := r.RestoreClocks(saved, now)
		require.NoError(t, err)
		require.Equal(t, saved, r.EncodeClocks())
	})
}

// TestRestoredClockOfAnotherProcessDatesNothingWrong: the clock saved for
// producer 7 (1.5 s behind) is restored after a restart, where the process
// now holding producer ID 7 has an exact clock and wrote the record the
// group sits on, older than the restarted tables. Its time lag is within
// 0.1 s of the truth, or withheld: never moved by the saved clock.
func TestRestoredClockOfAnotherProcessDatesNothingWrong(t *testing.T) {
	records, at, appended := measuredClocks(t)
	saved := records.EncodeClocks()
	tp := kafka.TopicPartition{Topic: "orders", Partition: 0}
	restartAt := at + int64(20*time.Second)
	tables := timetable.NewStore(64, 0, nil)
	tables.Track(map[kafka.TopicPartition]struct{}{tp: {}}, time.Time{}, 0)
	read := time.Unix(0, restartAt)
	tables.Record(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{tp: 300}, Sent: read, Received: read})
	idx := NewIndex(&Snapshot{At: restartAt, Committed: kafka.CommitsByGroup(map[string]map[kafka.TopicPartition]int64{"g": {tp: 55}}),
		End: map[kafka.TopicPartition]int64{tp: 300}, Start: map[kafka.TopicPartition]int64{}}).ResolveTables(tables)
	restarted := recordcache.New()
	_, err := restarted.RestoreClocks(saved, read)
	require.NoError(t, err)
	exact := kafka.RecordTimestamp{Offset: 55, Timestamp: appended(55), ByProducer: true, Producer: 7}
	restarted.PutAll(kafka.RecordReads{tp: {{Wanted: 55, RecordTimestamp: exact}}}, recordcache.Existed{Received: restartAt}, Proof(idx, tables, restartAt))
	got, _, ok := AppendTimes(idx, tables, restarted, restartAt)(0, 55)
	if ok {
		require.InDelta(t, appended(55), got, float64(100*time.Millisecond), "dated %v off by the saved clock of another process", time.Duration(got-appended(55)))
	}
}
