package lag

import "github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"

// ExpectedAppend is when the record at offset c was most likely appended,
// given only its bracket: the n = hi.Offset-lo.Offset records of the bracket
// were all appended after lo.At and by hi.At, and with nothing else known
// they are the order statistics of that interval, the k-th (from 0) expected
// at (k+1)/(n+1) of it. The straight line (k/n) puts the bracket's first
// record at lo.At, the earliest it can have been appended, which on a
// partition with a record or two per sampling interval overstates every time
// lag by about half the interval. It assumes lo.Offset <= c < hi.Offset and
// lo.At < hi.At, as Bracket returns; the result is strictly inside the
// bracket.
func ExpectedAppend(lo, hi timetable.Sample, c int64) int64 {
	k, n := float64(c-lo.Offset), float64(hi.Offset-lo.Offset)
	return min(hi.At, lo.At+int64((k+1)/(n+1)*float64(hi.At-lo.At)))
}

// coarseBracketRatio: a table estimate is trusted when what its bracket
// leaves uncertain is less than this fraction of the time lag it yields.
// The table cannot tell where inside a segment as sampled its records
// landed (a burst lands at one instant anywhere in it), so its error there
// is bounded only by the segment's width: a group near the head of a
// partition, seconds behind, is dated by the record's own timestamp
// instead, within the record-read budget. A segment simplification merged
// is wider but no less certain (timetable.Bracket.Spread).
const coarseBracketRatio = 0.1

// Coarse tells whether bracket b dates the record at offset c too loosely
// for the time lag measured at at from estimate: the estimate may be off by
// b's Spread plus its own distance from the bracket's straight line, and
// never by more than the bracket's width; coarse is more than
// coarseBracketRatio of that time lag.
func Coarse(b timetable.Bracket, c, estimate, at int64) bool {
	off := estimate - timetable.Interpolate(b.Lo, b.Hi, c)
	uncertainty := min(b.Hi.At-b.Lo.At, b.Spread+max(off, -off))
	return float64(uncertainty) > coarseBracketRatio*float64(at-estimate)
}
