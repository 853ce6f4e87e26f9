package timetable

import "sort"

// A seek is where a search of a table's packed points (find) stopped: at
// the point it found above, with the cursor after the one below it. A
// scrape brackets a partition's lagging records one after the other,
// oldest first, and each search goes on from where the one before stopped:
// a busy partition's groups sit on its newest records, so that each search
// from the table's start (or mark) would decode nearly every point again.
type seek struct {
	table  *Table
	cursor packCursor
	pos    int
}

// find returns the newest point for which above is false and the one after
// it, the first for which it is true: above must be false for the oldest
// point and monotonic in offset or time. found is false when no point is
// above; lo is then the newest. It goes on from where from stopped when
// that was on t at a point above is false for, and leaves in from where
// it stopped.
func (t *Table) find(above func(Sample) bool, from *seek) (lo, hi Sample, found bool) {
	if !above(t.last) {
		return t.last, Sample{}, false
	}
	if t.n >= 2 && !above(t.tail) {
		return t.tail, t.last, true
	}
	// The answer is among the packed points, and the tail is above.
	j := sort.Search(len(t.marks), func(i int) bool { return above(t.marks[i].sample()) })
	cur, pos := startCursor(t.first), 0
	if j > 0 {
		cur, pos = startCursor(t.marks[j-1].sample()), t.markEnd(j-1)
	}
	if from.table == t && from.pos >= pos && !above(from.cursor.prev) {
		cur, pos = from.cursor, from.pos
	}
	for pos < len(t.packed) {
		below := cur
		p, next := cur.readPacked(t.packed, pos)
		if above(p) {
			*from = seek{table: t, cursor: below, pos: pos}
			return below.prev, p, true
		}
		pos = next
	}
	return cur.prev, t.last, true
}
