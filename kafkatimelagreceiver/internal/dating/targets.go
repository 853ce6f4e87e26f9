package dating

import (
	"slices"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/clocks"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// IndexTarget is a record to date from the time index: its offset, the
// time (unix milliseconds) its table expects it stamped at, and the
// precision its timestamp is searched to: a millisecond, Kafka's
// resolution, so that the time found is the record's own timestamp as a
// read would find it (what a user checks it against), wherever the rounds
// reach it. The plan makes it from the tables, and the search's target of
// it (newTarget) at once, in its partition's search.
type IndexTarget struct {
	Offset, GuessMillis, PrecisionMillis int64
	// RecordsPerMilli is the partition's rate where its table holds the
	// record, or at its table's start for a record older than the table;
	// 0 when unknown.
	RecordsPerMilli float64
	// StepMillis is how far past the guess the search looks first when
	// the guess misses on one side: a bracket's width over firstStepShare,
	// or a second for a record older than the table.
	StepMillis int64
	// ExactOnly: the topic compacts, so the committed offset may hold no
	// record; only the index's point at the offset itself dates it, and a
	// read finds the next record otherwise.
	ExactOnly bool
}

// firstStepShare: a search whose guess inside the table misses on one side
// looks first this share of the record's bracket past it.
const firstStepShare = 16

// indexTargets splits the records OutOfTable listed into the records to
// date from the time index (searches: a partition's search each, its
// targets in one stretch of a single slice), with the records on either
// side of a sample it lists near them while the partition's clock is not
// pinned (their points pin it, as reads of them do), and those only a
// record read answers (markerChecks): the index holds transaction markers
// and records of aborted transactions like data, and does not say which a
// record is (lag.MarkerCheck); nor which producer stamped a record, where
// reads measured producers' clocks apart (recordcache.Facts.ClocksApart);
// nor whose stamps a producer's clock shows where the index's own does not
// (recordcache.Cache.ReadDates). Those are also searched in the index until
// a read answers them, so that a read left out by its budget still leaves a
// date; a record the index dated before is not searched again. It runs
// under the tables' lock (tables is a View), in the plan.
//
// still names the partitions of markerChecks whose end offset stood still
// for lag.IdleBeforeMarkerCheck and that are checked for markers alone:
// each is read once, and its answer kept until it is written again (the
// record cache keeps the records read while a group sits on them), so their
// reads end; the others' (tables too young to tell) are left to the byte
// budget.
func indexTargets(idx *lag.Tabled, at int64, tables lag.Tables, records *recordcache.Cache, wanted []kafka.PartitionOffsets) (searches []partitionSearch, markerChecks []kafka.PartitionOffsets, still map[kafka.TopicPartition]bool) {
	n := 0
	for _, w := range wanted {
		n += len(w.Offsets) + len(w.Near)
	}
	// At most one target a record: grown once, not by copies of
	// hundreds of thousands.
	targets := make([]target, 0, n)
	searches = make([]partitionSearch, 0, len(wanted))
	for _, w := range wanted {
		first := len(targets)
		p, rank, ok := idx.Partition(w.TopicPartition)
		if !ok {
			continue
		}
		table := idx.Table(rank)
		idle := tables.Idle(table, p.End, lag.IdleBeforeMarkerCheck)
		young := tables.Young(table, lag.IdleBeforeMarkerCheck)
		facts := records.Facts(w.TopicPartition)
		check := kafka.PartitionOffsets{TopicPartition: w.TopicPartition}
		var startRate float64
		startRateKnown := false
		near := w.Near
		if facts.IndexClockPinned {
			near = nil
		}
		for i, c := range append(slices.Clip(w.Offsets), near...) {
			b, inTable := tables.Bracket(table, c, timetable.Sample{Offset: p.End, At: at})
			rec, read := records.Known(w.TopicPartition, c)
			if i < len(w.Offsets) && (facts.ClocksApart || lag.MarkerCheck(facts.MarkersPossible, idle, young, b) || read && records.ReadDates(w.TopicPartition, rec, at)) {
				check.Offsets = append(check.Offsets, c)
			}
			if read && (clocks.FromIndex(rec) || i >= len(w.Offsets)) {
				continue
			}
			rate := recordsPerMilli(b)
			if !inTable {
				if !startRateKnown {
					// The rate at the table's start is the same for every
					// record older than the table.
					first, _ := tables.Bracket(table, b.Hi.Offset, timetable.Sample{Offset: p.End, At: at})
					startRate, startRateKnown = recordsPerMilli(first), true
				}
				rate = startRate
			}
			if it, ok := indexTarget(b, inTable, c, rate); ok {
				it.ExactOnly = facts.Compacted && i < len(w.Offsets)
				targets = append(targets, newTarget(it))
			}
		}
		if len(targets) > first {
			searches = append(searches, partitionSearch{tp: w.TopicPartition, scrapeMillis: at / int64(time.Millisecond),
				targets: targets[first:len(targets):len(targets)]})
		}
		if len(check.Offsets) > 0 {
			markerChecks = append(markerChecks, check)
			if idle && facts.MarkersPossible && !facts.ClocksApart {
				if still == nil {
					still = map[kafka.TopicPartition]bool{}
				}
				still[w.TopicPartition] = true
			}
		}
	}
	return searches, markerChecks, still
}

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
func indexTarget(b timetable.Bracket, inTable bool, c int64, rate float64) (IndexTarget, bool) {
	ms := int64(time.Millisecond)
	var guess int64
	step := int64(time.Second)
	switch {
	case inTable:
		guess = lag.ExpectedAppend(b.Lo, b.Hi, c)
		step = (b.Hi.At - b.Lo.At) / firstStepShare
	case c < b.Hi.Offset:
		guess = b.Hi.At
		if rate > 0 {
			guess -= int64(min(float64(b.Hi.Offset-c)/rate, float64(b.Hi.At/ms))) * ms
		}
	default:
		return IndexTarget{}, false
	}
	return IndexTarget{Offset: c, GuessMillis: guess / ms, PrecisionMillis: 1, RecordsPerMilli: rate,
		StepMillis: max(step/ms, 1)}, true
}
