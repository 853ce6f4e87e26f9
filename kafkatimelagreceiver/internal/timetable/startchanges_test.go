package timetable_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// TestStartChanges: a watched store hands out each change of a log start
// once, bracketed by the read before and the read that found it; a read
// that finds the same start is no change; a partition keeps its last four
// until taken; a table reset (a truncated log) tells the taker to forget
// the partition's; a dropped partition's are dropped. An unwatched store
// keeps none.
func TestStartChanges(t *testing.T) {
	a := kafka.TopicPartition{Topic: "a"}
	b := kafka.TopicPartition{Topic: "b"}
	t0 := time.Unix(1_700_000_000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	starts := func(s int, offsets map[kafka.TopicPartition]int64) kafka.OffsetRead {
		return kafka.OffsetRead{Offsets: offsets, Sent: at(s), Received: at(s)}
	}
	tracked := map[kafka.TopicPartition]struct{}{a: {}, b: {}}

	unwatched := timetable.NewStore(16, 0, nil)
	unwatched.Track(tracked, t0, 0)
	unwatched.RecordStart(starts(0, map[kafka.TopicPartition]int64{a: 0}))
	unwatched.RecordStart(starts(1, map[kafka.TopicPartition]int64{a: 10}))
	require.Empty(t, unwatched.TakeStartChanges())

	s := timetable.NewStore(16, 0, nil)
	s.Track(tracked, t0, 0)
	s.WatchStartChanges()
	s.RecordStart(starts(0, map[kafka.TopicPartition]int64{a: 0, b: 5}))
	require.Empty(t, s.TakeStartChanges(), "a first read changes nothing")
	s.RecordStart(starts(10, map[kafka.TopicPartition]int64{a: 0, b: 5}))
	s.RecordStart(starts(20, map[kafka.TopicPartition]int64{a: 100, b: 5}))
	s.RecordStart(starts(30, map[kafka.TopicPartition]int64{a: 100, b: 7}))
	require.Equal(t, []timetable.StartChange{
		{TopicPartition: a, Offset: 100, From: 0, Since: at(10).UnixNano(), At: at(20).UnixNano()},
		{TopicPartition: b, Offset: 7, From: 5, Since: at(20).UnixNano(), At: at(30).UnixNano()},
	}, s.TakeStartChanges())
	require.Empty(t, s.TakeStartChanges(), "taken once")

	for i := range 6 {
		s.RecordStart(starts(40+i, map[kafka.TopicPartition]int64{a: int64(200 + i)}))
	}
	changes := s.TakeStartChanges()
	require.Len(t, changes, 4, "the last four")
	require.Equal(t, int64(202), changes[0].Offset)
	require.Equal(t, int64(205), changes[3].Offset)

	// End offsets below the table's last: the log was truncated, its table
	// reset, and its log start forgotten with it.
	for i, end := range []int64{1000, 3, 4} { // backwards twice: a reset
		s.Record(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{a: end}, Sent: at(49 + i), Received: at(49 + i)})
	}
	s.RecordStart(starts(52, map[kafka.TopicPartition]int64{a: 0}))
	require.Equal(t, []timetable.StartChange{{TopicPartition: a, Restart: true}}, s.TakeStartChanges(),
		"the new log's first start is no change of the old one's")

	s.RecordStart(starts(60, map[kafka.TopicPartition]int64{b: 9}))
	s.Track(map[kafka.TopicPartition]struct{}{a: {}}, at(61), 0)
	require.Empty(t, s.TakeStartChanges(), "b is no longer tracked")
}
