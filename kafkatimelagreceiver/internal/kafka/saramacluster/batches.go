package saramacluster

import (
	"cmp"
	"encoding/binary"
	"errors"
	"slices"
	"time"

	"github.com/IBM/sarama"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// maxDecompressedBatch bounds what one compressed record batch may inflate
// to when a record read decodes it. sarama decompresses whole batches and by
// default without bound, so anyone who can produce to a monitored topic
// could make a batch of a few kilobytes that inflates to gigabytes at the
// offset a stuck group is committed at. Legitimate batches stay far below
// it: producers cap a batch at max.message.bytes (1 MiB by default) before
// compression in most clients, and compression rarely gains more than 10x.
// A batch above it gives no timestamp (kafka.RecordUntimed).
const maxDecompressedBatch = 16 << 20

func init() {
	// sarama's bound is one variable for the whole process, read while any
	// response is decoded: set before any goroutine can decode, and only
	// ever lowered, so that a stricter bound set by another user of sarama
	// in the same collector stays.
	if sarama.MaxDecompressedBatchSize <= 0 || sarama.MaxDecompressedBatchSize > maxDecompressedBatch {
		sarama.MaxDecompressedBatchSize = maxDecompressedBatch
	}
}

// undecodable tells whether a Fetch failed on what a partition's records
// hold, rather than on the connection: the broker answered, and the same
// request would fail the same way again.
func undecodable(err error) bool {
	var decoding sarama.PacketDecodingError
	return errors.Is(err, sarama.ErrDecompressedBatchTooLarge) || errors.As(err, &decoding)
}

// readable is the offset a read_committed Fetch reads up to: the last stable
// offset from v4 on, the high watermark before.
func readable(block *sarama.FetchResponseBlock, version int16) int64 {
	if version >= 4 && block.LastStableOffset >= 0 {
		return min(block.LastStableOffset, block.HighWaterMarkOffset)
	}
	return block.HighWaterMarkOffset
}

// scan is what one partition's part of a Fetch response says from an
// offset on.
type scan struct {
	record kafka.RecordTimestamp // the first data record, when found
	found  bool
	// next is where a further read starts when nothing was found: every
	// batch below it was complete and held no data record at or after the
	// offset (only markers, aborted records or records before the offset).
	next int64
}

// firstRecordAtOrAfter finds the first data record with offset >= want:
// transaction markers (control batches) and the records of aborted
// transactions are not data. The record's timestamp is the batch's append
// time under LogAppendTime, and is judged by timed.
func firstRecordAtOrAfter(block *sarama.FetchResponseBlock, want int64, readAt time.Time) scan {
	next := want
	aborted := abortedFrom(block)
	for _, records := range block.RecordsSet {
		if records == nil {
			continue
		}
		if batch := records.RecordBatch; batch != nil {
			if batch.PartialTrailingRecord {
				break // cut off by the size limits: nothing is known past it
			}
			last := batch.FirstOffset + int64(batch.LastOffsetDelta)
			aborted.reach(last)
			if batch.Control || aborted.skips(batch) {
				if batch.Control && isAbortMarker(batch) {
					aborted.end(batch.ProducerID)
				}
				next = max(next, last+1)
				continue
			}
			if last < want {
				// A read answering several offsets of a partition scans
				// the same batches once per offset: skip those below.
				next = max(next, last+1)
				continue
			}
			for _, r := range batch.Records {
				if r == nil {
					continue
				}
				offset := batch.FirstOffset + r.OffsetDelta
				if offset < want {
					continue
				}
				ts := batch.FirstTimestamp.Add(r.TimestampDelta)
				if batch.LogAppendTime {
					ts = batch.MaxTimestamp
				}
				return scan{record: timed(offset, ts, readAt), found: true}
			}
			next = max(next, last+1)
		}
		if set := records.MsgSet; set != nil {
			for _, mb := range set.Messages {
				if mb == nil || mb.Msg == nil {
					continue
				}
				messages := mb.Messages() // a compressed wrapper's records
				if len(messages) == 0 {
					messages = []*sarama.MessageBlock{mb}
				}
				for _, m := range messages {
					if m != nil && m.Msg != nil && m.Offset >= want {
						return scan{record: timed(m.Offset, m.Msg.Timestamp, readAt), found: true}
					}
				}
				next = max(next, mb.Offset+1)
			}
			if set.PartialTrailingMessage {
				break
			}
		}
	}
	return scan{next: next}
}

// timed judges a data record's timestamp. One that no clock could have
// written gives no time: missing (old message formats, read as Go's zero
// time, or -1), before kafka.MinRecordTime, or more than kafka.MaxClockLead ahead of the
// read. Anything else is kept as the record says, for the caller to clamp to
// what it knows (internal/lag clamps to the interpolation table).
func timed(offset int64, ts, readAt time.Time) kafka.RecordTimestamp {
	if ts.Before(kafka.MinRecordTime) || ts.After(readAt.Add(kafka.MaxClockLead)) {
		return kafka.RecordTimestamp{Offset: offset, Found: kafka.RecordUntimed}
	}
	return kafka.RecordTimestamp{Offset: offset, Timestamp: ts.UnixNano()}
}

// abortedTransactions follows, batch by batch, which producers' batches
// belong to a transaction the response lists as aborted: from the
// transaction's first offset until its abort marker.
type abortedTransactions struct {
	pending []*sarama.AbortedTransaction // by first offset, not yet reached
	open    map[int64]struct{}           // producer ids inside an aborted transaction
}

func abortedFrom(block *sarama.FetchResponseBlock) *abortedTransactions {
	a := &abortedTransactions{open: map[int64]struct{}{}}
	for _, t := range block.AbortedTransactions {
		if t != nil {
			a.pending = append(a.pending, t)
		}
	}
	slices.SortFunc(a.pending, func(x, y *sarama.AbortedTransaction) int {
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
func (a *abortedTransactions) skips(batch *sarama.RecordBatch) bool {
	if !batch.IsTransactional {
		return false
	}
	_, ok := a.open[batch.ProducerID]
	return ok
}

func (a *abortedTransactions) end(producerID int64) {
	delete(a.open, producerID)
}

// isAbortMarker tells whether a control batch ends its transaction with an
// abort: its record's key is a version (int16) and a type, 0 for abort.
func isAbortMarker(batch *sarama.RecordBatch) bool {
	for _, r := range batch.Records {
		if r != nil && len(r.Key) >= 4 {
			return binary.BigEndian.Uint16(r.Key[2:4]) == 0
		}
	}
	return false
}
