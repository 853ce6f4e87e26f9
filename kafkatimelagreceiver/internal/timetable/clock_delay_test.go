package timetable

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// A read recorded long after it was answered (a metadata refresh between
// the answer and Record, a wait for the store's lock, a throttled CPU) is
// not a step of the wall clock: the wall and monotonic readings the read
// carries moved together. Only the wall clock moving against the monotonic
// one between two reads is a step. The reads are stamped by time.Now, with
// both readings, moved on by the delays the test lets pass: adding a
// duration to a time.Time moves its wall and monotonic readings together,
// as real time passing does, without waiting for it.
func TestDelayedRecordIsNotAClockStep(t *testing.T) {
	var passed time.Duration // what the delays so far add to time.Now
	now := func() time.Time { return time.Now().Add(passed) }
	s := NewStore(16, 0, now)
	// unwatched keeps the same reads without watching the wall clock: what
	// the table holds when nothing is taken for a step.
	unwatched := NewStore(16, 0, nil)
	track(s, tpA0)
	track(unwatched, tpA0)
	record := func(offset int64, delay time.Duration) ClockStep {
		read := kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{tpA0: offset}, Sent: now()}
		read.Received = now()
		passed += delay
		unwatched.Record(read)
		return s.Record(read)
	}
	require.Equal(t, ClockStep{}, record(1, 0))
	require.Equal(t, ClockStep{}, record(2, 0))
	require.Equal(t, ClockStep{}, record(3, clockStepTolerance+200*time.Millisecond), "a late Record is not a clock set back")
	require.Equal(t, ClockStep{}, record(4, 0), "a prompt Record after a late one is not a clock jumping ahead")
	require.Equal(t, unwatched.Points(), s.Points(), "no table was shifted or emptied")
	require.GreaterOrEqual(t, s.Points(), 2)
	oldest, ok := s.Oldest(s.Refs([]kafka.TopicPartition{tpA0})[0])
	require.True(t, ok)
	want, _ := unwatched.Oldest(unwatched.Refs([]kafka.TopicPartition{tpA0})[0])
	require.Equal(t, want, oldest, "the table was not shifted")
}
