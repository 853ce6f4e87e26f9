package timetable

import "time"

// clockStepTolerance is the largest difference between how far the wall
// clock and the monotonic clock moved between two reads that is not taken
// for a step. NTP slews rather than steps offsets below 128 ms.
const clockStepTolerance = time.Second

// clockFrame is the receive time of the last read recorded, with the
// monotonic reading time.Now gave it.
type clockFrame struct {
	received time.Time
	set      bool
}

// ClockStep reports a step of the wall clock that Record corrected the
// tables for. The zero ClockStep means there was none.
type ClockStep struct {
	// By is how much further the wall clock moved than the monotonic clock
	// between two reads: negative when it was stepped back.
	By time.Duration
	// Shifted tells that the tables' times were moved by By. A clock stepped
	// back can only have been set back, and the tables are shifted to match.
	// One that jumped ahead was either wrong before (the tables are late by
	// By) or the host slept, which stops the monotonic clock (the tables are
	// right): the two need opposite corrections, so the tables are emptied
	// instead and refill from new reads.
	Shifted bool
	// Tables is how many tables were shifted or emptied.
	Tables int
}

// monotonicSince is how far the monotonic clock moved from one read's
// receipt to the next's: time.Now stamps both readings, and Sub uses the
// monotonic ones. Times without one (made up, or restored) measure by the
// wall clock, which then cannot show a step.
func monotonicSince(from, to time.Time) time.Duration { return to.Sub(from) }

// observeClock compares how far the wall clock and the monotonic clock moved
// between the receipt of the last read and of this one, both as the read
// carries them, and corrects the tables for a step. When the read is
// recorded does not matter: a read held back by a metadata refresh or by
// this store's lock carries the same readings. Called with s.mu held.
func (s *Store) observeClock(received time.Time) ClockStep {
	if s.clock == nil || received.IsZero() {
		return ClockStep{}
	}
	since := s.monotonic
	if since == nil {
		since = monotonicSince
	}
	prev := s.frame
	if prev.set && since(prev.received, received) < 0 {
		// The sampler's and the scrape's reads may be recorded out of
		// order: one received before the last recorded is measured against
		// nothing newer than what the frame already holds.
		return ClockStep{}
	}
	s.frame = clockFrame{received: received, set: true}
	if !prev.set {
		return ClockStep{}
	}
	step := time.Duration(received.UnixNano()-prev.received.UnixNano()) - since(prev.received, received)
	switch {
	case step < -clockStepTolerance:
		for _, t := range s.tables {
			if !t.shift(int64(step)) {
				t.clear()
			}
		}
		return ClockStep{By: step, Shifted: true, Tables: len(s.tables)}
	case step > clockStepTolerance:
		for _, t := range s.tables {
			t.clear()
		}
		return ClockStep{By: step, Tables: len(s.tables)}
	}
	return ClockStep{}
}
