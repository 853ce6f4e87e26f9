package dating

import (
	"slices"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/clocks"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// What the time index answers, turned into records as a read gives them.

// indexRead is a record the time index dated: the record at offset,
// stamped millis, answering wanted. Its stamp is still in milliseconds'
// range: Date checks it (timedInMillis) before it is converted.
func indexRead(wanted, offset, millis int64) kafka.RecordRead {
	return kafka.RecordRead{Wanted: wanted, RecordTimestamp: kafka.RecordTimestamp{
		Offset: offset, Timestamp: millis, Found: kafka.RecordTimed,
		ByProducer: true, Producer: clocks.TimeIndexClock,
	}}
}

// timedInMillis turns the index's answers (stamps in milliseconds) into
// records as a read gives them: a stamp that gives no time when read at
// readAt (kafka.MillisGiveTime: before Kafka, a day ahead, past 2262, in
// microseconds) dates nothing and measures no clock, and is refused in
// milliseconds, before a conversion to nanoseconds could wrap it; the
// others in nanoseconds.
func timedInMillis(found kafka.RecordReads, readAt time.Time) {
	for _, reads := range found {
		for i := range reads {
			rec := &reads[i].RecordTimestamp
			if !kafka.MillisGiveTime(rec.Timestamp, readAt) {
				*rec = kafka.RecordTimestamp{Offset: rec.Offset, Found: kafka.RecordUntimed}
				continue
			}
			rec.Timestamp *= int64(time.Millisecond)
		}
	}
}

// unanswered are the partitions of wanted whose offsets found does not
// answer: their records are gone (retention deleted them), sorted.
func unanswered(wanted []kafka.PartitionOffsets, found kafka.RecordReads) []kafka.TopicPartition {
	var gone []kafka.TopicPartition
	for _, w := range wanted {
		if !w.Answered(found[w.TopicPartition]) {
			gone = append(gone, w.TopicPartition)
		}
	}
	kafka.SortPartitions(gone)
	return gone
}

// stampedAhead are the records of dated whose date from the time index is
// no time or after the scrape's end-offset read (at): the latest stamp up
// to them is a stamp ahead of its clock, which hides every record after it
// from the index (it answers the first record stamped at or after a time)
// until the clock reaches it. Only a read dates them, by their own stamps.
func stampedAhead(dated kafka.RecordReads, at int64) []kafka.PartitionOffsets {
	var out []kafka.PartitionOffsets
	for tp, reads := range dated {
		w := kafka.PartitionOffsets{TopicPartition: tp}
		for _, r := range reads {
			if r.Found == kafka.RecordUntimed || r.Timestamp > at {
				w.Offsets = append(w.Offsets, r.Wanted)
			}
		}
		if len(w.Offsets) > 0 {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b kafka.PartitionOffsets) int { return a.TopicPartition.Compare(b.TopicPartition) })
	return out
}
