package progress

import (
	"math"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// marks are a pair's committed offsets and the instants of the scrapes that
// read them, oldest first, at most marksKept. The tracker keeps them for
// every (group, partition) pair of the cluster, so they are packed: the
// first in full, each later one as how far past the first it is, in records
// and whole milliseconds (40 bytes instead of 64). Rates are read over at
// least a quarter of a window of a second or more, where a millisecond is
// noise; and a later mark too far past the first to pack (49 days, 2^32
// records) drops the oldest marks until it fits, as no window needs them.
type marks struct {
	first timetable.Sample // At 0: no marks
	later [marksKept - 1]laterMark
}

// laterMark is a mark after the first.
type laterMark struct {
	records uint32 // past the first mark's offset
	// millis is how many milliseconds past the first mark it was read,
	// plus one: 0 is a mark not in use.
	millis uint32
}

func (m *marks) len() int {
	if m.first.At == 0 {
		return 0
	}
	n := 1
	for n < marksKept && m.later[n-1].millis != 0 {
		n++
	}
	return n
}

// at is mark i (< len).
func (m *marks) at(i int) timetable.Sample {
	if i == 0 {
		return m.first
	}
	l := m.later[i-1]
	return timetable.Sample{Offset: m.first.Offset + int64(l.records), At: m.first.At + int64(l.millis-1)*millisecond}
}

const millisecond = int64(time.Millisecond)

// samples unpacks the marks into buf.
func (m *marks) samples(buf *[marksKept]timetable.Sample) []timetable.Sample {
	n := m.len()
	for i := range n {
		buf[i] = m.at(i)
	}
	return buf[:n]
}

// reset makes s the only mark.
func (m *marks) reset(s timetable.Sample) {
	*m = marks{first: s}
}

// put makes s mark i, for i from 1 to len: the latest mark replaced, or one
// more. s is at or after the marks before it. The marks after i are unused.
func (m *marks) put(i int, s timetable.Sample) {
	for ; i > 0; i-- {
		if l, ok := m.pack(s); ok {
			m.later[i-1] = l
			return
		}
		m.dropOldest()
	}
	m.reset(s)
}

// pack is s as a later mark, rounded down to the millisecond (never later
// than it was read, so that the next scrape's instant is after it); false
// when it is too far past the first mark.
func (m *marks) pack(s timetable.Sample) (laterMark, bool) {
	records := s.Offset - m.first.Offset
	millis := (s.At - m.first.At) / millisecond
	if records < 0 || records > math.MaxUint32 || millis < 0 || millis >= math.MaxUint32 {
		return laterMark{}, false
	}
	return laterMark{records: uint32(records), millis: uint32(millis) + 1}, true
}

// dropOldest drops the first mark: the second becomes the first, exactly,
// as the later marks are whole records and milliseconds past both.
func (m *marks) dropOldest() {
	n := m.len()
	if n <= 1 {
		*m = marks{}
		return
	}
	second := m.later[0]
	m.first = m.at(1)
	var later [marksKept - 1]laterMark
	for j := 2; j < n; j++ {
		l := m.later[j-1]
		later[j-2] = laterMark{records: l.records - second.records, millis: l.millis - second.millis + 1}
	}
	m.later = later
}

// shift moves every mark by by nanoseconds.
func (m *marks) shift(by int64) {
	if m.first.At != 0 {
		m.first.At += by
	}
}
