package lag

import (
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// TimeIndexClock is the producer a partition's records dated from its
// brokers' time index are taken to be written by: the index does not say
// which producer wrote a record, so every point it answers measures one
// clock of the partition (producer IDs are 0 or more; -1 is none). Where
// the partition's writers' clocks differ (several producers, transaction
// markers stamped by the coordinator), their points disagree by that much,
// and the clock's spread dates a record at the middle of what the spread
// and its bracket allow (clockMove.date).
const TimeIndexClock int64 = -2

// fromIndex tells whether rec was dated from the time index rather than
// read.
func fromIndex(rec kafka.RecordTimestamp) bool {
	return rec.ByProducer && rec.Producer == TimeIndexClock
}

// IndexTarget is a record to date from the time index: its offset, the
// time (unix milliseconds) its table expects it stamped at, and the
// precision its timestamp is searched to.
type IndexTarget struct {
	kafka.TopicPartition
	Offset, GuessMillis, PrecisionMillis int64
}

// indexPrecision is the fraction of a record's age its timestamp is
// searched to (0.5 %: the accuracy target's bound is 1 % of the time lag),
// indexBracketPrecision the fraction of its bracket's width (5 %: the
// bound's other term is a tenth of the sampling interval), and never finer
// than a millisecond, Kafka's resolution.
const (
	indexPrecision        = 200
	indexBracketPrecision = 20
)

// IndexTargets splits the records OutOfTable listed into the records to
// date from the time index and those only a record read answers: on a
// partition whose end offset has stood still for IdleBeforeRecordRead, the
// records inside its table are read to tell data from a transaction
// marker (the index holds both, and does not say which a record is). Those
// are also searched in the index until a read answers them, so that a
// read left out by its budget still leaves a date; a record the index
// dated before is not searched again.
func IndexTargets(idx *Index, at int64, tables Tables, records *RecordTimes, wanted []kafka.PartitionOffsets) (targets []IndexTarget, markerChecks []kafka.PartitionOffsets) {
	for _, w := range wanted {
		p, ok := idx.partition(w.TopicPartition)
		if !ok {
			continue
		}
		known := records.known[w.TopicPartition]
		idle := tables.Idle(p.Table, p.End, IdleBeforeRecordRead)
		check := kafka.PartitionOffsets{TopicPartition: w.TopicPartition}
		for _, c := range w.Offsets {
			b, inTable := tables.Bracket(p.Table, c, timetable.Sample{Offset: p.End, At: at})
			if idle && inTable && !b.Gap {
				check.Offsets = append(check.Offsets, c)
			}
			if rec, ok := known.get(c); ok && fromIndex(rec) {
				continue
			}
			if t, ok := indexTarget(w.TopicPartition, b, inTable, c, at); ok {
				targets = append(targets, t)
			}
		}
		if len(check.Offsets) > 0 {
			markerChecks = append(markerChecks, check)
		}
	}
	return targets, markerChecks
}

// indexTarget is the search for the record at c of its bracket b: its
// guess is where the table expects it, or the table's first point for a
// record older than the table.
func indexTarget(tp kafka.TopicPartition, b timetable.Bracket, inTable bool, c, at int64) (IndexTarget, bool) {
	ms := int64(time.Millisecond)
	var guess int64
	switch {
	case inTable:
		guess = ExpectedAppend(b.Lo, b.Hi, c)
	case c < b.Hi.Offset:
		guess = b.Hi.At
	default:
		return IndexTarget{}, false
	}
	age := max(at-guess, 0)
	precision := age / indexPrecision
	if inTable {
		precision = min(precision, (b.Hi.At-b.Lo.At)/indexBracketPrecision)
	}
	precision = max(precision/ms, 1)
	return IndexTarget{TopicPartition: tp, Offset: c, GuessMillis: guess / ms, PrecisionMillis: precision}, true
}
