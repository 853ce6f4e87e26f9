package timetable

import (
	"math"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/statecodec"
)

// decodePoints reads the points and gap ends of a table of version 4 or
// later, packed as the tables pack them when packedPoints (version 6), as
// two varints each otherwise. bad names the first invariant they break; a
// failure to read is left in d.Err().
func decodePoints(d *statecodec.Reader, packedPoints bool, bad func(string, ...any)) ([]Sample, map[int64]struct{}) {
	count := d.Uvarint()
	// Every point after the first takes at least one byte, two before
	// version 6.
	minPointLen := 2
	if packedPoints {
		minPointLen = 1
	}
	if d.OK() && count > uint64(d.Len()/minPointLen+1) {
		d.Fail("%d points cannot fit in %d bytes", count, d.Len())
	}
	if !d.OK() || count == 0 {
		_ = d.Uvarint() // the gap count
		return nil, nil
	}
	// Appended as they decode: the count, which the data may lie about,
	// drives no allocation.
	var points []Sample
	first := Sample{Offset: d.Varint()}
	firstAt := d.Varint()
	at, ok := mulExact(firstAt, timeUnit)
	first.At = at
	switch {
	case !ok:
		bad("point 0 overflows")
	case first.Offset < 0:
		bad("negative offset %d", first.Offset)
	}
	points = append(points, first)
	prev := first
	packed := startCursor(first)
	for p := uint64(1); p < count && d.OK(); p++ {
		if packedPoints && p == count-1 {
			packed = startCursor(Sample{}) // the newest is told whole
		}
		var offsetDelta, atDelta uint64
		switch head := d.Uvarint(); {
		case !packedPoints:
			offsetDelta, atDelta = head, d.Uvarint()
		case head&1 == 1:
			atDelta = unzigzag(head>>1) + packed.predicted()
		default:
			offsetDelta, atDelta = head>>1, unzigzag(d.Uvarint())+packed.predicted()
		}
		// The deltas the next point's time is told against are these as
		// read, whatever they say: the table packs them the same way.
		packed.advance(Sample{}, atDelta)
		atNanos, atOK := mulExact(int64(atDelta), timeUnit)
		offset, offsetOK := addExact(prev.Offset, int64(offsetDelta))
		at, sumOK := addExact(prev.At, atNanos)
		switch {
		case offsetDelta > math.MaxInt64 || atDelta > math.MaxInt64 || !atOK || !offsetOK || !sumOK:
			bad("point %d overflows", p)
		case atDelta == 0:
			bad("points are not increasing")
		}
		prev = Sample{Offset: offset, At: at}
		points = append(points, prev)
	}
	gapCount := d.Uvarint()
	if d.OK() && gapCount > count {
		d.Fail("%d gap ends among %d points", gapCount, count)
	}
	var gaps map[int64]struct{}
	index := uint64(0)
	for g := uint64(0); g < gapCount && d.OK(); g++ {
		delta := d.Uvarint()
		index += delta
		if (g > 0 && delta == 0) || index >= count || delta >= count {
			bad("invalid gap end")
			continue
		}
		if gaps == nil {
			gaps = map[int64]struct{}{}
		}
		gaps[points[index].At] = struct{}{}
	}
	return points, gaps
}

// decodePointsV3 reads the points of a table of versions 1 to 3, in
// nanoseconds with a gap flag each, and rounds their times up to timeUnit;
// two that round to the same time become the later.
func decodePointsV3(d *statecodec.Reader, bad func(string, ...any)) ([]Sample, map[int64]struct{}) {
	count := d.Uvarint()
	if d.OK() && count > uint64(d.Len()/3+1) {
		d.Fail("%d points cannot fit in %d bytes", count, d.Len())
	}
	if !d.OK() {
		return nil, nil
	}
	var (
		points []Sample
		gaps   map[int64]struct{}
		prev   Sample
	)
	for p := uint64(0); p < count && d.OK(); p++ {
		offsetDelta, atDelta := d.Varint(), d.Varint()
		gapEnd := d.Uvarint()
		offset, offsetOK := addExact(prev.Offset, offsetDelta)
		at, atOK := addExact(prev.At, atDelta)
		cur := Sample{Offset: offset, At: at}
		switch {
		case !offsetOK || !atOK:
			bad("point %d overflows", p)
		case offset < 0:
			bad("negative offset %d", offset)
		case p > 0 && (offsetDelta < 0 || atDelta <= 0):
			bad("points are not increasing")
		case gapEnd > 1:
			bad("invalid gap flag")
		}
		prev = cur
		cur.At = quantize(cur.At)
		if n := len(points); n > 0 && points[n-1].At == cur.At {
			points = points[:n-1]
		}
		points = append(points, cur)
		if gapEnd == 1 {
			if gaps == nil {
				gaps = map[int64]struct{}{}
			}
			gaps[cur.At] = struct{}{}
		}
	}
	return points, gaps
}

// mulExact multiplies, reporting false when the product overflows int64.
func mulExact(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	p := a * b
	return p, p/b == a && !(a == -1 && b == math.MinInt64)
}
