package dating

import (
	"math"
	"slices"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// The time index answers, for a time T, the first record from the log
// start whose timestamp is at or after T, f(T), with that record's own
// timestamp. f is non-decreasing in T, and an answer proves that the
// records below f(T) carry timestamps before T, whatever their order. So
// once f(L) <= c < f(U), the largest timestamp of the records up to c
// lies in [L, U): where timestamps never go back, that is c's own. Where
// they do (CreateTime from producers whose clocks differ, or set by the
// application), the search dates c by the latest timestamp up to it, which
// is no earlier than c's own and, clocks being right, no later than c's
// append; the points it answers are those records too, so that the
// partition's clock measured from them is the one of the latest stamps,
// and the date is clamped to c's bracket like any other.
//
// Every answer is an exact point (an offset and its record's timestamp)
// and bounds every target of its partition at once. A round asks, per
// partition, one time for each target not yet within its precision
// (target.nextTime): first the table's guess; from one side, the time the
// partition's rate in its table puts the target at from the nearest
// point, pushed past the known end by a step that grows while the other
// end stays unknown; from both sides, the straight line through what is
// known (a steady partition's stamps follow it), the millisecond after the
// latest timestamp below (records of one batch share it), or the middle.

// MaxIndexRounds caps a scrape's rounds of time-index requests. The first
// round asks the table's guess, the next ones the line through what was
// answered: a steady or batched partition is dated in two or three rounds,
// and ten narrow a record hours old to its precision by halving.
const MaxIndexRounds = 10

// MaxAsksPerPartition caps the times a partition is asked in one round:
// the request names a partition once, so each time past the first costs
// its leader one more request of the round, however few partitions need
// it.
const MaxAsksPerPartition = 8

// gallop is how much further each time the search looks past a one-sided
// interval's known end: from a second, an hour away is found in the fourth
// round and a year in the seventh.
const gallop = 16

// cutOffShare: a search its rounds left open still dates its record by the
// middle of its interval when that is narrower than this share of the
// record's age (the accuracy target's relative bound, 1 %).
const cutOffShare = 100

const (
	noLower = -(int64(1) << 60)
	noUpper = int64(1) << 60
)

// target is a record the search dates: [lo, hi) holds the latest
// timestamp up to it, in unix milliseconds, as far as the answers prove.
// Its IndexTarget is what the plan gave and stays as given.
type target struct {
	IndexTarget
	lo, hi int64
	// precision is how narrow [lo, hi) is to become: the plan's, widened
	// to what the answers allow once every time that could narrow it was
	// asked.
	precision int64
	// below and above are the exact points nearest the target on either
	// side: the answers whose record is at or before it with the latest
	// timestamp, and after it with the earliest; secondBelow the point
	// below before below, for the rate between the two.
	below, above, secondBelow kafka.TimePoint
	// step is how far past a one-sided interval's known end the next time
	// is pushed (growing by gallop).
	step int64
	// widthAsked and aboveAsked are the interval's width and the offset of
	// the record above when the target last asked with both sides known:
	// whether the line halved the interval, and whether the record above
	// stayed the same over an answer.
	widthAsked, aboveAsked int64
	// batchProbed: the millisecond after lo was asked, once, to close the
	// interval where the target shares its batch's millisecond.
	batchProbed bool
}

func newTarget(it IndexTarget) target {
	return target{IndexTarget: it, lo: noLower, hi: noUpper, precision: it.PrecisionMillis, step: max(it.StepMillis, it.PrecisionMillis, 1)}
}

func (t *target) converged() bool { return t.hi-t.lo <= t.precision }

// The moves of a search. Each predicate names where a target stands; the
// switch in nextTime picks the first that holds.

// unbounded: no answer bounds the target yet; the plan's guess is asked.
func unbounded(t *target) bool { return t.lo == noLower && t.hi == noUpper }

// openBelow: an answer bounds it from above only; the search gallops down.
func openBelow(t *target) bool { return t.lo == noLower }

// openAbove: an answer bounds it from below only; the search gallops up.
func openAbove(t *target) bool { return t.hi == noUpper }

// batchUnprobed: bounded on both sides, the record above stayed the same
// over the last answer (no record between is stamped in what the interval
// lost), and the millisecond after the latest timestamp below was not
// asked: where the records from there up to the target share it (one
// batch), its answer closes the interval.
func batchUnprobed(t *target, aboveStayed bool, asked map[int64]bool) bool {
	return aboveStayed && !t.batchProbed && !asked[t.lo+1] && t.lo+1 < t.hi
}

// nextTime is the time to ask to narrow t, none of those asked already
// (asked); not ok when every time that could narrow it was asked.
func (t *target) nextTime(asked map[int64]bool) (int64, bool) {
	switch {
	case unbounded(t):
		return notAsked(max(t.GuessMillis, 0), asked)
	case openBelow(t):
		return notAsked(max(t.gallopDown(), 0), asked)
	case openAbove(t):
		return notAsked(max(t.gallopUp(), 0), asked)
	}
	halving, aboveStayed := t.noteAsked()
	if batchUnprobed(t, aboveStayed, asked) {
		t.batchProbed = true
		return t.lo + 1, true
	}
	if at, ok := t.line(halving, asked); ok {
		return at, true
	}
	return t.bisect(asked)
}

// notAsked is at, ok when it was not asked yet.
func notAsked(at int64, asked map[int64]bool) (int64, bool) { return at, !asked[at] }

// gallopDown is the time below the known upper end: a step further each
// time, or sooner where the partition's rate puts the target.
func (t *target) gallopDown() int64 {
	at := t.hi - t.step
	if line, ok := t.extrapolate(t.above); ok {
		at = min(at, line)
	}
	t.step *= gallop
	return at
}

// gallopUp is the time above the known lower end: a step further each
// time, or further where the partition's rate puts the target.
func (t *target) gallopUp() int64 {
	at := t.lo + t.step
	if line, ok := t.extrapolate(t.below); ok {
		at = max(at, line)
	}
	t.step *= gallop
	return at
}

// noteAsked remembers the interval a bounded target asks from, and tells
// whether it halved since the last time (or this is the first), and
// whether the record above stayed the same.
func (t *target) noteAsked() (halving, aboveStayed bool) {
	width := t.hi - t.lo
	halving = t.widthAsked == 0 || 2*width <= t.widthAsked
	aboveStayed = t.widthAsked != 0 && t.above.Offset == t.aboveAsked
	t.widthAsked, t.aboveAsked = width, t.above.Offset
	return halving, aboveStayed
}

// line is the time the straight line through what is known puts the
// target at, while it halves the interval: between the records below and
// above; with no record above known, the rate of the two points below, or
// the partition's, carries it on, else a growing step above lo.
func (t *target) line(halving bool, asked map[int64]bool) (int64, bool) {
	at, ok := t.interpolate()
	if !t.above.Found {
		at, ok = t.extrapolateAbove()
	}
	if !ok || !halving {
		return 0, false
	}
	at = min(max(at, t.lo+1), t.hi-1)
	return at, !asked[at]
}

// bisect is the middle of the interval, else its quarters, whichever was
// not asked.
func (t *target) bisect(asked map[int64]bool) (int64, bool) {
	width := t.hi - t.lo
	for _, at := range []int64{t.lo + width/2, t.lo + width/4, t.lo + 3*width/4} {
		if at > t.lo && at < t.hi && !asked[at] {
			return at, true
		}
	}
	return 0, false
}

// extrapolate is when the partition's rate puts the target, from the
// exact point p; not ok without either.
func (t *target) extrapolate(p kafka.TimePoint) (int64, bool) {
	if !p.Found || t.RecordsPerMilli <= 0 {
		return 0, false
	}
	shift := float64(t.Offset-p.Offset) / t.RecordsPerMilli
	return p.TimestampMillis + int64(max(min(shift, 1<<50), -(1<<50))), true
}

// extrapolateAbove is when the rate of the two exact points below the
// target, or else the partition's, puts it from the point below; else lo
// and a step that grows each time.
func (t *target) extrapolateAbove() (int64, bool) {
	below, before := t.below, t.secondBelow
	if below.Found && before.Found && below.Offset > before.Offset && below.TimestampMillis > before.TimestampMillis {
		f := float64(t.Offset-below.Offset) / float64(below.Offset-before.Offset)
		return below.TimestampMillis + int64(math.Round(f*float64(below.TimestampMillis-before.TimestampMillis))), true
	}
	if line, ok := t.extrapolate(below); ok {
		return line, true
	}
	at := t.lo + t.step
	t.step *= gallop
	return at, true
}

// interpolate is when the straight line through what is known around the
// target puts it: from the record below at lo to the record above at hi,
// the earliest its timestamp can be (no later than that record's own).
func (t *target) interpolate() (int64, bool) {
	below, aboveOffset := t.below, t.above.Offset
	if !below.Found || !t.above.Found || aboveOffset <= below.Offset || t.Offset < below.Offset {
		return 0, false
	}
	f := float64(t.Offset-below.Offset) / float64(aboveOffset-below.Offset)
	return t.lo + int64(math.Round(f*float64(t.hi-t.lo))), true
}

// apply narrows t by an answer.
func (t *target) apply(a kafka.TimePoint) {
	switch {
	case !a.Found || a.Offset > t.Offset:
		// Every record up to the target is stamped before a.AtMillis.
		if a.AtMillis < t.hi {
			t.hi = a.AtMillis
		}
		if a.Found && (!t.above.Found || a.Offset < t.above.Offset) {
			t.above = a
		}
	case a.Offset == t.Offset:
		// The target's own record, first stamped at or after the time
		// asked: every record before it is stamped earlier.
		t.lo, t.below = a.TimestampMillis, a
		t.hi = min(t.hi, a.TimestampMillis+1)
	case a.TimestampMillis >= t.lo:
		// The latest timestamp up to the target is no earlier than f's.
		if t.below.Found && a.Offset > t.below.Offset {
			t.secondBelow = t.below
		}
		t.lo, t.below = a.TimestampMillis, a
	}
	if t.lo >= t.hi {
		// Answers that contradict each other (the log changed between
		// them: retention, a truncation): the latest one stands alone.
		t.lo, t.hi = noLower, noUpper
		t.apply(a)
	}
}

// partitionSearch is one partition's search.
type partitionSearch struct {
	tp      kafka.TopicPartition
	targets []target // ascending by offset
	answers []kafka.TimePoint
	asked   map[int64]bool
	// failed: the index could not be searched (an error named the
	// partition); belowStart: a target lies below the log start (the
	// first record, f(0), is past it): retention deleted it.
	failed, belowStart bool
}

// searching tells whether the partition is still searched.
func (ps *partitionSearch) searching() bool { return !ps.failed && !ps.belowStart }

// indexSearch is a scrape's search of the time index: answers in (take),
// asks out (asks), no I/O. It counts its rounds and asks nothing past
// MaxIndexRounds.
type indexSearch struct {
	parts  []*partitionSearch
	byTP   map[kafka.TopicPartition]*partitionSearch
	rounds int
}

func newIndexSearch(targets []IndexTarget) *indexSearch {
	s := &indexSearch{byTP: map[kafka.TopicPartition]*partitionSearch{}}
	for _, it := range targets {
		ps := s.byTP[it.TopicPartition]
		if ps == nil {
			ps = &partitionSearch{tp: it.TopicPartition, asked: map[int64]bool{}}
			s.byTP[it.TopicPartition] = ps
			s.parts = append(s.parts, ps)
		}
		ps.targets = append(ps.targets, newTarget(it))
	}
	for _, ps := range s.parts {
		slices.SortFunc(ps.targets, func(a, b target) int { return int(min(max(a.Offset-b.Offset, -1), 1)) })
	}
	return s
}

// asks are the times of the next round: per partition still searching,
// those of its askers among the targets not yet within their precision,
// up to MaxAsksPerPartition, the lowest offsets first. None once
// MaxIndexRounds rounds were asked.
func (s *indexSearch) asks() []kafka.PartitionTimes {
	if s.rounds == MaxIndexRounds {
		return nil
	}
	var asks []kafka.PartitionTimes
	for _, ps := range s.parts {
		if !ps.searching() {
			continue
		}
		var open []*target // ascending by offset, as ps.targets
		for i := range ps.targets {
			if t := &ps.targets[i]; !t.converged() {
				open = append(open, t)
			}
		}
		var times []int64
		for _, t := range askers(open) {
			if len(times) == MaxAsksPerPartition {
				break
			}
			at, ok := t.nextTime(ps.asked)
			if !ok {
				// Every time that could narrow it was asked: it cannot
				// narrow further from here.
				t.precision = max(t.precision, t.hi-t.lo)
				continue
			}
			if !slices.Contains(times, at) {
				times = append(times, at)
			}
		}
		for _, at := range times {
			ps.asked[at] = true
		}
		if len(times) > 0 {
			asks = append(asks, kafka.PartitionTimes{TopicPartition: ps.tp, Millis: times})
		}
	}
	if len(asks) > 0 {
		s.rounds++
	}
	return asks
}

// askers are the targets of open (ascending by offset) that ask this
// round, in that order: targets between the same two answers learn the
// same from the next, so that of each run of them only a few spread across
// it ask (the lowest and the highest at least, more while few runs share
// the round's asks), and the answers between them split the rest the
// round after.
func askers(open []*target) []*target {
	type span struct {
		lo, hi int64
	}
	var runs [][]*target
	for _, t := range open {
		if n := len(runs); n > 0 && (span{runs[n-1][0].lo, runs[n-1][0].hi} == span{t.lo, t.hi}) {
			runs[n-1] = append(runs[n-1], t)
			continue
		}
		runs = append(runs, []*target{t})
	}
	var out []*target
	for _, run := range runs {
		// A run of targets between the same two answers: those spread
		// across it ask, their answers splitting the rest.
		n := min(len(run), max(2, MaxAsksPerPartition/len(runs)))
		for i := range n {
			out = append(out, run[i*(len(run)-1)/max(n-1, 1)])
		}
	}
	return slices.Compact(out)
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
			ps.apply(p)
		}
	}
}

