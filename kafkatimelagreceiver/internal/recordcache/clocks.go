package recordcache

import (
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/clocks"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// What the records read and the time index's points measure of each
// partition's producers' clocks (package clocks), as Cache keeps
// them.

// learnClocks measures the clocks of the producers whose records a read
// found on tp, by the brackets the tables prove; the records of batches
// without a producer ID measure clocks.NoProducerClock. A clock that
// starts over leaves the records read before it dated as they were (bake).
func (r *Cache) learnClocks(tp kafka.TopicPartition, reads []kafka.RecordRead, proof Proof) {
	if proof.Appended == nil {
		return
	}
	pc := r.clocks[tp]
	learned := false
	for _, read := range reads {
		rec := read.RecordTimestamp
		if rec.Found != kafka.RecordTimed {
			continue
		}
		lo, hi, ok := proof.Appended(tp, rec.Offset)
		if !ok {
			continue
		}
		if lo != clocks.Unbounded {
			lo -= rec.Timestamp
		}
		producer := rec.Producer
		if !rec.ByProducer {
			producer = clocks.NoProducerClock
		}
		var stepped bool
		var before int64
		pc, stepped, before = pc.Learn(producer, rec.Offset, lo, hi-rec.Timestamp, proof.At)
		if stepped && rec.ByProducer {
			r.bake(tp, producer, before)
		}
		learned = true
	}
	if learned {
		r.clocks[tp] = pc
	}
}

// bake moves the remembered records of producer on tp by offset, the one
// its clock dated them by, and takes them off that clock: a clock that
// starts over measures a producer that is not the one that wrote them (a
// restarted process under the same ID, a stepped clock), and must not date
// them again.
func (r *Cache) bake(tp kafka.TopicPartition, producer, offset int64) {
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
// measured off (their records' timestamps are moved), and the largest of
// those offsets, ahead or behind.
func (r *Cache) ClocksOff() (off int, largest time.Duration) {
	for _, pc := range r.clocks {
		n, l := pc.Off()
		off, largest = off+n, max(largest, l)
	}
	return off, largest
}

// forgetOldClocks drops the clocks no read has measured for an hour
// before at (clocks.Partition.Forget).
func (r *Cache) forgetOldClocks(at int64) {
	for tp, pc := range r.clocks {
		if pc = pc.Forget(at); len(pc) == 0 {
			delete(r.clocks, tp)
			continue
		}
		r.clocks[tp] = pc
	}
}

// ClocksApart tells whether the records read on tp measured producers
// whose clocks are apart (clocks.Partition.Apart): only a read dates their
// records by their own producer's clock.
func (r *Cache) ClocksApart(tp kafka.TopicPartition) bool {
	return r.clocks[tp].Apart()
}

// stampsWithin is how far topic's stamps are proven from their appends by
// its configuration or trusted_timestamp_topics (TrustedStamps); bounded
// is false when neither bounds them.
func (r *Cache) stampsWithin(topic string) (within time.Duration, bounded bool) {
	if r.trusted != nil && r.trusted(topic) {
		return 0, true
	}
	return r.topics[topic].StampsWithin()
}

// readDates tells whether a read of rec, a record of tp the time index
// dated whose stamps its clock does not show, would date it: a producer's
// clock on tp is shown, and a read says which producer stamped the record.
// The index's clock cannot be measured where a stamp ahead of its clock
// hides the records after it from the index.
func (r *Cache) readDates(tp kafka.TopicPartition, rec kafka.RecordTimestamp, at int64) bool {
	pc := r.clocks[tp]
	if !clocks.FromIndex(rec) || rec.Found != kafka.RecordTimed || pc.StampsShown(rec, at-rec.Timestamp, 0, false) {
		return false
	}
	return pc.ProducerShown()
}

// EncodeClocks saves the producers' clocks (clocks.Encode), under the lock
// the scrape's changes to them hold: the state's saves run on a goroutine
// of their own.
func (r *Cache) EncodeClocks() []byte {
	r.clocksMu.Lock()
	defer r.clocksMu.Unlock()
	return clocks.Encode(r.clocks)
}

// RestoreClocks installs producers' clocks saved by EncodeClocks, as
// clocks.Decode restores them at now.
func (r *Cache) RestoreClocks(data []byte, now time.Time) (clocks.Restored, error) {
	byPartition, restored, err := clocks.Decode(data, now)
	if err != nil {
		return restored, err
	}
	r.clocksMu.Lock()
	defer r.clocksMu.Unlock()
	r.changes++
	r.clocks = byPartition
	return restored, nil
}

// ClocksOf are the producers' clocks measured on tp.
func (r *Cache) ClocksOf(tp kafka.TopicPartition) clocks.Partition { return r.clocks[tp] }
