package timetable

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

var (
	tpA0 = kafka.TopicPartition{Topic: "a", Partition: 0}
	tpA1 = kafka.TopicPartition{Topic: "a", Partition: 1}
	tpB0 = kafka.TopicPartition{Topic: "b", Partition: 0}
)

func partitionSet(tps ...kafka.TopicPartition) map[kafka.TopicPartition]struct{} {
	set := make(map[kafka.TopicPartition]struct{}, len(tps))
	for _, tp := range tps {
		set[tp] = struct{}{}
	}
	return set
}

// track makes the partitions the tracked set, dropping every other table.
func track(s *Store, tps ...kafka.TopicPartition) (dropped int) {
	_, dropped = s.Track(partitionSet(tps...), time.Time{}, 0)
	return dropped
}

// offsetRead is a read sent 5 ms before it was received at receivedSec.
func offsetRead(receivedSec int64, offsets map[kafka.TopicPartition]int64) kafka.OffsetRead {
	received := time.Unix(receivedSec, 0)
	return kafka.OffsetRead{Offsets: offsets, Sent: received.Add(-5 * time.Millisecond), Received: received}
}

func TestStoreTrack(t *testing.T) {
	s := NewStore(8, 0, nil)
	require.Empty(t, s.Partitions())
	require.Zero(t, track(s, tpB0, tpA1, tpA0))
	require.Equal(t, []kafka.TopicPartition{tpA0, tpA1, tpB0}, s.Partitions())

	s.Record(offsetRead(100, map[kafka.TopicPartition]int64{tpA0: 10, tpA1: 20, tpB0: 30}))
	s.RecordStart(offsetRead(100, map[kafka.TopicPartition]int64{tpA0: 1, tpA1: 2, tpB0: 3}))
	require.Equal(t, 3, s.Points())

	// Tracking again keeps the tables of partitions still tracked.
	require.Equal(t, 2, track(s, tpA1))
	require.Equal(t, []kafka.TopicPartition{tpA1}, s.Partitions())
	require.Equal(t, 1, s.Points())
	require.Equal(t, map[kafka.TopicPartition]int64{tpA1: 2}, s.StartOffsets(), "a dropped table's log start goes with it")

	// A partition tracked again starts from nothing.
	require.Zero(t, track(s, tpA0, tpA1))
	require.Equal(t, 1, s.Points())
	_, ok, _ := s.Estimate(s.Refs([]kafka.TopicPartition{tpA0})[0], 5, Sample{Offset: 100, At: unixSec(200)})
	require.False(t, ok)
}

func TestStoreRecordOnlyTracked(t *testing.T) {
	s := NewStore(8, 0, nil)
	track(s, tpA0)
	s.Record(offsetRead(100, map[kafka.TopicPartition]int64{tpA0: 10, tpB0: 30}))
	s.RecordStart(offsetRead(100, map[kafka.TopicPartition]int64{tpA0: 1, tpB0: 3}))
	require.Equal(t, 1, s.Points())
	require.Equal(t, []kafka.TopicPartition{tpA0}, s.Partitions(), "a read does not start tracking")
	require.Equal(t, map[kafka.TopicPartition]int64{tpA0: 1}, s.StartOffsets())

	starts := s.StartOffsets()
	starts[tpA0] = 99
	require.Equal(t, map[kafka.TopicPartition]int64{tpA0: 1}, s.StartOffsets(), "StartOffsets returns a copy")
}