func (ps *partitionSearch) apply(a kafka.TimePoint) {
	ps.answers = append(ps.answers, a)
	for i := range ps.targets {
		t := &ps.targets[i]
		if a.Found && a.AtMillis == 0 && a.Offset > t.Offset {
			ps.belowStart = true
		}
		t.apply(a)
	}
}

// results are what the search found: the exact points the index answered
// (each a record's offset and its own timestamp, which measure the
// partition's clock against its table like records read), and the targets
// dated: bounded on both sides, by the middle of their interval. Both carry
// the partition's clock (clocks.TimeIndexClock). Partitions whose index could
// not be searched, or with a target below the log start, and the targets
// the rounds left open on one side or wider than their cut-off, are in
// fallback, with their offsets: a record read answers those, and finds the
// log start.
func (s *indexSearch) results() (points, dated kafka.RecordReads, fallback []kafka.PartitionOffsets) {
	points, dated = kafka.RecordReads{}, kafka.RecordReads{}
	for _, ps := range s.parts {
		w := kafka.PartitionOffsets{TopicPartition: ps.tp}
		if !ps.searching() {
			for _, t := range ps.targets {
				w.Offsets = append(w.Offsets, t.Offset)
			}
			fallback = append(fallback, w)
			continue
		}
		for _, a := range ps.answers {
			if a.Found && !slices.ContainsFunc(points[ps.tp], func(r kafka.RecordRead) bool { return r.Offset == a.Offset }) {
				points[ps.tp] = append(points[ps.tp], indexRead(a.Offset, a.Offset, a.TimestampMillis))
			}
		}
		for _, t := range ps.targets {
			open := t.lo == noLower || t.hi == noUpper || t.hi-t.lo > max(t.precision, (t.ScrapeMillis-t.lo)/cutOffShare)
			if open || t.ExactOnly && !(t.below.Found && t.below.Offset == t.Offset) {
				// On a compacted topic only the record's own point proves
				// it exists: else a read finds the next one.
				w.Offsets = append(w.Offsets, t.Offset)
				continue
			}
			// [lo, hi) in milliseconds: the middle of what it allows.
			dated[ps.tp] = append(dated[ps.tp], indexRead(t.Offset, t.Offset, t.lo+(t.hi-1-t.lo)/2))
		}
		if len(w.Offsets) > 0 {
			fallback = append(fallback, w)
		}
	}
	return points, dated, fallback
}
