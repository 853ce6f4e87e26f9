package saramatimes

import (
	"errors"
	"iter"
	"time"

	"github.com/IBM/sarama"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/batchguard"
)

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

// firstRecordsAtOrAfter finds, for each of wants (ascending), the first
// data record of a partition's part of a Fetch response with offset >= it
// (batchguard.FirstRecords).
func firstRecordsAtOrAfter(block *sarama.FetchResponseBlock, wants []int64, readAt time.Time) []batchguard.Scan {
	aborted := make([]batchguard.AbortedTransaction, 0, len(block.AbortedTransactions))
	for _, t := range block.AbortedTransactions {
		if t != nil {
			aborted = append(aborted, batchguard.AbortedTransaction{ProducerID: t.ProducerID, FirstOffset: t.FirstOffset})
		}
	}
	return batchguard.FirstRecords(batchesOf(block), aborted, wants, readAt)
}

// batchesOf is the block's record batches and old-format entries, as
// batchguard reads them.
func batchesOf(block *sarama.FetchResponseBlock) iter.Seq[batchguard.Batch] {
	return func(yield func(batchguard.Batch) bool) {
		for _, records := range block.RecordsSet {
			if records == nil {
				continue
			}
			if batch := records.RecordBatch; batch != nil && !yield(recordBatch(batch)) {
				return
			}
			if set := records.MsgSet; set != nil {
				for _, mb := range set.Messages {
					if mb != nil && mb.Msg != nil && !yield(messageEntry(mb)) {
						return
					}
				}
				if set.PartialTrailingMessage && !yield(batchguard.Batch{Partial: true}) {
					return
				}
			}
		}
	}
}

func recordBatch(batch *sarama.RecordBatch) batchguard.Batch {
	b := batchguard.Batch{
		LastOffset:    batch.FirstOffset + int64(batch.LastOffsetDelta),
		Partial:       batch.PartialTrailingRecord,
		Control:       batch.Control,
		Transactional: batch.IsTransactional,
		ProducerID:    batch.ProducerID,
		ProducerClock: !batch.LogAppendTime && batch.ProducerID >= 0,
		Records: func(yield func(int64, time.Time) bool) {
			for _, r := range batch.Records {
				if r == nil {
					continue
				}
				ts := batch.FirstTimestamp.Add(r.TimestampDelta)
				if batch.LogAppendTime {
					ts = batch.MaxTimestamp
				}
				if !yield(batch.FirstOffset+r.OffsetDelta, ts) {
					return
				}
			}
		},
	}
	if batch.Control {
		for _, r := range batch.Records {
			if r != nil && len(r.Key) >= 4 {
				b.AbortMarker = batchguard.IsAbortMarker(r.Key)
				break
			}
		}
	}
	return b
}

// messageEntry is an old-format message, or a compressed wrapper's
// messages.
func messageEntry(mb *sarama.MessageBlock) batchguard.Batch {
	return batchguard.Batch{
		LastOffset: mb.Offset,
		Records: func(yield func(int64, time.Time) bool) {
			messages := mb.Messages() // a compressed wrapper's records
			if len(messages) == 0 {
				messages = []*sarama.MessageBlock{mb}
			}
			for _, m := range messages {
				if m != nil && m.Msg != nil && !yield(m.Offset, m.Msg.Timestamp) {
					return
				}
			}
		},
	}
}
