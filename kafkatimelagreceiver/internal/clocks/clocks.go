// Package clocks measures producers' clocks against the interpolation
// tables: what the reads of a partition's records tell of each producer's
// clock offset (an append time minus the timestamp the producer gave),
// whether a clock shows its stamps to be append times (stamps.go), how a
// record's timestamp is shifted to date it, and the clocks as saved and
// restored (state.go). Values in, values out: the record cache
// (recordcache.Cache) holds each partition's clocks and feeds them its reads.
package clocks

import (
	"math"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// A producer stamps its records with its own clock (CreateTime). A clock
// seconds off dates every record read from that producer seconds off, where
// the tables (the broker's end offsets, read on the collector's clock) are
// not. Yet every record read lies in a bracket the tables prove: it was
// appended after the sample below its offset and by the one above. So its
// producer's clock offset (append time minus timestamp) is at least the
// bracket's start minus the timestamp and at most its end minus the
// timestamp. Each read of a producer's records narrows that range, the
// narrower the closer the record sits to a sample, and a record is dated by
// its timestamp moved by the offset in the range closest to none: a clock
// the tables never contradict is trusted as it is.

// clockTolerance is how far a read of a producer whose reads have
// agreed so far may disagree with them and still be the same clock: the
// time between a record's stamping and its append (linger, retries, the
// end-offset read's round trip) varies by that much. A larger
// disagreement is a clock that was stepped, or a producer ID reused by
// another process: what older reads said is dropped (and the records read
// before keep the offset they were dated by, recordcache.Cache.bake).
const clockTolerance = int64(100 * time.Millisecond)

// clockStepMin is the least disagreement taken for a step while a clock has
// fewer than clockKnown reads: a producer whose batches wait for linger and
// in-flight slots stamps records hundreds of milliseconds before they are
// appended, by a delay that varies batch to batch, and its first reads
// disagree by that spread before it is measured.
const clockStepMin = int64(time.Second)

// clockKnown is how many reads measure a producer's spread well enough that
// a read beyond twice it (or clockTolerance) is a step.
const clockKnown = 4

// clockPinned is how narrow the offsets the reads allow must be for their
// middle to be taken before clockSettled reads: it is then within half of
// it of the clock's.
const clockPinned = int64(200 * time.Millisecond)

// clockSettled is how many reads of a producer's records make the range
// they allow what the data can tell: its middle is taken however wide it
// is, when it is bounded on both sides. A producer writing once a second,
// sampled on the same beat, is never read closer to a sample than its beat
// allows, and its range stays as wide; with fewer reads, a wide range is
// more likely a record stamped before a sample and appended after it by an
// exact clock.
const clockSettled = 16

// clockSettledWidth is how narrow the offsets settled reads allow must be
// for their middle to be taken: it is then within half a second of the
// clock's, inside the accuracy target's one-second floor. A range left
// wider is bounded from one side only by records read close to a sample:
// the others are read far from the samples on that side (the time index's
// points, near the head, whose brackets end at the scrape just after them;
// a producer's records read at a random phase to the samples, seconds
// after the one below), and its middle would move every record by half the
// gap, seconds, that no read shows. Wider, the offset closest to none is
// taken, as for fewer reads: clocks are mostly close.
const clockSettledWidth = int64(time.Second)

// clockWindow is how many reads a clock's bounds are gathered over before
// they start a new window; a clock is measured by its last two windows,
// so that a clock drifting slowly, or a producer whose delays changed, is
// followed rather than held to what reads said hours ago.
const clockWindow = 128

// clockResolution is the smallest clock offset a record's date is moved
// by. A producer stamps a record before it batches and sends it, and the
// tables time a sample when its read returned, so that a record appended
// while the read was on its way back looks appended before it: a busy
// producer and a loaded end-offset read make an exact clock look tens of
// milliseconds off. Below this, the timestamp is taken as it stands.
const clockResolution = int64(100 * time.Millisecond)

// clockForgetAfter is how long a producer's clock is kept after the last
// read of one of its records: producers restart under new IDs.
const clockForgetAfter = int64(time.Hour)

// clocksPerPartition bounds the producers a partition's clocks are kept
// for; the one read longest ago makes room for a new one.
const clocksPerPartition = 16

// unbounded stands for no lower bound on a clock's offset, noBound for no
// upper one, far enough from the int64 limits that subtracting a time or
// the tolerance cannot wrap.
const (
	unbounded = math.MinInt64 / 4
	noBound   = math.MaxInt64 / 4
)

// Unbounded is the lower end of a range of append times or clock offsets
// that has none: a record older than its table is bounded from above only.
const Unbounded = unbounded

// StepMin is the least disagreement taken for a step of a clock with few
// reads (clockStepMin): a stamp no further ahead of when its record
// provably existed is a clock a little off, which the tables measure.
const StepMin = clockStepMin

// clock is what reads tell of one producer's clock on a partition.
type clock struct {
	producer int64
	// lo and hi bound the clock's offset, in nanoseconds (an append time
	// minus the timestamp the producer gave the record), over the reads
	// of the current window; prevLo and prevHi over the window before.
	// lo > hi when reads disagree: the producer's delay between stamping
	// and appending varies by that much.
	lo, hi, prevLo, prevHi int64
	// learned is when a read last narrowed the range.
	learned int64
	// reads counts the reads the bounds are made of (up to clockSettled),
	// windowReads those of the current window, and bounded those of a
	// record the tables bound on both sides (up to stampsShownAfter): only
	// those can show the producer's stamps disagree with the appends.
	reads, windowReads, bounded uint16
	// countedUpTo is the offset of the last record counted in bounded:
	// only a record past it counts, so that the same records read again
	// (a stuck group's, the index's answers scrape after scrape) are not
	// taken for agreement of many.
	countedUpTo int64
	// since is the offset of the first record read by the clock since it
	// started over (stepped), or -1 when it never did: a record before it
	// was stamped by the clock it replaced (a restarted process under the
	// same ID), and this one shows nothing of it.
	since int64
	// restored: saved before a restart and not yet agreed with by a read
	// since. The producer ID may now be another process's (a transactional
	// producer keeps its ID across hosts): until a read agrees, the clock
	// moves no record.
	restored bool
}

func newClock(producer, offset, lo, hi, at int64) clock {
	c := clock{producer: producer, lo: lo, hi: hi, prevLo: unbounded, prevHi: noBound, learned: at, reads: 1, windowReads: 1, countedUpTo: -1, since: -1}
	c.count(offset, lo)
	return c
}

// count counts a read of the record at offset in bounded when the tables
// bound it on both sides and it is past the records counted.
func (c *clock) count(offset, lo int64) {
	if boundedRead(lo) == 1 && offset > c.countedUpTo {
		c.bounded = min(c.bounded+1, stampsShownAfter)
		c.countedUpTo = offset
	}
}

// boundedRead is 1 for a read whose record the tables bound from below too.
func boundedRead(lo int64) uint16 {
	if lo > unbounded {
		return 1
	}
	return 0
}

// bounds are the clock's bounds over its last two windows.
func (c clock) bounds() (lo, hi int64) {
	return max(c.lo, c.prevLo), min(c.hi, c.prevHi)
}

// stepped tells whether a read allowing offsets lo to hi disagrees with the
// clock by more than its spread explains.
func (c clock) stepped(lo, hi int64) bool {
	blo, bhi := c.bounds()
	spread := max(0, blo-bhi)
	from, to := min(blo, bhi), max(blo, bhi)
	gap := max(lo-to, from-hi, 0)
	limit := clockTolerance
	if c.reads < clockKnown {
		limit = clockStepMin
	}
	return gap > max(limit, 2*spread)
}

// confirms tells whether a read allowing offsets lo to hi, after a
// restart, shows a restored clock is still its producer's: the tables
// bound the record on both sides, and it allows the clock's offset and
// rules out an exact clock (unless the clock is exact). A read that allows
// both says nothing of which process holds the ID now; one that allows
// neither steps the clock (stepped).
func (c clock) confirms(lo, hi int64) bool {
	o := c.offset()
	return lo > unbounded && lo <= o && o <= hi && (o == 0 || lo > 0 || hi < 0)
}

// learn narrows the clock's range by one record read: its offset lies
// between lo and hi. It returns false when the read starts the clock over
// (stepped).
func (c *clock) learn(offset, lo, hi, at int64) (same bool) {
	if c.stepped(lo, hi) {
		*c = newClock(c.producer, offset, lo, hi, at)
		c.since = offset
		return false
	}
	if c.windowReads >= clockWindow {
		c.prevLo, c.prevHi = c.lo, c.hi
		c.lo, c.hi, c.windowReads = lo, hi, 0
	} else {
		c.lo, c.hi = max(c.lo, lo), min(c.hi, hi)
	}
	c.learned = at
	c.reads = min(c.reads+1, clockSettled)
	c.windowReads++
	c.count(offset, lo)
	if c.restored && c.confirms(lo, hi) {
		c.restored = false
	}
	return true
}

// offset is how far the producer's timestamps are moved to date its
// records: none while the reads allow an exact clock; once they prove it
// off, the middle of what they allow when that is bounded on both sides
// and narrower than clockPinned, where reads disagree, or after
// clockSettled reads narrower than clockSettledWidth; otherwise (and always
// for a range open on one side), the offset they allow closest to none,
// since clocks are mostly close; for a range open below, none. Within
// clockResolution it is none.
func (c clock) offset() int64 {
	lo, hi := c.bounds()
	bounded := lo > unbounded && hi < noBound
	var o int64
	switch {
	case lo <= 0 && 0 <= hi, lo <= unbounded:
		// A range open below (records older than their table bound it
		// from above only) moves no record earlier than its stamp: what
		// one record proves of its own append is no proof of the others'.
		return 0
	case lo > hi || bounded && (hi-lo <= clockPinned || c.reads >= clockSettled && hi-lo <= clockSettledWidth):
		o = lo/2 + hi/2
	default:
		o = min(max(0, lo), hi)
	}
	if o > -clockResolution && o < clockResolution {
		return 0
	}
	return o
}

// lowest is the earliest offset a date is moved by: the earliest the
// clock's reads allow, or none (an offset within clockResolution is taken
// as none); for a range open below, none (offset).
func (c clock) lowest() int64 {
	lo, hi := c.bounds()
	if lo > unbounded {
		return min(lo, hi, 0)
	}
	return 0
}

// Partition are the producers' clocks of one partition.
type Partition []clock

// Shift is how a record's timestamp is moved to date it.
type Shift struct {
	// by is the producer's clock offset, as its reads measured it.
	by int64
	// lowest is the earliest offset the reads allow (clock.lowest):
	// by is never below it.
	lowest int64
	// spread: the reads disagree, by the delay between stamping and
	// appending that varies batch to batch; each record's own offset lies
	// between from and to.
	spread   bool
	from, to int64
}

// Shift is how the timestamp of rec is moved: by its producer's clock
// offset, when the record carries its producer's clock and reads have
// measured it.
func (pc Partition) Shift(rec kafka.RecordTimestamp) Shift {
	if !rec.ByProducer {
		return Shift{}
	}
	for _, c := range pc {
		if c.producer == rec.Producer && !c.restored {
			m := Shift{by: c.offset(), lowest: c.lowest()}
			if lo, hi := c.bounds(); lo-hi > clockTolerance && m.by != 0 {
				m.spread, m.from, m.to = true, hi, lo
			}
			return m
		}
	}
	return Shift{}
}

// Date is when the record stamped ts was appended, given what the tables
// prove of it (after lo, unbounded for none, and by hi): its timestamp
// moved by the clock's offset, clamped to that. Where the producer's
// delays spread, the record's own offset lies anywhere in the spread: the
// date is then kept within what both the spread and the tables allow.
func (m Shift) Date(ts, lo, hi int64) int64 {
	if m.spread {
		from, to := max(ts+m.from, lo), min(ts+m.to, hi)
		if from <= to {
			return min(max(ts+m.by, from), to)
		}
	}
	return min(max(ts+m.by, lo), hi)
}

// Place dates a record stamped ts whose bracket (after lo, by hi) the table
// places it at expected, when its producer's delays spread over at least
// half the bracket: its timestamp then says no more than that it was
// appended somewhere in a window about as wide as the bracket, where the
// record's place among the bracket's records says more on steady traffic.
// The date is that place, kept within what the timestamp allows, which
// bounds it where a burst makes the place a poor guess. Not ok when the
// spread is narrower, or the window and the bracket do not meet.
func (m Shift) Place(expected, ts, lo, hi int64) (int64, bool) {
	from, to := ts+m.from, ts+m.to
	if !m.spread || 2*(m.to-m.from) < hi-lo || from > hi || to < lo {
		return 0, false
	}
	return min(max(expected, from), to), true
}

// Learn narrows the clock of producer by a read of the record at offset:
// its clock offset lies between lo and hi. When the read starts the clock over (a step, or the producer
// ID reused by another process), stepped is the offset the clock moved
// records by until then.
func (pc Partition) Learn(producer, offset, lo, hi, at int64) (_ Partition, stepped bool, before int64) {
	for i := range pc {
		if pc[i].producer == producer {
			before = pc[i].offset()
			return pc, !pc[i].learn(offset, lo, hi, at), before
		}
	}
	c := newClock(producer, offset, lo, hi, at)
	if len(pc) < clocksPerPartition {
		return append(pc, c), false, 0
	}
	oldest := 0
	for i := range pc {
		if pc[i].learned < pc[oldest].learned {
			oldest = i
		}
	}
	pc[oldest] = c
	return pc, false, 0
}

// Lowest is the earliest offset the reads allow (clock.lowest): a record's
// date is never moved below its timestamp plus it.
func (m Shift) Lowest() int64 { return m.lowest }

// TimeIndexClock is the producer a partition's records dated from its
// brokers' time index are taken to be written by: the index does not say
// which producer wrote a record, so every point it answers measures one
// clock of the partition (producer IDs are 0 or more; -1 is none). Where
// the partition's writers' clocks differ (several producers, transaction
// markers stamped by the coordinator), their points disagree by that much,
// and the clock's spread dates a record at the middle of what the spread
// and its bracket allow (Shift.Date).
const TimeIndexClock int64 = -2

// FromIndex tells whether rec was dated from the time index rather than
// read.
func FromIndex(rec kafka.RecordTimestamp) bool {
	return rec.ByProducer && rec.Producer == TimeIndexClock
}

// By is the producer's clock offset the timestamp is moved by.
func (m Shift) By() int64 { return m.by }
