package dating

import (
	"slices"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
)

// The time index answers, for a time T, the first record from the log
// start whose timestamp is at or after T, f(T), with that record's own
// timestamp. f is non-decreasing in T, and an answer proves that the
// records below f(T) carry timestamps before T, whatever their order. So
// once f(L) <= c < f(U), the largest timestamp of the records up to c
// lies in [L, U): where timestamps never go back, that is c's own. Where
// they do (CreateTime from producers whose clocks differ, or set by the
// application), the answers cannot show it, since f and its points only
// ever grow: the search then dates c by the latest timestamp up to it,
// which is no earlier than c's own and, clocks being right, no later than
// c's append, and the date is clamped to c's bracket like any other. A search
// narrows [L, U) round by round, each round one request per leader asking
// one time per partition still searching (the request carries one time per
// partition), the time most useful to the partition's widest target.

// MaxIndexRounds caps a scrape's rounds of time-index requests: a search
// halves its interval each round once both ends are known, and its first
// rounds find the ends from the table's guess, so that ten rounds date a
// record to a millisecond from a bracket of minutes. A target left wider
// at the cap is dated within what its rounds proved.
const MaxIndexRounds = 10

const (
	noLower = -(int64(1) << 60)
	noUpper = int64(1) << 60
)

// target is a record the search dates: [lo, hi) holds its timestamp, in
// unix milliseconds, as far as the answers prove it.
type target struct {
	lag.IndexTarget
	lo, hi int64
	// step is how far past the known end of a one-sided interval the next
	// time is asked: first the precision (records appended together
	// mostly share a millisecond, so the first step often closes the
	// interval), then fourfold each time the other end stays unknown.
	step int64
}

func (t *target) converged() bool { return t.hi-t.lo <= t.PrecisionMillis }

// width orders the targets of a partition: the one furthest from its
// precision is asked first.
func (t *target) width() int64 {
	if t.lo == noLower || t.hi == noUpper {
		return noUpper
	}
	return (t.hi - t.lo) / max(1, t.PrecisionMillis)
}

// nextTime is the time to ask to narrow t.
func (t *target) nextTime() int64 {
	var at int64
	switch {
	case t.lo == noLower && t.hi == noUpper:
		at = t.GuessMillis
	case t.hi == noUpper:
		at = t.lo + t.step
		t.step *= 4
	case t.lo == noLower:
		at = t.hi - t.step
		t.step *= 4
	default:
		at = t.lo + (t.hi-t.lo)/2
	}
	return max(at, 0)
}

// answer is one time asked and what the index answered.
type answer struct {
	at int64
	kafka.TimePoint
}

// partitionSearch is one partition's search.
type partitionSearch struct {
	tp      kafka.TopicPartition
	targets []target // ascending by offset
	answers []answer
	// failed: the index could not be searched (an error named the
	// partition); belowStart: a target lies below the log start (the
	// first record, f(0), is past it): retention deleted it.
	failed, belowStart bool
}

// searching tells whether the partition is still searched.
func (ps *partitionSearch) searching() bool { return !ps.failed && !ps.belowStart }

// indexSearch is a scrape's search of the time index.
type indexSearch struct {
	parts []*partitionSearch
	byTP  map[kafka.TopicPartition]*partitionSearch
}

func newIndexSearch(targets []lag.IndexTarget) *indexSearch {
	s := &indexSearch{byTP: map[kafka.TopicPartition]*partitionSearch{}}
	for _, it := range targets {
		ps := s.byTP[it.TopicPartition]
		if ps == nil {
			ps = &partitionSearch{tp: it.TopicPartition}
			s.byTP[it.TopicPartition] = ps
			s.parts = append(s.parts, ps)
		}
		ps.targets = append(ps.targets, target{IndexTarget: it, lo: noLower, hi: noUpper, step: it.PrecisionMillis})
	}
	for _, ps := range s.parts {
		slices.SortFunc(ps.targets, func(a, b target) int { return int(min(max(a.Offset-b.Offset, -1), 1)) })
	}
	return s
}

