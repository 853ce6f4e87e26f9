package timetable

import (
	"encoding/binary"
	"math"
	"slices"
)

// A table keeps its points packed: the oldest and the two newest as they
// are, the ones between as varint deltas from the point before (see
// appendPacked), with a mark every markEvery packed points so that a search
// decodes at most one run of them. A busy partition's point then takes 1 to
// 7 bytes instead of 16.

// timeUnit is the resolution of a table's times: a read's received time is
// only known to within its round trip, and a millisecond keeps a sampled
// time delta in two or three bytes where nanoseconds take five or six.
const timeUnit = int64(1_000_000) // 1 ms in nanoseconds

// markEvery is how many packed points one mark covers: a mark costs 16
// bytes, half a byte per point, and a search decodes at most this many.
const markEvery = 32

// packGrowth is how many bytes a packed run grows by at least when an
// appended point does not fit. It grows to the whole of the allocator's
// size class for that (see sizedStorage) rather than doubling, so that what
// a table holds is about what it uses, and is copied once a size class
// (every few dozen points of a busy partition at a kilobyte) rather than
// every few points.
const packGrowth = 48

// packSlack: a table packed again after dropping points keeps its storage
// when they fill all but 1/packSlack of it, about the allocator's spacing
// of size classes above a few hundred bytes, so that storage is reallocated
// when a smaller size class would hold the points and kept otherwise. A
// busy table that thins refills the storage it keeps within a minute;
// reallocating it to the exact size each time only left garbage and
// another copy behind.
const packSlack = 8

// maxPackedPoint is the longest encoding of one point: two uvarints.
const maxPackedPoint = 2 * binary.MaxVarintLen64

// mark is every markEvery-th packed point, and how many bytes the run of
// markEvery packed points it closes takes: where a run begins is the sum
// of the runs before it, a few additions where storing it made a mark half
// as large again. Its time is kept in timeUnits in the high 48 bits of
// atAndRun (any time of a table fits: |At| / timeUnit < 2^44), the run's
// length in the low 16 (at most markEvery x maxPackedPoint = 640).
type mark struct {
	offset   int64
	atAndRun uint64
}

func newMark(p Sample, run int) mark {
	return mark{offset: p.Offset, atAndRun: uint64(p.At/timeUnit)<<16 | uint64(run)}
}

func (m mark) sample() Sample {
	return Sample{Offset: m.offset, At: int64(m.atAndRun) >> 16 * timeUnit}
}

func (m mark) run() int { return int(m.atAndRun & 0xffff) }

// markEnd is where the packed point after marks[i] begins.
func (t *Table) markEnd(i int) int {
	end := 0
	for _, m := range t.marks[:i+1] {
		end += m.run()
	}
	return end
}

// quantize rounds a time up to the table's resolution: a point says every
// record below its offset existed by its time, which rounding up keeps true.
func quantize(at int64) int64 {
	q := at / timeUnit * timeUnit
	if q < at && q <= math.MaxInt64-timeUnit {
		q += timeUnit
	}
	return q
}

// A packed point is its offset and time deltas from the point before, the
// time in timeUnits and told as its difference from the time delta two
// points before in the same run of markEvery (zigzag: small either way),
// since a partition sampled at a steady interval repeats its time deltas,
// or alternates two of them when it is written less often than it is
// sampled; the first two points of a run tell theirs whole, so that a run
// decodes from its mark alone. The end of a flat run (no offset delta),
// every other point of such a partition, takes one varint: its time
// difference doubled, plus one. Any other point takes its offset delta
// doubled, then its time difference. Offsets are never negative (see Add
// and the state decoder), so that an offset delta doubled fits in 64 bits;
// time deltas are taken modulo 2^64, which every sequence of increasing
// times round-trips, and are below 2^45 in timeUnits.

// packCursor is where packing or decoding a table's points stands: the
// point before the next and what the next one's time delta is told against.
type packCursor struct {
	prev Sample
	// older and newer are the time deltas of the two points before the
	// next one; inRun is how many points of the next one's run precede it.
	older, newer uint64
	inRun        int
}

// startCursor returns the cursor for the first point of a run after prev.
func startCursor(prev Sample) packCursor { return packCursor{prev: prev} }

