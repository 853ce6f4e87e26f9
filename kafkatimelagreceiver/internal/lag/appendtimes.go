package lag

import (
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/clocks"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// AppendTimes estimates append times the way a scrape does. A record read
// (recordcache.Cache) says where the first data record at or after c is: when
// none is before the end, the group is caught up (only transaction markers
// and aborted records are left); when it is further on, that record is the
// one to date. Then: the partition's table where it brackets the offset in
// a watched stretch (ExpectedAppend), unless the bracket is coarse against
// the time lag and the record's timestamp was read, which then dates it
// inside the bracket; else the record's own timestamp, when it was read,
// moved by its producer's clock offset as reads measured it (package clocks)
// and clamped to what the table proves (trusting a producer's clock no
// further than that); else the table's straight line across an unwatched
// stretch. A timestamp dates nothing where the partition's stamps are not
// shown to be append times (package clocks): a record no table dates is then
// MethodUnproven, as is one of a compacted topic that no read found.
//
// Every date is checked last against what the tables and the scrape prove
// (proven): one outside it is MethodWithheld, never a time lag.
//
// This is where record timestamps are bounded by what is known; the Kafka
// layer has already turned the ones no clock could have written into
// kafka.RecordUntimed, which dates nothing.
func AppendTimes(t *Tabled, tables Tables, records *recordcache.Cache, at int64) AppendTimeFunc {
	return func(rank int32, c int64) (int64, Method, bool) {
		p := &t.Parts[rank]
		// The scrape's own end-offset read is the newest point there is.
		upper := timetable.Sample{Offset: p.End, At: at}
		resolved := &t.records[rank]
		records.Resolve(p.TopicPartition, resolved)
		rec, read := resolved.Get(c)
		var move clocks.Shift
		if read && rec.Found == kafka.RecordTimed {
			move = resolved.Clocks().Shift(rec)
		}
		from := c
		if read {
			if rec.Found == kafka.RecordNone && rec.Offset >= p.End {
				return at, MethodCaughtUp, true
			}
			from = max(c, rec.Offset)
		} else if resolved.Compacted() {
			// The committed offset may hold no record: only a read (or the
			// time index's exact point at it) tells which is next.
			return 0, MethodUnproven, false
		}
		stamped := read && rec.Found == kafka.RecordTimed
		timed := stamped && resolved.StampsShown(rec, at)
		unproven := stamped && !timed
		b, inTable := tables.Bracket(t.table(rank), from, upper)
		lo, hi, gap := b.Lo, b.Hi, b.Gap
		date, method := int64(0), MethodNone
		switch {
		case inTable && !gap:
			date, method = ExpectedAppend(lo, hi, from), MethodTable
			switch {
			case !Coarse(b, from, date, at):
			case timed:
				if placed, ok := move.Place(date, rec.Timestamp, lo.At, hi.At); ok {
					date, method = placed, MethodRecord
				} else {
					date, method = recordDate(b, inTable, from, rec.Timestamp, move, at), MethodRecord
				}
			case unproven && rec.Timestamp >= lo.At && rec.Timestamp <= hi.At:
				// Stamps not shown yet, but this one agrees with the
				// bracket the table proves of its record: it places the
				// record inside it, where the table alone cannot.
				date, method = rec.Timestamp, MethodRecord
			}
		case timed:
			date, method = recordDate(b, inTable, from, rec.Timestamp, move, at), MethodRecord
		case inTable:
			// An unwatched stretch, and no record read this time (capped),
			// or one that gave no time: the expected place in the bracket
			// is still the best guess there is.
			date, method = ExpectedAppend(lo, hi, from), MethodTable
		case unproven:
			return 0, MethodUnproven, false
		default:
			return 0, MethodNone, false
		}
		if !proven(b, inTable, from, date, at) || method == MethodRecord && !movedWithin(b, inTable, from, date, rec.Timestamp, move, at) {
			return 0, MethodWithheld, false
		}
		return date, method, true
	}
}

// recordDate dates the record at offset by its timestamp ts, moved by its
// producer's clock (move) within what its bracket b proves of when it was
// appended, and never after the scrape (at).
func recordDate(b timetable.Bracket, inTable bool, offset, ts int64, move clocks.Shift, at int64) int64 {
	lo, hi := provenRange(b, inTable, offset, at)
	return move.Date(ts, lo, hi)
}

// provenRange is when the record at offset was appended, as far as its
// bracket b and the scrape at at prove: after lo (unbounded for an offset
// older than the table) and by hi.
func provenRange(b timetable.Bracket, inTable bool, offset, at int64) (lo, hi int64) {
	lo, hi = clocks.Unbounded, at
	if l, h, ok := appendedWithin(b, inTable, offset); ok {
		lo, hi = l, min(h, at)
	}
	return lo, hi
}

// proven tells whether date, the append time estimated for the record at
// offset from its bracket b (inTable as Tables.Bracket returned it), lies
// where the tables and the scrape prove the record was appended: by the
// scrape (at) and by the bracket's end; after the bracket's start when the
// table holds one; never before Kafka could have appended anything
// (kafka.MinRecordTime). Whatever breaks one of these is a fault of the
// estimate, and a time lag from it would be wrong, not late.
func proven(b timetable.Bracket, inTable bool, offset, date, at int64) bool {
	lo, hi := provenRange(b, inTable, offset, at)
	return date >= max(lo, minRecordTime) && date <= hi
}

// movedWithin tells whether a record's date is no earlier than its
// timestamp ts moved by the earliest clock offset its producer's reads
// allow, or than the bracket's end where that is earlier: a clock is never
// taken further off than some read proved it.
func movedWithin(b timetable.Bracket, inTable bool, offset, date, ts int64, move clocks.Shift, at int64) bool {
	_, hi := provenRange(b, inTable, offset, at)
	return date >= min(ts+move.Lowest(), hi)
}

// minRecordTime is kafka.MinRecordTime in unix nanoseconds.
var minRecordTime = kafka.MinRecordTime.UnixNano()
