package lag

import (
	"slices"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/clocks"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
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
// counts), those not in offsets. Where the partition's stamps are not
// measured yet (measured), both those of its first samples past its
// table's start (a record older than the table is bounded from above only
// and shows nothing of whether the partition's stamps are append times,
// package clocks) and those of its newest samples: the newest records are new
// at each scrape, where the first samples' are the same ones again, and
// the first ones are read beside them so that a clock that changed in
// between (a restarted producer keeping its ID) disagrees, rather than the
// newest clock dating the older records.
func clockBoundaries(t *Tabled, rank int32, offsets []int64, at int64, tables Tables, measured bool) []int64 {
	p, table := &t.Parts[rank], t.table(rank)
	upper := timetable.Sample{Offset: p.End, At: at}
	var near []int64
	add := func(b timetable.Bracket, after int64) {
		for _, o := range []int64{b.Hi.Offset - 1, b.Hi.Offset} {
			if _, wanted := slices.BinarySearch(offsets, o); !wanted && o < p.End && o > after {
				near = append(near, o)
			}
		}
	}
	from := offsets[0]
	if b, inTable := tables.Bracket(table, from, upper); !inTable && !measured && from < b.Hi.Offset && b.Hi.Offset < p.End {
		from = b.Hi.Offset
	}
	for range boundariesRead {
		b, inTable := tables.Bracket(table, from, upper)
		if !inTable || b.Hi.Offset <= from {
			break
		}
		add(b, from)
		from = b.Hi.Offset
	}
	if !measured {
		newest := len(near) + 2*boundariesRead
		for o := p.End - 1; len(near) < newest && o > from; {
			b, inTable := tables.Bracket(table, o, upper)
			if !inTable || b.Lo.Offset < from {
				break
			}
			add(b, from)
			o = b.Lo.Offset - 1
		}
		slices.Sort(near)
		near = slices.Compact(near)
	}
	return near
}

// Proof is what the tables prove of when the records a read found were
// appended: the scrape's index (its partitions' tables and end offsets),
// the tables, and when the scrape read its end offsets (Snapshot.At), for
// the record cache to measure their producers' clocks by
// (recordcache.Proof). tables is the View of the caller's lock, which
// the cache's PutAll must run under.
func Proof(idx *Tabled, tables Tables, at int64) recordcache.Proof {
	return recordcache.Proof{At: at, Appended: func(tp kafka.TopicPartition, offset int64) (lo, hi int64, ok bool) {
		p, rank, found := idx.Partition(tp)
		if !found {
			return 0, 0, false
		}
		b, inTable := tables.Bracket(idx.table(rank), offset, timetable.Sample{Offset: p.End, At: at})
		return appendedWithin(b, inTable, offset)
	}}
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
		return clocks.Unbounded, b.Hi.At, true
	}
	return 0, 0, false
}
