package lag

import (
	"math"
	"slices"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
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

// clockTolerance is how far the reads of one producer may disagree about
// its clock's offset and still be one clock: the time between a record's
// stamping and its append (linger, retries, the end-offset read's round
// trip) varies by that much. Where they disagree, the offset is the middle
// of what they say. A larger disagreement is a clock that was stepped, or
// a producer ID reused by another process: what older reads said is
// dropped.
const clockTolerance = int64(100 * time.Millisecond)

// clockPinned is how narrow the offsets the reads allow must be for their
// middle to be taken before clockSettled reads: it is then within half of
// it of the clock's.
const clockPinned = int64(200 * time.Millisecond)

// clockSettled is how many reads of a producer's records make the range
// they allow what the data can tell: its middle is taken however wide it
// is. A producer writing once a second, sampled on the same beat, is never
// read closer to a sample than its beat allows, and its range stays as
// wide; with fewer reads, a wide range is more likely a record stamped
// before a sample and appended after it by an exact clock.
const clockSettled = 16

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

// unbounded stands for no bound on a clock's offset, far enough from
// math.MinInt64 that subtracting a time or the tolerance cannot wrap.
const unbounded = math.MinInt64 / 4

// producerClock is what reads tell of one producer's clock on a partition.
type producerClock struct {
	producer int64
	// lo and hi bound the clock's offset, in nanoseconds: an append time
	// minus the timestamp the producer gave the record. lo > hi when reads
	// disagree within the tolerance.
	lo, hi int64
	// learned is when a read last narrowed the range.
	learned int64
	// reads counts the reads the range is made of.
	reads uint32
}

// learn narrows the clock's range by one record read: its offset lies
// between lo and hi.
func (c *producerClock) learn(lo, hi, at int64) {
	if lo > c.hi+clockTolerance || hi < c.lo-clockTolerance {
		c.lo, c.hi, c.reads = lo, hi, 0
	} else {
		c.lo, c.hi = max(c.lo, lo), min(c.hi, hi)
	}
	c.learned = at
	c.reads = min(c.reads+1, clockSettled)
}

// offset is how far the producer's timestamps are moved to date its
// records: none while the reads allow an exact clock; once they prove it
// off, the middle of what they allow when that is narrower than
// clockPinned, where reads disagree, or after clockSettled reads; before
// that, the offset they allow closest to none, since clocks are mostly
// close. Within clockResolution it is none.
func (c producerClock) offset() int64 {
	var o int64
	switch {
	case c.lo <= 0 && 0 <= c.hi:
		return 0
	case c.lo > c.hi || c.hi-c.lo <= clockPinned || c.reads >= clockSettled:
		o = c.lo/2 + c.hi/2
	default:
		o = min(max(0, c.lo), c.hi)
	}
	if o > -clockResolution && o < clockResolution {
		return 0
	}
	return o
}

// partitionClocks are the producers' clocks of one partition.
type partitionClocks []producerClock

// offset is how far the timestamp of rec is moved: by its producer's
// clock offset, when the record carries its producer's clock and reads
// have measured it.
func (pc partitionClocks) offset(rec kafka.RecordTimestamp) int64 {
	if !rec.ByProducer {
		return 0
	}
	for _, c := range pc {
		if c.producer == rec.Producer {
			return c.offset()
		}
	}
	return 0
}

// learn narrows the clock of producer by a read: its offset lies between
// lo and hi.
func (pc partitionClocks) learn(producer, lo, hi, at int64) partitionClocks {
	for i := range pc {
		if pc[i].producer == producer {
			pc[i].learn(lo, hi, at)
			return pc
		}
	}
	c := producerClock{producer: producer, lo: lo, hi: hi, learned: at, reads: 1}
	if len(pc) < clocksPerPartition {
		return append(pc, c)
	}
	oldest := 0
	for i := range pc {
		if pc[i].learned < pc[oldest].learned {
			oldest = i
		}
	}
	pc[oldest] = c
	return pc
}

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
// counts), those not in offsets.
func clockBoundaries(p *Partition, offsets []int64, at int64, tables Tables) []int64 {
	var near []int64
	from := offsets[0]
	for range boundariesRead {
		b, inTable := tables.Bracket(p.Table, from, timetable.Sample{Offset: p.End, At: at})
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

// learnClocks measures the clocks of the producers whose records a read
// found on tp, by the brackets the tables prove.
func (r *RecordTimes) learnClocks(tp kafka.TopicPartition, reads []kafka.RecordRead, proof Proof) {
	if proof.Index == nil || proof.Tables == nil {
		return
	}
	p, found := proof.Index.partition(tp)
	if !found {
		return
	}
	clocks := r.clocks[tp]
	learned := false
	for _, read := range reads {
		rec := read.RecordTimestamp
		if rec.Found != kafka.RecordTimed || !rec.ByProducer {
			continue
		}
		lo, hi, ok := proof.proven(p, rec.Offset)
		if !ok {
			continue
		}
		if lo != unbounded {
			lo -= rec.Timestamp
		}
		clocks = clocks.learn(rec.Producer, lo, hi-rec.Timestamp, proof.At)
		learned = true
	}
	if learned {
		r.clocks[tp] = clocks
	}
}

// ClocksOff counts the producers' clocks, once per partition, that reads
// measured at least clockResolution off (their records' timestamps are
// moved), and the largest of those offsets, ahead or behind.
func (r *RecordTimes) ClocksOff() (clocks int, largest time.Duration) {
	for _, pc := range r.clocks {
		for _, c := range pc {
			o := c.offset()
			if o == 0 {
				continue
			}
			clocks++
			largest = max(largest, time.Duration(max(o, -o)))
		}
	}
	return clocks, largest
}

// forgetOldClocks drops the clocks no read has measured for
// clockForgetAfter before at.
func (r *RecordTimes) forgetOldClocks(at int64) {
	for tp, clocks := range r.clocks {
		clocks = slices.DeleteFunc(clocks, func(c producerClock) bool { return at-c.learned > clockForgetAfter })
		if len(clocks) == 0 {
			delete(r.clocks, tp)
			continue
		}
		r.clocks[tp] = clocks
	}
}