func TestStoreResets(t *testing.T) {
	s := NewStore(8, 0, nil)
	track(s, tpA0, tpA1, tpB0)
	require.Nil(t, s.TakeResets())
	s.Record(offsetRead(100, map[kafka.TopicPartition]int64{tpA0: 1000, tpA1: 1000, tpB0: 1000}))
	s.RecordStart(offsetRead(100, map[kafka.TopicPartition]int64{tpA0: 10, tpA1: 10, tpB0: 10}))

	// b/0 and a/0 went backwards, in a read sent after the last: their logs
	// may have been recreated. What was read of their records may be of the
	// old logs: the caller is told at once.
	s.Record(offsetRead(110, map[kafka.TopicPartition]int64{tpA0: 5, tpA1: 1100, tpB0: 7}))
	require.Equal(t, []kafka.TopicPartition{tpA0, tpB0}, s.TakeResets(), "suspected resets")
	require.Len(t, s.StartOffsets(), 3, "the log starts stay until a reset is confirmed")
	_, ok := s.Oldest(s.Refs([]kafka.TopicPartition{tpB0})[0])
	require.False(t, ok, "a table suspected of a reset vouches for nothing")
	// The next read confirms both: their log starts belong to the old logs.
	s.Record(offsetRead(111, map[kafka.TopicPartition]int64{tpA0: 5, tpB0: 7}))
	require.Equal(t, map[kafka.TopicPartition]int64{tpA1: 10}, s.StartOffsets())
	// a/0 again, and a read served out of order, which is no reset.
	s.Record(offsetRead(120, map[kafka.TopicPartition]int64{tpA0: 2}))
	s.Record(offsetRead(121, map[kafka.TopicPartition]int64{tpA0: 2}))
	s.Record(kafka.OffsetRead{
		Offsets: map[kafka.TopicPartition]int64{tpA1: 1050},
		Sent:    time.Unix(109, 0), Received: time.Unix(122, 0),
	})

	require.Equal(t, []kafka.TopicPartition{tpA0, tpB0}, s.TakeResets(), "sorted, each once")
	require.Nil(t, s.TakeResets(), "taken resets are forgotten")

	// The new log's table is there to estimate from.
	at, ok, _ := s.Estimate(s.Refs([]kafka.TopicPartition{tpB0})[0], 7, Sample{Offset: 17, At: unixSec(120)})
	require.True(t, ok)
	require.Equal(t, unixSec(111), at)
	oldest, ok := s.Oldest(s.Refs([]kafka.TopicPartition{tpB0})[0])
	require.True(t, ok)
	require.Equal(t, Sample{Offset: 7, At: unixSec(110)}, oldest)

	// A reset of a partition dropped before it was taken is not reported.
	s.Record(offsetRead(130, map[kafka.TopicPartition]int64{tpA0: 1, tpB0: 1}))
	s.Record(offsetRead(131, map[kafka.TopicPartition]int64{tpA0: 1, tpB0: 1}))
	track(s, tpA0, tpA1)
	require.Equal(t, []kafka.TopicPartition{tpA0}, s.TakeResets())
}

func TestStoreRefs(t *testing.T) {
	s := NewStore(8, 30*time.Second, nil)
	track(s, tpA0, tpA1)
	for sec := int64(0); sec <= 100; sec += 10 {
		s.Record(offsetRead(sec, map[kafka.TopicPartition]int64{tpA0: 10 * sec, tpA1: sec}))
	}
	// Down from 100 s to 400 s while records were appended.
	s.Record(offsetRead(400, map[kafka.TopicPartition]int64{tpA0: 4000, tpA1: 4000}))

	refs := s.Refs([]kafka.TopicPartition{tpB0, tpA1, tpA0})
	require.Len(t, refs, 3)
	require.Equal(t, Ref{}, refs[0], "an untracked partition has no table")

	upper := Sample{Offset: 4100, At: unixSec(410)}
	at, ok, gap := s.Estimate(refs[2], 500, upper)
	require.True(t, ok)
	require.False(t, gap)
	require.Equal(t, unixSec(50), at)
	at, ok, gap = s.Estimate(refs[2], 2500, upper)
	require.True(t, ok)
	require.True(t, gap, "the store's maxGap applies to its tables")
	require.Equal(t, unixSec(250), at)
	at, ok, _ = s.Estimate(refs[1], 50, upper)
	require.True(t, ok)
	require.Equal(t, unixSec(50), at)

	at, ok, gap = s.Estimate(Ref{}, 50, upper)
	require.Equal(t, [3]any{int64(0), false, false}, [3]any{at, ok, gap})
	at, ok, gap = s.Estimate(refs[0], 50, upper)
	require.Equal(t, [3]any{int64(0), false, false}, [3]any{at, ok, gap})
	require.Empty(t, s.Refs(nil))
}

