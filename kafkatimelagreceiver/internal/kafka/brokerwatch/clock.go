package brokerwatch

import "time"

// Clock is the one place the watch reads the time from and schedules its
// checks on: every instant the rules compare (when a request was written,
// when a call began or began to wait, when a skip ends, when a connection
// was last used) is the clock's. The client runs on SystemClock; tests
// move a clock of their own, so that what the rules decide at an instant
// is asserted at that instant rather than after a wait.
type Clock interface {
	Now() time.Time
	// AfterFunc runs f, in a goroutine of its own, once d has passed; stop
	// cancels it and tells whether it had not run yet.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// SystemClock is the system's time and timers.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}
