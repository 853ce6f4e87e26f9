package kafka

// PartitionTimes are the times to look a partition's records up by, in its
// broker's time index (ListOffsets by timestamp).
type PartitionTimes struct {
	TopicPartition
	// Millis are unix milliseconds, the resolution of Kafka's timestamps,
	// each 0 or later (Kafka gives negative ones special meanings). Order
	// and repeats do not matter.
	Millis []int64
}

// TimePoint is what a partition's time index answers for one time: the
// first record, in offset order from the log start, whose timestamp is at
// or after AtMillis, with that record's own timestamp. It is an exact fact
// of the log: the record at Offset carries TimestampMillis, and every record
// from the log start up to Offset (excluded) carries an earlier timestamp,
// whatever their order (producers' CreateTime can go back and forth).
//
// The record may be any record of the log: a data record, a transaction
// marker (stamped by the transaction coordinator's clock when it wrote the
// marker), a record of an aborted transaction, or of one still open. The
// answer does not say which, nor whose clock stamped it: under
// message.timestamp.type=LogAppendTime every timestamp is the broker's
// append time; under CreateTime it is what the producer set.
type TimePoint struct {
	// AtMillis is the time asked for, in unix milliseconds.
	AtMillis int64
	// Found is false when no record below the high watermark carried a
	// timestamp at or after AtMillis when the broker answered (every record
	// then was stamped earlier; records appended since may not be). Offset
	// and TimestampMillis are then -1. A broker also answers so, rarely,
	// when the log start was moved (DeleteRecords) past every such record
	// of the first log segment that holds one: it does not look further.
	Found bool
	// Offset is the record's offset, at or after the log start and below
	// the high watermark.
	Offset int64
	// TimestampMillis is the record's timestamp in unix milliseconds, at or
	// after AtMillis.
	TimestampMillis int64
}

// TimePoints are the answers of a time-index read, by partition: one
// TimePoint per distinct time asked, ascending by AtMillis. A partition
// whose read failed part way keeps the points answered before, and the
// error names it.
type TimePoints map[TopicPartition][]TimePoint