func TestStoreStateRoundTrip(t *testing.T) {
	s := NewStore(64, time.Minute, nil)
	track(s, tpA0, tpA1, tpB0)
	for sec := int64(0); sec < 200; sec += 10 {
		s.Record(offsetRead(1_700_000_000+sec, map[kafka.TopicPartition]int64{tpA0: 7 * sec, tpB0: sec * sec}))
	}
	s.RecordStart(offsetRead(1_700_000_200, map[kafka.TopicPartition]int64{tpA0: 3, tpA1: 0}))
	data := s.EncodeState()

	r := NewStore(8, time.Minute, nil)
	restored, err := r.RestoreState(data)
	require.NoError(t, err)
	require.Equal(t, 2, restored.Tables, "a table without points is not saved")
	require.Empty(t, restored.Skipped)
	require.Equal(t, []kafka.TopicPartition{tpA0, tpB0}, r.Partitions())
	require.Equal(t, map[kafka.TopicPartition]int64{tpA0: 3}, r.StartOffsets())
	require.LessOrEqual(t, r.Points(), 16, "restored tables are thinned to the store's bound")

	// Restored tables are tracked like any other until Track says otherwise.
	r.Record(offsetRead(1_700_000_300, map[kafka.TopicPartition]int64{tpA0: 2000}))
	upper := Sample{Offset: 2100, At: unixSec(1_700_000_310)}
	refs := r.Refs([]kafka.TopicPartition{tpA0})
	at, ok, gap := r.Estimate(refs[0], 7*150, upper)
	require.True(t, ok)
	require.False(t, gap)
	require.Equal(t, unixSec(1_700_000_150), at)
	_, ok, gap = r.Estimate(refs[0], 1500, upper)
	require.True(t, ok)
	require.True(t, gap, "110 s without a sample is a gap under the restoring store's maxGap")
}

// A store larger than one chunk of the save is saved whole, in order, and
// the same as the tables encoded at once.
func TestStoreStateOfManyTables(t *testing.T) {
	s := NewStore(64, 0, nil)
	wanted := map[kafka.TopicPartition]struct{}{}
	offsets := map[kafka.TopicPartition]int64{}
	for p := range 3*encodeChunk + 7 {
		tp := kafka.TopicPartition{Topic: "many", Partition: int32(p)}
		wanted[tp] = struct{}{}
		offsets[tp] = int64(p)
	}
	s.Track(wanted, time.Unix(0, 0), 0)
	s.Record(offsetRead(1_700_000_000, offsets))
	for tp := range offsets {
		offsets[tp] += 10 + int64(tp.Partition%3)
	}
	s.Record(offsetRead(1_700_000_010, offsets))
	data := s.EncodeState()

	var tables []storedTable
	for _, tp := range s.Partitions() {
		tables = append(tables, storedTable{tp: tp, table: s.tables[tp]})
	}
	require.Equal(t, encodeState("", tables), data)
	r := NewStore(64, 0, nil)
	restored, err := r.RestoreState(data)
	require.NoError(t, err)
	require.Equal(t, len(wanted), restored.Tables)
	require.Equal(t, s.Points(), r.Points())
}

