// Package timetable holds the interpolation tables that turn a committed
// offset into the time its record was appended: per partition, end offsets
// sampled over time. Table is one partition's table, Store the tables of every
// tracked partition behind one lock, and the state encoding lets a restarted
// receiver keep its history. It does no I/O, and reads no clock but the one
// the store is given.
package timetable

import (
	"math"
	"math/bits"
	"time"
)

// Sample says: by time At, every record below Offset had been appended to the
// partition (Offset is the end offset, i.e. the next offset to be written).
type Sample struct {
	Offset int64
	At     int64 // unix nanoseconds
}

// Table is the interpolation table of one partition: end offsets sampled over
// time, strictly increasing in time and non-decreasing in offset, at the
// resolution of timeUnit. Every time comes from the caller. It is not safe
// for concurrent use; Store guards it.
type Table struct {
	// The points, packed (see pack.go): first is the oldest, last the
	// newest and tail the one before it (first while there are fewer than
	// three); packed holds those in between, marks indexes them.
	first, tail, last Sample
	packed            []byte
	marks             []mark
	n                 int32
	maxPoints         int32
	// sinceSimplified counts the points appended since the table was last
	// simplified (see simplifyEvery).
	sinceSimplified    int16
	sinceSimplifiedAll int16
	// widest is the widest watched segment between two consecutive
	// samples across which the offset rose, in timeUnits (saturating): a
	// record inside it was appended anywhere in it. A simplified segment
	// dates its records to within that plus the tolerance (see Spread).
	widest int32
	// widthBoundUntil: a segment whose newer end is at or before this time
	// may hold points thinning dropped, whose error no tolerance bounds, or
	// was restored from state that did not say (versions before 5); such a
	// segment dates its records only to within its width.
	widthBoundUntil int64
	// lastRead is when the request behind the newest point was received; an
	// older read that completes later must not be mistaken for a truncation.
	lastRead int64
	// maxGap is the longest time between two points that still counts as
	// watched (0: any). A longer segment, as when the collector was down or
	// Kafka unreachable, is a gap: production inside it was not observed, so
	// straight-line interpolation there is a guess the caller may replace.
	maxGap int64
	// gaps holds the times of the points that end a gap segment. Gaps are
	// rare, so a small map beats a flag in every point.
	gaps map[int64]struct{}
	// suspect is a read below the newest point's offset, sent after that
	// point was read, while suspected is set. The log may have been
	// truncated or recreated, or a new leader may not have caught up yet
	// (brokers that do not fence a stale leader can answer a lower high
	// watermark for a moment after a leader change): a second such read
	// confirms a reset, a read at or above the newest offset clears it, and
	// meanwhile the table dates nothing, since it may be the old log's.
	suspect   Sample
	suspected bool
	// wanted is when a Store's Track last named the partition: the store's
	// bookkeeping, kept here rather than in a map of its own beside the
	// tables, which cost a busy partition more than its points do.
	wanted time.Time
}

// NewTable returns an empty table of at most maxPoints points (at least 2:
// interpolation needs both ends) whose segments longer than maxGap are gaps
// (0 or less: none is).
func NewTable(maxPoints int, maxGap time.Duration) *Table {
	maxPoints = min(max(maxPoints, 2), math.MaxInt32)
	return &Table{maxPoints: int32(maxPoints), maxGap: int64(maxGap)}
}

// AddResult tells the caller what Add did with an observation.
type AddResult int

const (
	Appended  AddResult = iota // a new newest point
	Merged                     // extended a flat run or refined the newest point
	Ignored                    // older than the newest point (a concurrent read finished late), or negative: no end offset
	Suspected                  // the end offset went backwards once: a reset, unless the next read says otherwise
	Reset                      // the end offset went backwards twice: the log was recreated or truncated
)

// Add records that the end offset was offset for a request sent at sent whose
// response arrived at received. The point is stamped with received, rounded
// up to the table's resolution: the broker answered before then, so every
// record below offset existed by then.
func (t *Table) Add(offset int64, sent, received time.Time) AddResult {
	return t.add(offset, sent, received, nil)
}

