package timetable

import "time"

// clockStepTolerance is the largest difference between how far the wall
// clock and the store's clock moved between two reads that is not taken
// for a step. NTP slews rather than steps offsets below 128 ms, and a read
// is recorded within milliseconds of being answered.
const clockStepTolerance = time.Second

// clockFrame pairs the wall time a read carries with the store's clock when
// it was recorded. Their difference stays put until the wall clock steps.
type clockFrame struct {
	wall int64
	at   time.Time
	set  bool
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

// observeClock compares the wall time of a read being recorded with the
// store's clock, and corrects the tables for a step. Called with s.mu held.
func (s *Store) observeClock(received time.Time) ClockStep {
	if s.clock == nil {
		return ClockStep{}
	}
	now := s.clock()
	prev := s.frame
	s.frame = clockFrame{wall: received.UnixNano(), at: now, set: true}
	if !prev.set {
		return ClockStep{}
	}
	step := time.Duration(s.frame.wall-prev.wall) - now.Sub(prev.at)
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
