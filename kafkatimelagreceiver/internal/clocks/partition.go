package clocks

import (
	"slices"
	"time"
)

// What a partition's clocks tell the record cache and dating as a whole.

// IndexPinned tells whether the clock the time index's points measure is
// known to be exact: its points agree, allow no offset, and pin it within
// clockPinned or have settled, and enough of them were bounded on both
// sides to show its stamps append times (stamps.go). A clock off, or
// points that disagree (producers' delays, or clocks, that differ), keep
// asking for the records either side of the samples, which bound it the
// most tightly: the points of the records groups sit on alone leave it
// wider than a second, where it is no longer moved by its middle.
func (pc Partition) IndexPinned() bool {
	for _, c := range pc {
		if c.producer == TimeIndexClock {
			lo, hi := c.bounds()
			return c.offset() == 0 && lo <= hi && c.bounded >= stampsShownAfter && (c.reads >= clockSettled || lo > unbounded && hi < noBound && hi-lo <= clockPinned)
		}
	}
	return false
}

// clocksApartBy is how far apart two producers' clocks on one partition
// must be measured for the time index to be unable to date the records of
// the one behind (see Apart).
const clocksApartBy = 2 * clockResolution

// Apart tells whether the reads measured producers whose clocks are more
// than clocksApartBy apart. The time index answers the latest timestamp up
// to a record, not which producer stamped it: a record of the producer
// behind is dated by the latest stamp of the one ahead, early by up to the
// gap between that one's writes. Only a read, which says whose clock
// stamped a record, dates it by its own producer's clock.
func (pc Partition) Apart() bool {
	n := 0
	var lowest, highest int64
	for _, c := range pc {
		if c.producer < 0 {
			// The time index's clock, or that of batches without an ID:
			// not one producer's.
			continue
		}
		o := c.offset()
		if n == 0 {
			lowest, highest = o, o
		}
		lowest, highest = min(lowest, o), max(highest, o)
		n++
	}
	return n >= 2 && highest-lowest > clocksApartBy
}

// Off counts the producers' clocks measured at least clockResolution off
// (their records' timestamps are moved), and the largest of those offsets,
// ahead or behind.
func (pc Partition) Off() (clocks int, largest time.Duration) {
	for _, c := range pc {
		o := c.offset()
		if o == 0 || c.producer == NoProducerClock {
			continue
		}
		clocks++
		largest = max(largest, time.Duration(max(o, -o)))
	}
	return clocks, largest
}

// Forget drops the clocks no read has measured for clockForgetAfter before
// at (unix nanoseconds).
func (pc Partition) Forget(at int64) Partition {
	return slices.DeleteFunc(pc, func(c clock) bool { return at-c.learned > clockForgetAfter })
}

// Offset is how far the clock of producer moves its records' timestamps,
// 0 when it has none or moves nothing.
func (pc Partition) Offset(producer int64) int64 {
	for _, c := range pc {
		if c.producer == producer {
			return c.offset()
		}
	}
	return 0
}