// predicted is the time delta the next point's is told against.
func (c *packCursor) predicted() uint64 {
	if c.inRun < 2 {
		return 0
	}
	return c.older
}

// advance moves the cursor past p, whose time delta was dAt.
func (c *packCursor) advance(p Sample, dAt uint64) {
	c.prev = p
	c.older, c.newer = c.newer, dAt
	c.inRun++
	if c.inRun == markEvery {
		c.inRun = 0
	}
}

// next returns the varints that pack p after the cursor, the second absent
// (flat) for the end of a flat run, and moves the cursor past p.
func (c *packCursor) next(p Sample) (head, timeDiff uint64, flat bool) {
	dOffset := uint64(p.Offset - c.prev.Offset)
	dAt := uint64(p.At-c.prev.At) / uint64(timeUnit)
	timeDiff = zigzag(dAt - c.predicted())
	c.advance(p, dAt)
	if dOffset == 0 {
		return timeDiff<<1 | 1, 0, true
	}
	return dOffset << 1, timeDiff, false
}

// appendPacked packs p after the cursor.
func (c *packCursor) appendPacked(b []byte, p Sample) []byte {
	head, timeDiff, flat := c.next(p)
	b = binary.AppendUvarint(b, head)
	if flat {
		return b
	}
	return binary.AppendUvarint(b, timeDiff)
}

// packedLen is how many bytes appendPacked takes for p.
func (c *packCursor) packedLen(p Sample) int {
	head, timeDiff, flat := c.next(p)
	if flat {
		return uvarintLen(head)
	}
	return uvarintLen(head) + uvarintLen(timeDiff)
}

// readPacked decodes the point at pos of b after the cursor.
func (c *packCursor) readPacked(b []byte, pos int) (Sample, int) {
	head, n := binary.Uvarint(b[pos:])
	pos += n
	dOffset, timeDiff := uint64(0), head>>1
	if head&1 == 0 {
		dOffset = head >> 1
		timeDiff, n = binary.Uvarint(b[pos:])
		pos += n
	}
	dAt := unzigzag(timeDiff) + c.predicted()
	p := Sample{Offset: c.prev.Offset + int64(dOffset), At: c.prev.At + int64(dAt*uint64(timeUnit))}
	c.advance(p, dAt)
	return p, pos
}

// zigzag maps a difference taken modulo 2^64 to a small number when it is
// small in either direction.
func zigzag(d uint64) uint64 { return d<<1 ^ uint64(int64(d)>>63) }

func unzigzag(z uint64) uint64 { return z>>1 ^ -(z & 1) }

// packedEnd returns the cursor after the newest packed point, which packs
// the newest point next.
func (t *Table) packedEnd() packCursor {
	c := t.newestRunStart()
	for pos := t.markEnd(len(t.marks) - 1); pos < len(t.packed); {
		_, pos = c.readPacked(t.packed, pos)
	}
	return c
}

// newestRunStart returns the cursor at the start of the newest run: after
// the newest mark, or the first point.
func (t *Table) newestRunStart() packCursor {
	if len(t.marks) == 0 {
		return startCursor(t.first)
	}
	return startCursor(t.marks[len(t.marks)-1].sample())
}

// len returns how many points the table holds.
func (t *Table) len() int { return int(t.n) }

// sizedStorage returns an empty slice with room for at least n elements:
// all of the allocator's size class for them, which the allocation takes
// whatever capacity it is asked for.
func sizedStorage[E any](n int) []E {
	return slices.Grow([]E(nil), n)
}

// samples returns every point, oldest first, in a new slice.
func (t *Table) samples() []Sample {
	return t.appendSamples(make([]Sample, 0, t.n))
}

// appendSamples appends every point, oldest first, to out.
func (t *Table) appendSamples(out []Sample) []Sample {
	if t.n == 0 {
		return out
	}
	out = append(out, t.first)
	c := startCursor(t.first)
	for pos := 0; pos < len(t.packed); {
		var p Sample
		p, pos = c.readPacked(t.packed, pos)
		out = append(out, p)
	}
	if t.n >= 2 {
		out = append(out, t.last)
	}
	return out
}