// asks are the times of the next round: one per partition still
// searching, for its widest target not yet within its precision.
func (s *indexSearch) asks() []kafka.PartitionTimes {
	var asks []kafka.PartitionTimes
	for _, ps := range s.parts {
		if !ps.searching() {
			continue
		}
		var widest *target
		for i := range ps.targets {
			t := &ps.targets[i]
			if !t.converged() && (widest == nil || t.width() > widest.width()) {
				widest = t
			}
		}
		if widest == nil {
			continue
		}
		at := widest.nextTime()
		if slices.ContainsFunc(ps.answers, func(a answer) bool { return a.at == at }) {
			// Asked already: the interval cannot narrow further from here.
			widest.PrecisionMillis = max(widest.PrecisionMillis, widest.hi-widest.lo)
			continue
		}
		asks = append(asks, kafka.PartitionTimes{TopicPartition: ps.tp, Millis: []int64{at}})
	}
	return asks
}

// take applies a round's answers. Partitions asked but not answered
// failed.
func (s *indexSearch) take(asks []kafka.PartitionTimes, points kafka.TimePoints) {
	for _, ask := range asks {
		ps := s.byTP[ask.TopicPartition]
		got := points[ask.TopicPartition]
		if len(got) == 0 {
			ps.failed = true
			continue
		}
		for _, p := range got {
			ps.apply(answer{at: p.AtMillis, TimePoint: p})
		}
	}
}

func (ps *partitionSearch) apply(a answer) {
	ps.answers = append(ps.answers, a)
	for i := range ps.targets {
		t := &ps.targets[i]
		switch {
		case a.Found && a.at == 0 && a.Offset > t.Offset:
			ps.belowStart = true
		case !a.Found || a.Offset > t.Offset:
			// Every record up to c carries a timestamp before a.at.
			t.hi = min(t.hi, a.at)
		case a.Offset == t.Offset:
			t.lo, t.hi = a.TimestampMillis, a.TimestampMillis+1
		default:
			// The latest timestamp up to c is no earlier than f's.
			t.lo = max(t.lo, a.TimestampMillis)
		}
	}
}

// results are what the search found: the exact points the index answered
// (each a record's offset and its own timestamp, which measure the
// partition's clock against its table like records read), and the targets
// dated: bounded on both sides, by the middle of their interval. Both carry
// the partition's clock (lag.TimeIndexClock). Partitions whose index could
// not be searched, or with a target below the log start, are in fallback, with the offsets of their targets: a record read
// answers those, and finds the log start.
func (s *indexSearch) results() (points, dated kafka.RecordReads, fallback []kafka.PartitionOffsets) {
	points, dated = kafka.RecordReads{}, kafka.RecordReads{}
	for _, ps := range s.parts {
		if !ps.searching() {
			w := kafka.PartitionOffsets{TopicPartition: ps.tp}
			for _, t := range ps.targets {
				w.Offsets = append(w.Offsets, t.Offset)
			}
			fallback = append(fallback, w)
			continue
		}
		for _, a := range ps.answers {
			if a.Found {
				points[ps.tp] = append(points[ps.tp], indexRead(a.Offset, a.Offset, a.TimestampMillis))
			}
		}
		for _, t := range ps.targets {
			if t.lo == noLower || t.hi == noUpper {
				continue
			}
			// [lo, hi) in milliseconds: the middle of what it allows.
			dated[ps.tp] = append(dated[ps.tp], indexRead(t.Offset, t.Offset, t.lo+(t.hi-1-t.lo)/2))
		}
	}
	return points, dated, fallback
}

// indexRead is a record the time index dated: the record at offset,
// stamped millis, answering wanted.
func indexRead(wanted, offset, millis int64) kafka.RecordRead {
	return kafka.RecordRead{Wanted: wanted, RecordTimestamp: kafka.RecordTimestamp{
		Offset: offset, Timestamp: millis * 1e6, Found: kafka.RecordTimed,
		ByProducer: true, Producer: lag.TimeIndexClock,
	}}
}
