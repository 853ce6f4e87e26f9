package lag

import (
	"slices"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// boundariesRead is how many of a partition's samples past its first record
// read a read also answers the records on either side of (Near): the last
// record appended before the sample and the first after it. Those two bound
// their producers' clocks the most tightly, within the time between two
// appends, where a committed offset's record lies anywhere in its bracket,
// and groups commit at the same moments between samples scrape after
// scrape.
const boundariesRead = 2

// clockBoundaries are the offsets on either side of p's first
// boundariesRead samples past offsets[0] (the scrape's own end-offset read
// counts), those not in offsets. Where offsets[0] is older than the table
// and the partition's stamps are not measured yet (measured), the samples
// are those past the table's first: a record older than the table is
// bounded from above only, and shows nothing of whether the partition's
// stamps are append times (stamps.go).
func clockBoundaries(p *Partition, offsets []int64, at int64, tables Tables, measured bool) []int64 {
	var near []int64
	from := offsets[0]
	upper := timetable.Sample{Offset: p.End, At: at}
	if b, inTable := tables.Bracket(p.Table, from, upper); !inTable && !measured && from < b.Hi.Offset && b.Hi.Offset < p.End {
		from = b.Hi.Offset
	}
	for range boundariesRead {
		b, inTable := tables.Bracket(p.Table, from, upper)
		if !inTable || b.Hi.Offset <= from {
			break
		}
		for _, o := range []int64{b.Hi.Offset - 1, b.Hi.Offset} {
			if _, wanted := slices.BinarySearch(offsets, o); !wanted && o < p.End && o > from {
				near = append(near, o)
			}
		}
		from = b.Hi.Offset
	}
	return near
}

// Proof is what the tables prove of when the records a read found were
// appended: the scrape's index (its partitions' tables and end offsets),
// the tables, and when the scrape read its end offsets (Snapshot.At). Its
// zero value proves nothing, and no clock is measured.
type Proof struct {
	Index  *Index
	Tables Tables
	At     int64
}

// appendedWithin is what bracket b (inTable as Tables.Bracket returned it)
// proves of when the record at offset was appended: after lo (unbounded for
// an offset older than the table) and by hi; ok is false when it proves
// nothing.
func appendedWithin(b timetable.Bracket, inTable bool, offset int64) (lo, hi int64, ok bool) {
	switch {
	case inTable:
		return b.Lo.At, b.Hi.At, true
	case offset < b.Hi.Offset:
		return unbounded, b.Hi.At, true
	}
	return 0, 0, false
}

// proven is when the record at offset of p was appended, as far
// as the tables prove it (appendedWithin of its bracket).
func (pr Proof) proven(p *Partition, offset int64) (lo, hi int64, ok bool) {
	b, inTable := pr.Tables.Bracket(p.Table, offset, timetable.Sample{Offset: p.End, At: pr.At})
	return appendedWithin(b, inTable, offset)
}