// add is Add with compact's working storage, which may be nil.
func (t *Table) add(offset int64, sent, received time.Time, buf *compactBuffers) AddResult {
	if offset < 0 {
		// Kafka's end offsets start at 0; the packing relies on it.
		return Ignored
	}
	at := quantize(received.UnixNano())
	if t.n == 0 {
		t.push(Sample{Offset: offset, At: at})
		t.lastRead = at
		return Appended
	}
	last := &t.last
	if offset < last.Offset {
		return t.addBackwards(offset, sent.UnixNano(), at)
	}
	if at <= last.At {
		if at == last.At && offset > last.Offset {
			last.Offset = offset
			if t.n == 1 {
				t.first, t.tail = *last, *last
			} else if !t.isGapEnd(*last) {
				t.noteSampled(t.tail, *last)
			}
			t.suspected = false
			return Merged
		}
		return Ignored
	}
	t.lastRead = at
	t.suspected = false
	if offset == last.Offset && t.n >= 2 && t.tail.Offset == offset {
		// A flat run keeps its first point (when the offset was first seen)
		// and its last (the latest time it was still the end): interpolation
		// needs nothing in between. No record was appended meanwhile, so
		// the run is never a gap, however long.
		if t.isGapEnd(*last) {
			delete(t.gaps, last.At)
		}
		last.At = at
		return Merged
	}
	if t.maxGap > 0 && at-last.At > t.maxGap && offset > last.Offset {
		t.markGapEnd(at)
	} else if offset > last.Offset {
		t.noteSampled(*last, Sample{Offset: offset, At: at})
	}
	t.push(Sample{Offset: offset, At: at})
	t.sinceSimplified++
	if t.n > t.maxPoints || t.sinceSimplified >= simplifyEvery {
		t.compact(buf)
	}
	return Appended
}

// addBackwards handles a read below the newest point's offset.
func (t *Table) addBackwards(offset, sent, at int64) AddResult {
	if sent <= t.lastRead {
		// Both reads were in flight together: this one may simply have been
		// served first. Only a read sent after the newest point was received
		// can say the log went backwards.
		return Ignored
	}
	if !t.suspected {
		t.suspect, t.suspected = Sample{Offset: offset, At: at}, true
		return Suspected
	}
	if sent <= t.suspect.At {
		return Ignored // in flight with the suspect read: no second opinion
	}
	first := t.suspect
	t.setPoints(nil)
	if first.Offset <= offset {
		t.push(first)
	}
	t.push(Sample{Offset: offset, At: at})
	t.lastRead = at
	t.gaps = nil
	t.suspected = false
	t.sinceSimplified, t.sinceSimplifiedAll = 0, 0
	t.widest, t.widthBoundUntil = 0, 0
	if first.Offset <= offset {
		t.noteSampled(first, Sample{Offset: offset, At: at})
	}
	return Reset
}

// Estimate estimates when the record at offset c was appended: linear
// interpolation between the last point with end offset <= c and the first
// point with end offset > c. upper is an observation newer than the table
// (normally the scrape's own end-offset read) used as the upper bracket when
// no table point is above c. It never extrapolates: ok is false when c lies
// below the oldest point or above every point. gap tells whether the
// bracketing segment is one whose production was not watched (see maxGap).
// While a reset is suspected (see Add) nothing is estimated.
func (t *Table) Estimate(c int64, upper Sample) (at int64, ok, gap bool) {
	b, ok := t.Bracket(c, upper)
	if !ok {
		return 0, false, false
	}
	return Interpolate(b.Lo, b.Hi, c), true, b.Gap
}

// Bracket is the segment of a table that holds an offset: the record at it
// was appended after Lo.At and by Hi.At, and Hi.Offset-Lo.Offset records
// were appended between the two.
type Bracket struct {
	Lo, Hi Sample
	// Spread bounds how far from the straight line between Lo and Hi
	// (Interpolate) a record inside was appended. For a segment as sampled
	// it is the segment's width: its records may have landed anywhere in
	// it, all at once. Simplification merges sampled segments into one
	// whose line stays within the tolerance of theirs, so a merged segment,
	// however wide, dates its records to within the widest sampled segment
	// plus the tolerance at Lo's age; thinned and restored segments of
	// earlier versions, and gaps, only to within their width.
	Spread int64
	// Gap tells whether the segment's production was not watched (see
	// maxGap).
	Gap bool
}

// Bracket returns the two points Estimate interpolates between; ok is false
// when Estimate would not estimate. When c predates every point of a table
// not suspected of a reset, b.Hi is its oldest point (Store.Oldest), which
// bounds when the record at c was appended, and b.Lo is zero.
func (t *Table) Bracket(c int64, upper Sample) (b Bracket, ok bool) {
	var from seek
	return t.bracket(c, upper, &from)
}

