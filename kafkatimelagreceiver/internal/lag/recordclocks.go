package lag

import (
	"slices"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// What the records read and the time index's points measure of each
// partition's producers' clocks (clocks.go), as RecordTimes keeps it.

// indexClockPinned tells whether the clock the time index's points measure
// on tp is known to be exact: its points agree, allow no offset, and pin it
// within clockPinned or have settled, and enough of them were bounded on
// both sides to show its stamps append times (stamps.go). A clock off, or points that disagree
// (producers' delays, or clocks, that differ), keep asking for the records
// either side of the samples, which bound it the most tightly: the points
// of the records groups sit on alone leave it wider than a second, where
// it is no longer moved by its middle.
func (r *RecordTimes) indexClockPinned(tp kafka.TopicPartition) bool {
	for _, c := range r.clocks[tp] {
		if c.producer == TimeIndexClock {
			lo, hi := c.bounds()
			return c.offset() == 0 && lo <= hi && c.bounded >= stampsShownAfter && (c.reads >= clockSettled || lo > unbounded && hi < noBound && hi-lo <= clockPinned)
		}
	}
	return false
}

// clocksApartBy is how far apart two producers' clocks on one partition
// must be measured for the time index to be unable to date the records of
// the one behind (see ClocksApart).
const clocksApartBy = 2 * clockResolution

// ClocksApart tells whether the records read on tp measured producers
// whose clocks are more than clocksApartBy apart. The time index answers
// the latest timestamp up to a record, not which producer stamped it: a
// record of the producer behind is dated by the latest stamp of the one
// ahead, early by up to the gap between that one's writes. Only a read,
// which says whose clock stamped a record, dates it by its own producer's
// clock.
func (r *RecordTimes) ClocksApart(tp kafka.TopicPartition) bool {
	n := 0
	var lowest, highest int64
	for _, c := range r.clocks[tp] {
		if c.producer < 0 {
			// The time index's clock, or that of batches without an ID:
			// not one producer's.
			continue
		}
		o := c.offset()
		if n == 0 {
			lowest, highest = o, o
		}
		lowest, highest = min(lowest, o), max(highest, o)
		n++
	}
	return n >= 2 && highest-lowest > clocksApartBy
}

// learnClocks measures the clocks of the producers whose records a read
// found on tp, by the brackets the tables prove; the records of batches
// without a producer ID measure NoProducerClock. A clock that starts over
// leaves the records read before it dated as they were (bake).
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
		if rec.Found != kafka.RecordTimed {
			continue
		}
		lo, hi, ok := proof.proven(p, rec.Offset)
		if !ok {
			continue
		}
		if lo != unbounded {
			lo -= rec.Timestamp
		}
		producer := rec.Producer
		if !rec.ByProducer {
			producer = NoProducerClock
		}
		var stepped bool
		var before int64
		clocks, stepped, before = clocks.learn(producer, lo, hi-rec.Timestamp, proof.At)
		if stepped && rec.ByProducer {
			r.bake(tp, producer, before)
		}
		learned = true
	}
	if learned {
		r.clocks[tp] = clocks
	}
}

// bake moves the remembered records of producer on tp by offset, the one
// its clock dated them by, and takes them off that clock: a clock that
// starts over measures a producer that is not the one that wrote them (a
// restarted process under the same ID, a stepped clock), and must not date
// them again.
func (r *RecordTimes) bake(tp kafka.TopicPartition, producer, offset int64) {
	known := r.known[tp]
	for i := range known {
		ts := &known[i].ts
		if ts.Found == kafka.RecordTimed && ts.ByProducer && ts.Producer == producer {
			ts.Timestamp += offset
			ts.ByProducer = false
		}
	}
}

// ClocksOff counts the producers' clocks, once per partition, that reads
// measured at least clockResolution off (their records' timestamps are
// moved), and the largest of those offsets, ahead or behind.
func (r *RecordTimes) ClocksOff() (clocks int, largest time.Duration) {
	for _, pc := range r.clocks {
		for _, c := range pc {
			o := c.offset()
			if o == 0 || c.producer == NoProducerClock {
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
