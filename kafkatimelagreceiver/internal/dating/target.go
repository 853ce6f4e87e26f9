package dating

import (
	"math"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// One record's search of the time index: what the answers prove of its
// latest timestamp, and the time it asks next (its moves).

// gallop is how much further each time the search looks past a one-sided
// interval's known end: from a second, an hour away is found in the fourth
// round and a year in the seventh.
const gallop = 16

const (
	noLower = -(int64(1) << 60)
	noUpper = int64(1) << 60
)

// target is a record the search dates: [lo, hi) holds the latest
// timestamp up to it, in unix milliseconds, as far as the answers prove.
// Its exported fields are its IndexTarget's, as the plan gave them (its
// precision and first step become precision and step); what is the same
// for its whole partition (the partition, the scrape's instant) is its
// partitionSearch's, since a busy scrape searches hundreds of thousands of
// targets at once.
type target struct {
	Offset, GuessMillis int64
	RecordsPerMilli     float64
	lo, hi              int64
	// precision is how narrow [lo, hi) is to become: the plan's, widened
	// to what the answers allow once every time that could narrow it was
	// asked.
	precision int64
	// below and above are the exact points nearest the target on either
	// side: the answers whose record is at or before it with the latest
	// timestamp, and after it with the earliest; secondBelow the point
	// below before below, for the rate between the two.
	below, above, secondBelow exactPoint
	// step is how far past a one-sided interval's known end the next time
	// is pushed (growing by gallop).
	step int64
	// widthAsked and aboveAsked are the interval's width and the offset of
	// the record above when the target last asked with both sides known:
	// whether the line halved the interval, and whether the record above
	// stayed the same over an answer.
	widthAsked, aboveAsked int64
	ExactOnly              bool
	// batchProbed: the millisecond after lo was asked to close the
	// interval where the target shares its batch's millisecond: once,
	// unless few records lie between the points either side
	// (fewBetween).
	batchProbed bool
}

// exactPoint is what a target keeps of an answer that found a record: the
// record's offset and its own timestamp (unix milliseconds); noPoint, an
// offset below 0, is none. It is half a kafka.TimePoint, and a target
// keeps three.
type exactPoint struct {
	Offset, TimestampMillis int64
}

var noPoint = exactPoint{Offset: -1}

func (p exactPoint) found() bool { return p.Offset >= 0 }

// pointOf is what a target keeps of a, an answer that found a record.
func pointOf(a kafka.TimePoint) exactPoint {
	return exactPoint{Offset: a.Offset, TimestampMillis: a.TimestampMillis}
}

func newTarget(it IndexTarget) target {
	return target{Offset: it.Offset, GuessMillis: it.GuessMillis, RecordsPerMilli: it.RecordsPerMilli, ExactOnly: it.ExactOnly,
		lo: noLower, hi: noUpper, precision: it.PrecisionMillis, step: max(it.StepMillis, it.PrecisionMillis, 1),
		below: noPoint, above: noPoint, secondBelow: noPoint}
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
// batch), its answer closes the interval. A target asks it once, or once
// for each point below while few records lie between the points either
// side (fewBetween).
func batchUnprobed(t *target, aboveStayed bool, asked askedTimes) bool {
	return aboveStayed && (!t.batchProbed || fewBetween(t)) && !asked.has(t.lo+1) && t.lo+1 < t.hi
}

// fewBetween: exact points on both sides of t hold at most
// MaxAsksPerPartition records from the one below up to the one above.
// Each answer to the millisecond after the point below is a record past
// it (the next batch's first, where stamps rise), up to the target or
// past it (which closes its interval): a walk of at most that many
// rounds, where the line through the two points, not knowing that
// records of a batch share its millisecond, narrows by a third a round
// toward the batch's stamp.
func fewBetween(t *target) bool {
	return t.below.found() && t.above.found() && t.above.Offset-t.below.Offset <= MaxAsksPerPartition
}

// batchEndUnasked: the target walks its run (the lowest of a run dense in
// targets, denseRun) from an exact point whose millisecond's end was not
// asked: the answer for the millisecond after it is where the records
// stamped with that point's stamp end, which dates at once every target
// among them (records of one batch share it), and is the next exact point
// up otherwise.
func batchEndUnasked(t *target, walk bool, asked askedTimes) bool {
	return walk && t.below.found() && t.below.Offset < t.Offset && !asked.has(t.lo+1) && t.lo+1 < t.hi
}

// nextTime is the time to ask to narrow t, none of those asked already
// (asked); walk: t walks its run (batchEndUnasked). Not ok when every
// time that could narrow it was asked.
func (t *target) nextTime(asked askedTimes, walk bool) (int64, bool) {
	switch {
	case unbounded(t):
		return notAsked(max(t.GuessMillis, 0), asked)
	case openBelow(t):
		return notAsked(max(t.gallopDown(), 0), asked)
	case openAbove(t):
		return notAsked(max(t.gallopUp(), 0), asked)
	}
	if batchEndUnasked(t, walk, asked) {
		return t.lo + 1, true
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
func notAsked(at int64, asked askedTimes) (int64, bool) { return at, !asked.has(at) }

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
func (t *target) line(halving bool, asked askedTimes) (int64, bool) {
	at, ok := t.interpolate()
	if !t.above.found() {
		at, ok = t.extrapolateAbove()
	}
	if !ok || !halving {
		return 0, false
	}
	at = min(max(at, t.lo+1), t.hi-1)
	return at, !asked.has(at)
}

// bisect is the middle of the interval, else its quarters, whichever was
// not asked.
func (t *target) bisect(asked askedTimes) (int64, bool) {
	width := t.hi - t.lo
	for _, at := range []int64{t.lo + width/2, t.lo + width/4, t.lo + 3*width/4} {
		if at > t.lo && at < t.hi && !asked.has(at) {
			return at, true
		}
	}
	return 0, false
}

// extrapolate is when the partition's rate puts the target, from the
// exact point p; not ok without either.
func (t *target) extrapolate(p exactPoint) (int64, bool) {
	if !p.found() || t.RecordsPerMilli <= 0 {
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
	if below.found() && before.found() && below.Offset > before.Offset && below.TimestampMillis > before.TimestampMillis {
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
	if !below.found() || !t.above.found() || aboveOffset <= below.Offset || t.Offset < below.Offset {
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
		if a.Found && (!t.above.found() || a.Offset < t.above.Offset) {
			t.above = pointOf(a)
		}
	case a.Offset == t.Offset:
		// The target's own record, first stamped at or after the time
		// asked: every record before it is stamped earlier.
		t.lo, t.below = a.TimestampMillis, pointOf(a)
		t.hi = min(t.hi, a.TimestampMillis+1)
	case a.TimestampMillis >= t.lo:
		// The latest timestamp up to the target is no earlier than f's.
		if t.below.found() && a.Offset > t.below.Offset {
			t.secondBelow = t.below
		}
		t.lo, t.below = a.TimestampMillis, pointOf(a)
	}
	if t.lo >= t.hi {
		// Answers that contradict each other (the log changed between
		// them: retention, a truncation): the latest one stands alone.
		t.lo, t.hi = noLower, noUpper
		t.apply(a)
	}
}