// setPoints replaces the points with pts (times in timeUnits). They are
// packed into the storage the table has when they fill it to within
// packSlack, and into new storage of their size otherwise.
func (t *Table) setPoints(pts []Sample) {
	t.n = int32(len(pts))
	t.first, t.tail, t.last = Sample{}, Sample{}, Sample{}
	if len(pts) < 3 {
		t.packed, t.marks = nil, nil
		if len(pts) > 0 {
			t.first, t.tail, t.last = pts[0], pts[0], pts[len(pts)-1]
		}
		return
	}
	t.first, t.last = pts[0], pts[len(pts)-1]
	inner := pts[1 : len(pts)-1]
	size, sizing := 0, startCursor(pts[0])
	for _, p := range inner {
		size += sizing.packedLen(p)
	}
	t.packed = reuseOrSize(t.packed, size)
	t.marks = reuseOrSize(t.marks, len(inner)/markEvery)
	c, runStart := startCursor(pts[0]), 0
	for i, p := range inner {
		t.packed = c.appendPacked(t.packed, p)
		if (i+1)%markEvery == 0 {
			t.marks = append(t.marks, newMark(p, len(t.packed)-runStart))
			runStart = len(t.packed)
		}
	}
	t.tail = inner[len(inner)-1]
}

// reuseOrSize empties s for n elements: in place when they fill its
// storage to within packSlack, else in new storage sized for them (nil for
// none).
func reuseOrSize[E any](s []E, n int) []E {
	if n <= cap(s) && n >= cap(s)-cap(s)/packSlack {
		return s[:0]
	}
	if n == 0 {
		return nil
	}
	return sizedStorage[E](n)
}

// push makes p the newest point, packing the one it follows.
func (t *Table) push(p Sample) {
	var c packCursor
	if t.n >= 2 {
		c = t.packedEnd()
	}
	t.pushAfter(p, &c)
}

// pushAfter is push with the cursor after the newest packed point (any
// while the table has fewer than two points), which it moves on.
func (t *Table) pushAfter(p Sample, c *packCursor) {
	switch t.n {
	case 0:
		t.first, t.tail = p, p
	case 1:
	default:
		if cap(t.packed)-len(t.packed) < maxPackedPoint {
			t.packed = append(sizedStorage[byte](len(t.packed)+packGrowth), t.packed...)
		}
		t.packed = c.appendPacked(t.packed, t.last)
		if packedCount := int(t.n) - 1; packedCount%markEvery == 0 {
			runStart := t.markEnd(len(t.marks) - 1)
			if len(t.marks) == cap(t.marks) {
				// One more, in its size class: append would double them.
				t.marks = append(sizedStorage[mark](len(t.marks)+1), t.marks...)
			}
			t.marks = append(t.marks, newMark(t.last, len(t.packed)-runStart))
		}
		t.tail = t.last
	}
	if t.n == 1 {
		t.tail = t.first
	}
	t.last = p
	t.n++
}

// appendNewestRun appends to out the points from the newest mark on (the
// first point when there is no mark), oldest first: the part of the table
// that replaceNewestRun rewrites.
func (t *Table) appendNewestRun(out []Sample) []Sample {
	if len(t.marks) == 0 {
		return t.appendSamples(out)
	}
	c := t.newestRunStart()
	out = append(out, c.prev)
	for pos := t.markEnd(len(t.marks) - 1); pos < len(t.packed); {
		var p Sample
		p, pos = c.readPacked(t.packed, pos)
		out = append(out, p)
	}
	return append(out, t.last)
}

// replaceNewestRun replaces what appendNewestRun returned with run, which
// keeps its first point (the newest mark's) and its last. Run is that run
// with points dropped, so that it is packed again in place, or nearly.
func (t *Table) replaceNewestRun(run []Sample) {
	if len(t.marks) == 0 {
		t.setPoints(run)
		return
	}
	newest := len(t.marks) - 1
	t.packed = t.packed[:t.markEnd(newest)]
	// The mark's point is now the newest packed one, the tail; run holds
	// it and the newest point at least.
	t.n = int32(len(t.marks)*markEvery + 2)
	t.tail, t.last = t.marks[newest].sample(), run[1]
	c := startCursor(t.tail)
	for _, p := range run[2:] {
		t.pushAfter(p, &c)
	}
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
