package lag

import (
	"slices"
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
// precision its timestamp is searched to: a millisecond, Kafka's
// resolution, so that the time found is the record's own timestamp as a
// read would find it (what a user checks it against), wherever the rounds
// reach it.
type IndexTarget struct {
	kafka.TopicPartition
	Offset, GuessMillis, PrecisionMillis int64
	// RecordsPerMilli is the partition's rate where its table holds the
	// record, or at its table's start for a record older than the table;
	// 0 when unknown.
	RecordsPerMilli float64
	// StepMillis is how far past the guess the search looks first when
	// the guess misses on one side: a sixteenth of the record's bracket,
	// or a second for a record older than the table.
	StepMillis int64
	// End is the partition's end offset at the scrape: every record below
	// it was stamped by then, as far as the clocks are right.
	End int64
	// ExactOnly: the topic compacts, so the committed offset may hold no
	// record; only the index's point at the offset itself dates it, and a
	// read finds the next record otherwise.
	ExactOnly bool
	// ScrapeMillis is when the scrape read the end offsets: a search cut
	// off by its round cap still dates the record by the middle of its
	// interval when that is narrower than a hundredth of the record's age
	// then (the accuracy target's bound).
	ScrapeMillis int64
}

// IndexTargets splits the records OutOfTable listed into the records to
// date from the time index, with the records on either side of a sample it
// lists near them while the partition's clock is not pinned (their points
// pin it, as reads of them do), and those only a record read answers: the
// index holds transaction markers and records of aborted transactions like
// data, and does not say which a record is (markerCheck); nor which
// producer stamped a record, where reads measured producers' clocks apart
// (RecordTimes.ClocksApart). Those
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
		idle := tables.Idle(p.Table, p.End, IdleBeforeMarkerCheck)
		young := tables.Young(p.Table, IdleBeforeMarkerCheck)
		markers := records.MarkersPossible(w.TopicPartition)
		apart := records.ClocksApart(w.TopicPartition)
		compact := records.compacted(w.TopicPartition)
		check := kafka.PartitionOffsets{TopicPartition: w.TopicPartition}
		var startRate float64
		startRateKnown := false
		near := w.Near
		if records.indexClockPinned(w.TopicPartition) {
			near = nil
		}
		for i, c := range append(slices.Clip(w.Offsets), near...) {
			b, inTable := tables.Bracket(p.Table, c, timetable.Sample{Offset: p.End, At: at})
			if i < len(w.Offsets) && (apart || markerCheck(markers, idle, young, b)) {
				check.Offsets = append(check.Offsets, c)
			}
			if rec, ok := known.get(c); ok && (fromIndex(rec) || i >= len(w.Offsets)) {
				continue
			}
			rate := recordsPerMilli(b)
			if !inTable {
				if !startRateKnown {
					// The rate at the table's start is the same for every
					// record older than the table.
					first, _ := tables.Bracket(p.Table, b.Hi.Offset, timetable.Sample{Offset: p.End, At: at})
					startRate, startRateKnown = recordsPerMilli(first), true
				}
				rate = startRate
			}
			if t, ok := indexTarget(w.TopicPartition, b, inTable, c, at, rate); ok {
				t.End, t.ExactOnly = p.End, compact && i < len(w.Offsets)
				targets = append(targets, t)
			}
		}
		if len(check.Offsets) > 0 {
			markerChecks = append(markerChecks, check)
		}
	}
	return targets, markerChecks
}

// markerCheck tells whether the record at a lagging group's offset, of
// bracket b, is to be read to tell data from a transaction marker or an
// aborted record, on a partition whose reads showed transactions or that
// none was read of yet (markers): where the partition's end offset stood
// still for IdleBeforeMarkerCheck (idle), or its table is too young to
// tell (young). A group sitting on a marker there is caught up, and the
// index would date the marker and age it with the clock. A partition whose
// records read were written outside transactions holds none: its records
// are the index's.
func markerCheck(markers, idle, young bool, b timetable.Bracket) bool {
	return markers && (idle || young) && !b.Gap
}

// IdleBeforeMarkerCheck is how long a partition's end offset must have
// stood still before the records at its lagging groups' offsets are read
// to tell data from a transaction marker, when dating from the time index.
// A partition written every few seconds stands still between writes, and
// the next write makes its lag real data: reading for it every scrape
// would cost a Fetch of a batch for nothing. A group sitting on a marker
// is found caught up once the partition has been still this long, its time
// lag ageing until then.
const IdleBeforeMarkerCheck = time.Minute

// recordsPerMilli is the rate of a bracket's records; 0 for none.
func recordsPerMilli(b timetable.Bracket) float64 {
	ms := (b.Hi.At - b.Lo.At) / int64(time.Millisecond)
	if ms <= 0 || b.Lo.At == 0 || b.Hi.Offset <= b.Lo.Offset {
		return 0
	}
	return float64(b.Hi.Offset-b.Lo.Offset) / float64(ms)
}

// indexTarget is the search for the record at c of its bracket b: its
// guess is where the table expects it, or, for a record older than the
// table, where the rate at the table's start (rate) puts it before the
// table's first point.
func indexTarget(tp kafka.TopicPartition, b timetable.Bracket, inTable bool, c, at int64, rate float64) (IndexTarget, bool) {
	ms := int64(time.Millisecond)
	var guess int64
	step := int64(time.Second)
	switch {
	case inTable:
		guess = ExpectedAppend(b.Lo, b.Hi, c)
		step = (b.Hi.At - b.Lo.At) / 16
	case c < b.Hi.Offset:
		guess = b.Hi.At
		if rate > 0 {
			guess -= int64(min(float64(b.Hi.Offset-c)/rate, float64(b.Hi.At/ms))) * ms
		}
	default:
		return IndexTarget{}, false
	}
	return IndexTarget{TopicPartition: tp, Offset: c, GuessMillis: guess / ms, PrecisionMillis: 1, RecordsPerMilli: rate,
		StepMillis: max(step/ms, 1), ScrapeMillis: at / ms}, true
}
