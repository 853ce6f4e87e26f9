package batchguard

import (
	"cmp"
	"encoding/binary"
	"iter"
	"slices"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// Batch is what FirstRecord needs of one decoded record batch (the v2
// format) or one old-format entry (a message, or a compressed wrapper of
// messages), in the order of the partition's log.
type Batch struct {
	// LastOffset is the offset of the batch's last record; an old-format
	// wrapper's own offset is its last message's.
	LastOffset int64
	// Partial is a batch cut off by the fetch's size limits: nothing is
	// known from it on.
	Partial bool
	// Control is a transaction marker; AbortMarker one that aborts.
	Control, AbortMarker bool
	// Transactional batches of a producer inside an aborted transaction
	// hold no data.
	Transactional bool
	ProducerID    int64
	// ProducerClock tells that the records' timestamps are the clock of
	// the producer ProducerID names (CreateTime, and an ID the producer was
	// given), not the broker's.
	ProducerClock bool
	// Records are the batch's records, by offset, each with its timestamp
	// (the batch's append time under LogAppendTime).
	Records iter.Seq2[int64, time.Time]
}

// AbortedTransaction is a transaction a Fetch response lists as aborted.
type AbortedTransaction struct {
	ProducerID, FirstOffset int64
}

// Scan is what one partition's batches say from an offset on.
type Scan struct {
	Record kafka.RecordTimestamp // the first data record, when found
	Found  bool
	// Next is where a further read starts when nothing was found: every
	// batch below it was complete and held no data record at or after the
	// offset (only markers, aborted records or records before the offset).
	Next int64
}

// FirstRecord finds the first data record with offset >= want: transaction
// markers (control batches) and the records of aborted transactions are not
// data. The record's timestamp is judged by Timed.
func FirstRecord(batches iter.Seq[Batch], aborted []AbortedTransaction, want int64, readAt time.Time) Scan {
	return FirstRecords(batches, aborted, []int64{want}, readAt)[0]
}

// FirstRecords is FirstRecord for each of wants, ascending, in one pass over
// the batches: a read answering the offsets of a partition's groups would
// otherwise scan the same batches once per group.
func FirstRecords(batches iter.Seq[Batch], aborted []AbortedTransaction, wants []int64, readAt time.Time) []Scan {
	scans := make([]Scan, len(wants))
	if len(wants) == 0 {
		return scans
	}
	answered := 0
	// next is where a read for the first unanswered want goes on: past
	// every complete batch seen, none of which held its record.
	next := wants[0]
	open := openAborted(aborted)
	transactions := false
	for batch := range batches {
		if batch.Partial {
			break
		}
		transactions = transactions || batch.Control || batch.Transactional
		open.reach(batch.LastOffset)
		if batch.Control || open.skips(batch) {
			if batch.Control && batch.AbortMarker {
				open.end(batch.ProducerID)
			}
			next = max(next, batch.LastOffset+1)
			continue
		}
		if batch.LastOffset >= wants[answered] {
			for offset, ts := range batch.Records {
				for answered < len(wants) && offset >= wants[answered] {
					record := Timed(offset, ts, readAt)
					if batch.ProducerClock && record.Found == kafka.RecordTimed {
						record.ByProducer, record.Producer = true, batch.ProducerID
					}
					record.Transactional = transactions
					scans[answered] = Scan{Record: record, Found: true}
					answered++
				}
				if answered == len(wants) {
					return scans
				}
			}
		}
		next = max(next, batch.LastOffset+1)
	}
	for i := answered; i < len(wants); i++ {
		scans[i] = Scan{Next: max(next, wants[i])}
	}
	return scans
}

// Timed judges a data record's timestamp. One that no clock could have
// written gives no time: missing (old message formats, read as Go's zero
// time, or -1), before kafka.MinRecordTime, or more than kafka.MaxClockLead
// ahead of the read. Anything else is kept as the record says, for the
// caller to clamp to what it knows (internal/lag clamps to the
// interpolation table).
func Timed(offset int64, ts, readAt time.Time) kafka.RecordTimestamp {
	if ts.Before(kafka.MinRecordTime) || ts.After(readAt.Add(kafka.MaxClockLead)) {
		return kafka.RecordTimestamp{Offset: offset, Found: kafka.RecordUntimed}
	}
	return kafka.RecordTimestamp{Offset: offset, Timestamp: ts.UnixNano()}
}

// IsAbortMarker tells whether a control record's key ends its transaction
// with an abort: the key is a version (int16) and a type, 0 for abort.
func IsAbortMarker(key []byte) bool {
	return len(key) >= 4 && binary.BigEndian.Uint16(key[2:4]) == 0
}

// abortedTransactions follows, batch by batch, which producers' batches
// belong to a transaction the response lists as aborted: from the
// transaction's first offset until its abort marker.
type abortedTransactions struct {
	pending []AbortedTransaction // by first offset, not yet reached
	open    map[int64]struct{}   // producer ids inside an aborted transaction
}

func openAborted(listed []AbortedTransaction) *abortedTransactions {
	a := &abortedTransactions{pending: slices.Clone(listed), open: map[int64]struct{}{}}
	slices.SortFunc(a.pending, func(x, y AbortedTransaction) int {
		return cmp.Compare(x.FirstOffset, y.FirstOffset)
	})
	return a
}

// reach opens the aborted transactions that start at or before offset.
func (a *abortedTransactions) reach(offset int64) {
	for len(a.pending) > 0 && a.pending[0].FirstOffset <= offset {
		a.open[a.pending[0].ProducerID] = struct{}{}
		a.pending = a.pending[1:]
	}
}

// skips tells whether the batch belongs to an aborted transaction.
func (a *abortedTransactions) skips(batch Batch) bool {
	if !batch.Transactional {
		return false
	}
	_, ok := a.open[batch.ProducerID]
	return ok
}

func (a *abortedTransactions) end(producerID int64) {
	delete(a.open, producerID)
}