func TestStoreRestoreRejectsCorruptState(t *testing.T) {
	s := NewStore(16, 0, nil)
	track(s, tpA0)
	restored, err := s.RestoreState([]byte("KTLT\x01\x05garbage"))
	require.ErrorIs(t, err, ErrStateCorrupt)
	require.ErrorContains(t, err, "restore interpolation tables from 13 bytes")
	require.Zero(t, restored.Tables)
	require.Equal(t, []kafka.TopicPartition{tpA0}, s.Partitions(), "nothing is installed from corrupt state")

	_, err = s.RestoreState(append([]byte(stateMagic), 7, 0))
	require.ErrorContains(t, err, "version 7")
	require.NotErrorIs(t, err, ErrStateCorrupt)
}

// TestStoreConcurrentUse runs the sampler's, the scraper's and the saver's
// calls together, for the race detector.
func TestStoreConcurrentUse(t *testing.T) {
	s := NewStore(32, time.Minute, nil)
	tps := []kafka.TopicPartition{tpA0, tpA1, tpB0}
	track(s, tps...)
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { // the sampler
		defer wg.Done()
		for i := int64(1); i <= 500; i++ {
			offset := 10 * i
			if i%100 == 0 {
				offset = 1 // a truncation now and then
			}
			s.Record(offsetRead(i, map[kafka.TopicPartition]int64{tpA0: offset, tpA1: offset, tpB0: offset}))
			if i%10 == 0 {
				s.RecordStart(offsetRead(i, map[kafka.TopicPartition]int64{tpA0: i}))
			}
		}
	}()
	go func() { // the scraper
		defer wg.Done()
		for range 200 {
			track(s, tps...)
			_ = s.StartOffsets()
			_ = s.TakeResets()
			for _, ref := range s.Refs(tps) {
				s.Estimate(ref, 100, Sample{Offset: 1 << 40, At: 1 << 62})
			}
			_ = s.Points()
		}
	}()
	go func() { // the saver
		defer wg.Done()
		for range 50 {
			_, err := decodeAll(s.EncodeState(), 32, time.Minute)
			require.NoError(t, err)
		}
	}()
	wg.Wait()
}

// While a group or coordinator cannot be read, the tables of partitions no
// read names are kept, but only for the bound the caller gives: groups and
// topics that churn during a long outage must not grow the tables, the
// saved state and the sampler's work without end.
func TestUnwantedTablesOutlivePartialReadsOnlyForABound(t *testing.T) {
	s := NewStore(8, 0, nil)
	t0 := time.Unix(1_700_000_000, 0)
	tracked, dropped := s.Track(partitionSet(tpA0, tpA1), t0, 0)
	require.Equal(t, []kafka.TopicPartition{tpA0, tpA1}, tracked)
	require.Zero(t, dropped)

	// Partial reads name only a/0 (and later b/0).
	tracked, dropped = s.Track(partitionSet(tpA0), t0.Add(59*time.Minute), time.Hour)
	require.Equal(t, []kafka.TopicPartition{tpA0, tpA1}, tracked, "a/1 may be a group's that could not be read")
	require.Zero(t, dropped)
	tracked, dropped = s.Track(partitionSet(tpA0, tpB0), t0.Add(time.Hour), time.Hour)
	require.Equal(t, []kafka.TopicPartition{tpA0, tpB0}, tracked, "not wanted for the bound: dropped")
	require.Equal(t, 1, dropped)

	// A complete read drops what it does not name at once.
	tracked, dropped = s.Track(partitionSet(tpB0), t0.Add(time.Hour+time.Second), 0)
	require.Equal(t, []kafka.TopicPartition{tpB0}, tracked)
	require.Equal(t, 1, dropped)
}