// bracket is Bracket, its search going on from where from says the last
// one on t stopped, and leaving where this one did in from.
func (t *Table) bracket(c int64, upper Sample, from *seek) (b Bracket, ok bool) {
	if t.suspected || t.n == 0 {
		return Bracket{}, false
	}
	if c < t.first.Offset {
		return Bracket{Hi: t.first}, false
	}
	lo, hi, found := t.find(func(p Sample) bool { return p.Offset > c }, from)
	if found {
		gap := t.isGapEnd(hi)
		return Bracket{Lo: lo, Hi: hi, Spread: t.spread(lo, hi, gap), Gap: gap}, true
	}
	if upper.Offset <= c || upper.At <= lo.At {
		return Bracket{}, false
	}
	// Past the newest point: a segment as sampled, by the caller.
	return Bracket{Lo: lo, Hi: upper, Spread: upper.At - lo.At, Gap: t.maxGap > 0 && upper.At-lo.At > t.maxGap}, true
}

// spread is Bracket.Spread of the segment [lo, hi] of the table.
func (t *Table) spread(lo, hi Sample, gap bool) int64 {
	width := hi.At - lo.At
	if gap || hi.At <= t.widthBoundUntil {
		return width
	}
	return min(width, int64(t.widest)*timeUnit+simplifyTolerance(t.last.At-lo.At))
}

// noteSampled widens widest to the segment between two consecutive samples.
func (t *Table) noteSampled(lo, hi Sample) {
	if hi.Offset > lo.Offset {
		t.widest = int32(min(max(int64(t.widest), (hi.At-lo.At+timeUnit-1)/timeUnit), math.MaxInt32))
	}
}

// Idle tells whether the table's newest two points both say end and are at
// least still apart: the end offset has stood still for that long, so that
// nothing has been appended since.
func (t *Table) Idle(end int64, still time.Duration) bool {
	return t.n >= 2 && t.last.Offset == end && t.tail.Offset == end && t.last.At-t.tail.At >= int64(still)
}

// Young tells whether the table's points span less than span: too short a
// watch to tell whether its partition has stood still that long.
func (t *Table) Young(span time.Duration) bool {
	return t.n == 0 || t.last.At-t.first.At < int64(span)
}

func (t *Table) isGapEnd(p Sample) bool {
	_, ok := t.gaps[p.At]
	return ok
}

func (t *Table) markGapEnd(at int64) {
	if t.gaps == nil {
		t.gaps = map[int64]struct{}{}
	}
	t.gaps[at] = struct{}{}
}

// clear empties the table in place, so that Refs to it stay valid.
func (t *Table) clear() {
	t.setPoints(nil)
	t.lastRead = 0
	t.gaps = nil
	t.suspected = false
	t.sinceSimplified, t.sinceSimplifiedAll = 0, 0
	t.widest, t.widthBoundUntil = 0, 0
}

// shift moves every time in the table by d nanoseconds, into the frame of
// a wall clock that was stepped. It reports false, leaving the table as it
// was, when a time would leave [0, MaxInt64].
func (t *Table) shift(d int64) bool {
	d = d / timeUnit * timeUnit
	if _, ok := addTime(t.lastRead, d); !ok {
		return false
	}
	if _, ok := addTime(t.suspect.At, d); t.suspected && !ok {
		return false
	}
	points := t.samples()
	for _, p := range points {
		if _, ok := addTime(p.At, d); !ok {
			return false
		}
	}
	for i := range points {
		points[i].At += d
	}
	t.setPoints(points)
	t.lastRead += d
	t.suspect.At += d
	if t.widthBoundUntil != 0 {
		t.widthBoundUntil, _ = addTime(t.widthBoundUntil, d)
	}
	if len(t.gaps) > 0 {
		shifted := make(map[int64]struct{}, len(t.gaps))
		for at := range t.gaps {
			shifted[at+d] = struct{}{}
		}
		t.gaps = shifted
	}
	return true
}

// addTime adds d to at, reporting false when the sum leaves [0, MaxInt64].
func addTime(at, d int64) (int64, bool) {
	if d > 0 && at > math.MaxInt64-d {
		return 0, false
	}
	sum := at + d
	return sum, sum >= 0
}

// Interpolate is the straight line between two points at offset c. It
// assumes lo.Offset <= c < hi.Offset and lo.At < hi.At, as Bracket returns.
func Interpolate(lo, hi Sample, c int64) int64 {
	switch {
	case c <= lo.Offset || hi.At <= lo.At:
		return lo.At
	case c >= hi.Offset:
		return hi.At
	}
	// In 128-bit integers, rounded down: exact on any span, and inside the
	// brackets since c-lo.Offset < hi.Offset-lo.Offset.
	product, low := bits.Mul64(uint64(c-lo.Offset), uint64(hi.At-lo.At))
	quotient, _ := bits.Div64(product, low, uint64(hi.Offset-lo.Offset))
	return lo.At + int64(quotient)
}
