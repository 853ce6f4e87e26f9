package timetable

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// testClock stands in for the monotonic clock: the reads' own times play
// the wall clock, so that a test can step one without the other. Each read
// made by readAt carries the monotonic reading the clock had then, as
// time.Now would stamp it.
type testClock struct {
	at        time.Time
	monotonic map[int64]time.Time // by the wall time of a read's receipt
}

func (c *testClock) now() time.Time          { return c.at }
func (c *testClock) advance(d time.Duration) { c.at = c.at.Add(d) }

func (c *testClock) readAt(received time.Time, offsets map[kafka.TopicPartition]int64) kafka.OffsetRead {
	if c.monotonic == nil {
		c.monotonic = map[int64]time.Time{}
	}
	c.monotonic[received.UnixNano()] = c.at
	return readAt(received, offsets)
}

// since is the store's monotonic measure between two reads made by readAt.
func (c *testClock) since(from, to time.Time) time.Duration {
	return c.monotonic[to.UnixNano()].Sub(c.monotonic[from.UnixNano()])
}

// readAt is an end-offset read answered at wall time received, sent 5 ms
// before.
func readAt(received time.Time, offsets map[kafka.TopicPartition]int64) kafka.OffsetRead {
	return kafka.OffsetRead{Offsets: offsets, Sent: received.Add(-5 * time.Millisecond), Received: received}
}

// steadyStore has a0 sampled every 10 s, 100 records apart, from wall time
// base: offset 100*i at base+10*i s, for i in 0..4. The wall clock and the
// store's clock agree until the test steps one.
func steadyStore(t *testing.T) (s *Store, clock *testClock, wall time.Time) {
	t.Helper()
	base := time.Unix(1_700_000_000, 0)
	clock = &testClock{at: time.Unix(5_000, 0)} // any origin: only its steps count
	s = NewStore(16, 0, clock.now)
	s.monotonic = clock.since
	track(s, tpA0)
	for i := range 5 {
		if i > 0 {
			clock.advance(10 * time.Second)
		}
		wall = base.Add(time.Duration(i) * 10 * time.Second)
		require.Equal(t, ClockStep{}, s.Record(clock.readAt(wall, map[kafka.TopicPartition]int64{tpA0: int64(100 * i)})))
	}
	return s, clock, wall
}

// A wall clock set back an hour would freeze tables kept as they are:
// every new read older than the newest point and ignored, estimates an
// hour after the scrape (time lag clamped to 0), a truncation unseen. The
// store sees the wall clock move differently from its own and shifts the
// tables into the new wall clock's frame.
func TestClockSteppedBackShiftsTables(t *testing.T) {
	s, clock, wall := steadyStore(t)
	ref := s.Refs([]kafka.TopicPartition{tpA0})[0]
	upper := Sample{Offset: 500, At: wall.Add(10 * time.Second).UnixNano()}
	before, ok, _ := s.Estimate(ref, 250, upper)
	require.True(t, ok)
	lagBefore := upper.At - before

	// A small disagreement is not a step: NTP slews, recording takes time.
	clock.advance(10*time.Second + 300*time.Millisecond)
	wall = wall.Add(10 * time.Second)
	require.Equal(t, ClockStep{}, s.Record(clock.readAt(wall, map[kafka.TopicPartition]int64{tpA0: 500})))

	// The wall clock is set back an hour while the store's clock goes on.
	clock.advance(10 * time.Second)
	wall = wall.Add(10*time.Second - time.Hour)
	step := s.Record(clock.readAt(wall, map[kafka.TopicPartition]int64{tpA0: 600}))
	require.Equal(t, ClockStep{By: -time.Hour, Shifted: true, Tables: 1}, step)
	require.Equal(t, 7, s.Points(), "the read after the step is a point, not ignored")

	// Estimates are in the new frame: a scrape now sees the same time lag.
	upper = Sample{Offset: 700, At: wall.Add(10 * time.Second).UnixNano()}
	after, ok, _ := s.Estimate(ref, 250, upper)
	require.True(t, ok)
	require.Equal(t, before-int64(time.Hour), after)
	require.Equal(t, lagBefore+int64(20*time.Second), upper.At-after, "20 s later, 20 s more lag: nothing else changed")

	// A truncation after the step is seen (two reads below the newest).
	for i := range 2 {
		clock.advance(10 * time.Second)
		wall = wall.Add(10 * time.Second)
		require.Equal(t, ClockStep{}, s.Record(clock.readAt(wall, map[kafka.TopicPartition]int64{tpA0: int64(3 + i)})))
	}
	require.Equal(t, []kafka.TopicPartition{tpA0}, s.TakeResets())
	_, ok, _ = s.Estimate(ref, 250, upper)
	require.False(t, ok, "nothing of the truncated log is left")
}

// A wall clock that jumps ahead of the monotonic clock makes every time in
// the tables too old by the jump if the clock was behind, and time lag of
// every group inflated by it; or the host slept (the monotonic clock stops
// meanwhile) and the tables are right. Either way no time from before the
// jump may date a record: the tables are emptied and refill.
func TestClockSteppedForwardDoesNotInflateTimeLag(t *testing.T) {
	s, clock, wall := steadyStore(t)
	ref := s.Refs([]kafka.TopicPartition{tpA0})[0]

	clock.advance(10 * time.Second)
	wall = wall.Add(10*time.Second + time.Hour)
	step := s.Record(clock.readAt(wall, map[kafka.TopicPartition]int64{tpA0: 500}))
	require.Equal(t, ClockStep{By: time.Hour, Tables: 1}, step)
	require.Equal(t, 1, s.Points(), "only the read after the jump is left")
	_, ok, _ := s.Estimate(ref, 250, Sample{Offset: 600, At: wall.Add(10 * time.Second).UnixNano()})
	require.False(t, ok, "no estimate an hour too old: the record's own timestamp is read instead")

	// The table refills from there, in the new frame.
	clock.advance(10 * time.Second)
	wall = wall.Add(10 * time.Second)
	require.Equal(t, ClockStep{}, s.Record(clock.readAt(wall, map[kafka.TopicPartition]int64{tpA0: 600})))
	at, ok, _ := s.Estimate(ref, 550, Sample{})
	require.True(t, ok)
	require.Equal(t, wall.Add(-5*time.Second).UnixNano(), at)
}

// Restored tables read up to restoreClockTolerance after the store's clock
// say now are restored (two hosts' clocks differ a little); later ones are
// left out, each named.
func TestRestoredTablesMayBeAheadOnlyByTheTolerance(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	saved := NewStore(16, 0, nil)
	track(saved, tpA0, tpA1, tpB0)
	saved.Record(readAt(now.Add(-time.Hour), map[kafka.TopicPartition]int64{tpA0: 1}))
	saved.Record(readAt(now.Add(restoreClockTolerance/2), map[kafka.TopicPartition]int64{tpA1: 1}))
	saved.Record(readAt(now.Add(2*restoreClockTolerance), map[kafka.TopicPartition]int64{tpB0: 1}))

	s := NewStore(16, 0, func() time.Time { return now })
	restored, err := s.RestoreState(saved.EncodeState())
	require.NoError(t, err)
	require.Equal(t, []kafka.TopicPartition{tpA0, tpA1}, s.Partitions())
	require.Equal(t, 2, restored.Tables)
	require.Len(t, restored.Skipped, 1)
	require.ErrorContains(t, restored.Skipped[0], "table of b/0: read at 2023-11-14T22:15:20Z, after now")
}