// A deleted topic a group still commits on answers UNKNOWN_TOPIC_OR_PARTITION
// at every read. After a few reads in a row the sampler stops asking (each
// ask costs a metadata refresh); the scrape's read, which names every
// tracked partition, still does, and a partition found again is sampled
// again.
func TestPartitionsTheClusterKeepsCallingUnknownAreNotSampled(t *testing.T) {
	s := NewStore(8, 0, nil)
	track(s, tpA0, tpB0)
	unknownB := func(sec int64) kafka.OffsetRead {
		read := offsetRead(sec, map[kafka.TopicPartition]int64{tpA0: sec})
		read.Unknown = []kafka.TopicPartition{tpB0}
		return read
	}
	for sec := int64(1); sec < unknownReadsBeforeSkip; sec++ {
		s.Record(unknownB(sec))
		require.Equal(t, []kafka.TopicPartition{tpA0, tpB0}, s.SamplePartitions(), "UNKNOWN for a moment is no reason to stop")
	}
	s.Record(unknownB(unknownReadsBeforeSkip))
	require.Equal(t, []kafka.TopicPartition{tpA0}, s.SamplePartitions())
	require.Equal(t, []kafka.TopicPartition{tpA0, tpB0}, s.Partitions(), "still tracked: a group commits on it")

	s.Record(offsetRead(10, map[kafka.TopicPartition]int64{tpA0: 10, tpB0: 0}))
	require.Equal(t, []kafka.TopicPartition{tpA0, tpB0}, s.SamplePartitions(), "created again: sampled again")
}

// Topic ids tell a topic deleted and created again from the old one even
// when the new log's end offset never went below the old one's; the cluster
// id tells another cluster's state from this one's.
func TestIdentityChangesResetTables(t *testing.T) {
	s := NewStore(8, 0, nil)
	track(s, tpA0, tpA1, tpB0)
	s.Record(offsetRead(100, map[kafka.TopicPartition]int64{tpA0: 10, tpA1: 10, tpB0: 10}))
	s.Record(offsetRead(110, map[kafka.TopicPartition]int64{tpA0: 20, tpA1: 20, tpB0: 20}))
	s.RecordStart(offsetRead(110, map[kafka.TopicPartition]int64{tpA0: 1, tpA1: 1, tpB0: 1}))
	require.False(t, s.Identified())
	idA, idB := kafka.TopicID{1}, kafka.TopicID{2}
	require.Equal(t, IdentityChange{}, s.Identify(kafka.Identity{ClusterID: "c1", Topics: map[string]kafka.TopicID{"a": idA, "b": idB}}))
	require.True(t, s.Identified())
	require.Nil(t, s.TakeResets())

	// Old brokers give no topic ids: nothing is known, nothing changes.
	require.Equal(t, IdentityChange{}, s.Identify(kafka.Identity{ClusterID: "c1"}))
	require.Equal(t, 6, s.Points())

	// "a" was recreated and grew past its old end before a read saw it.
	change := s.Identify(kafka.Identity{ClusterID: "c1", Topics: map[string]kafka.TopicID{"a": {3}, "b": idB}})
	require.Equal(t, IdentityChange{Recreated: []string{"a"}}, change)
	require.Equal(t, 2, s.Points(), "only b's table is left")
	require.Equal(t, []kafka.TopicPartition{tpA0, tpA1}, s.TakeResets(), "what was read of a's records goes too")
	require.Equal(t, map[kafka.TopicPartition]int64{tpB0: 1}, s.StartOffsets())

	// Saved and restored, the ids come along; another cluster empties all.
	restored := NewStore(8, 0, nil)
	_, err := restored.RestoreState(s.EncodeState())
	require.NoError(t, err)
	require.False(t, restored.Identified(), "restored tables are to be checked again")
	require.Equal(t, IdentityChange{Recreated: []string{"b"}}, restored.Identify(kafka.Identity{ClusterID: "c1", Topics: map[string]kafka.TopicID{"b": {9}}}))

	_, err = restored.RestoreState(s.EncodeState())
	require.NoError(t, err)
	require.Equal(t, IdentityChange{FromCluster: "c1"}, restored.Identify(kafka.Identity{ClusterID: "c2", Topics: map[string]kafka.TopicID{"b": idB}}))
	require.Zero(t, restored.Points())
	require.Equal(t, []kafka.TopicPartition{tpB0}, restored.Partitions(), "still tracked, from nothing")
}
