// Package health follows consumer groups from scrape to scrape: it counts
// their rebalances and gives each group and each of its partitions a
// Burrow-style status. It does no I/O and reads no clock, so that every rule
// can be tested on a history of observations alone.
package health

// Status is a partition's or group's status, in increasing severity: a
// group's is the worst of its partitions', so the order is what max needs.
type Status int

const (
	// StatusUnknown is a partition's that nothing judges yet: no end offset
	// was read for it, now or in its window. It is below every status, so
	// that a group's worst is that of the partitions that were judged; it
	// is never written.
	StatusUnknown Status = iota - 1
	StatusOK
	StatusWarn
	StatusStall
	StatusStop
	StatusRewind
)

// Statuses lists every status, in order: kafka.consumer_group.status has one
// point per status.
var Statuses = []Status{StatusOK, StatusWarn, StatusStall, StatusStop, StatusRewind}

// String is the value of the metrics' status attribute.
func (s Status) String() string {
	switch s {
	case StatusWarn:
		return "WARN"
	case StatusStall:
		return "STALL"
	case StatusStop:
		return "STOP"
	case StatusRewind:
		return "REWIND"
	default:
		return "OK"
	}
}
