// Package kafka is what the receiver knows of Kafka: the Cluster interface it
// asks through, the values that cross it and the typed errors it returns. It
// imports no Kafka client; saramacluster implements Cluster with sarama.
package kafka

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"
)

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Compare orders by topic, then partition.
func (tp TopicPartition) Compare(other TopicPartition) int {
	if c := strings.Compare(tp.Topic, other.Topic); c != 0 {
		return c
	}
	return cmp.Compare(tp.Partition, other.Partition)
}

// SortPartitions sorts by (topic, partition).
func SortPartitions(tps []TopicPartition) {
	slices.SortFunc(tps, TopicPartition.Compare)
}

// OffsetRead is the answer to one end- or start-offset read. Sent and
// Received bracket the requests: the offsets were true at some instant
// between them.
type OffsetRead struct {
	Offsets map[TopicPartition]int64
	// Unknown are the partitions the cluster said it does not have (their
	// topic was deleted, or never had that many partitions).
	Unknown  []TopicPartition
	Sent     time.Time
	Received time.Time
	// Retries are the partitions of Offsets read again, from a new leader,
	// after an earlier request of the same call found their leader moved:
	// their offsets were true between the retry's Sent and Received.
	Retries []Retry
}

// Retry is one round of an OffsetRead asked again of new leaders.
type Retry struct {
	Partitions []TopicPartition
	Sent       time.Time
	Received   time.Time
}

// Split returns the read as reads of their own times: the partitions read
// at once, then those of each retry.
func (r OffsetRead) Split() (first OffsetRead, retries []OffsetRead) {
	if len(r.Retries) == 0 {
		return r, nil
	}
	first = OffsetRead{Offsets: make(map[TopicPartition]int64, len(r.Offsets)), Unknown: r.Unknown, Sent: r.Sent, Received: r.Received}
	for tp, offset := range r.Offsets {
		first.Offsets[tp] = offset
	}
	for _, retry := range r.Retries {
		read := OffsetRead{Offsets: make(map[TopicPartition]int64, len(retry.Partitions)), Sent: retry.Sent, Received: retry.Received}
		for _, tp := range retry.Partitions {
			read.Offsets[tp] = r.Offsets[tp]
			delete(first.Offsets, tp)
		}
		retries = append(retries, read)
	}
	return first, retries
}

// PartitionOffsets are offsets of one partition to read the records at,
// ascending and distinct.
type PartitionOffsets struct {
	TopicPartition
	Offsets []int64
	// Near are offsets answered only where the batches read for Offsets
	// hold them: they cost no read of their own. Ascending, distinct.
	Near []int64
}

// Answered tells whether reads answer each of w's Offsets (Near aside).
func (w PartitionOffsets) Answered(reads []RecordRead) bool {
	n := 0
	for _, read := range reads {
		if _, ok := slices.BinarySearch(w.Offsets, read.Wanted); ok {
			n++
		}
	}
	return n >= len(w.Offsets)
}

// RecordRead is what a record-timestamp read found of the record at Wanted.
type RecordRead struct {
	Wanted int64
	RecordTimestamp
}

// RecordReads are what a record-timestamp read found, by partition: one
// RecordRead for each offset answered. A read of a busy cluster answers
// hundreds of thousands of offsets: kept by partition, each is found with
// its partition's, not hashed one by one.
type RecordReads map[TopicPartition][]RecordRead

// RecordTimestamp is what a record-timestamp read found from the requested
// offset on: the first data record (transaction markers and records of
// aborted transactions are not data: a read_committed consumer never sees
// them) and its timestamp, or that there is none before a given offset.
// The flags follow the numbers, so that it is 32 bytes: the record cache
// keeps one per record it dated.
type RecordTimestamp struct {
	// Offset is the offset of the first data record at or after the one
	// asked for (they differ when compaction, transaction markers or aborted
	// transactions left a gap); for RecordNone, the offset up to which the
	// read found no data record.
	Offset int64
	// Timestamp is the record's timestamp in unix nanoseconds, for
	// RecordTimed only.
	Timestamp int64
	// Producer is the ID of the producer whose clock stamped Timestamp,
	// when ByProducer.
	Producer int64
	Found    RecordFound
	// ByProducer tells that Timestamp is the clock of the producer whose ID
	// is Producer (an idempotent or transactional producer's batch stamped
	// with CreateTime): that producer's records share its clock's error,
	// which the tables can measure (recordcache.Cache). It is false for
	// timestamps the broker wrote (LogAppendTime) and batches of producers
	// without an ID.
	ByProducer bool
	// Transactional tells that the batches read up to the record held a
	// transaction's batch or marker: the partition carries markers, which
	// the brokers' time index does not tell from data.
	Transactional bool
}

// RecordFound says what a record-timestamp read found.
type RecordFound uint8

const (
	// RecordTimed: a data record with a timestamp some clock could have
	// written.
	RecordTimed RecordFound = iota
	// RecordUntimed: a data record that gives no time: its timestamp is
	// missing, before MinRecordTime or far ahead of the read (MaxClockLead), or
	// its batch could not be read (too large once decompressed, corrupt).
	RecordUntimed
	// RecordNone: no data record from the offset asked for up to Offset,
	// only transaction markers and aborted records. Offset is the last
	// stable offset when the read was made; a group committed there has
	// nothing left to consume up to it.
	RecordNone
)

// MaxClockLead is how far ahead of the moment it was read a record's
// timestamp may be and still count as written by a clock. Beyond it (a
// clock years ahead, a corrupt value) the record gives no time. Nearer
// leads are clamped by what the tables prove (internal/lag).
const MaxClockLead = 24 * time.Hour

// MinRecordTime is the earliest record timestamp that gives a time: Kafka
// did not exist before it, so an earlier CreateTime was chosen by a
// producer (or is garbage), not written by a clock appending the record.
var MinRecordTime = time.Date(2011, time.January, 1, 0, 0, 0, 0, time.UTC)

// MillisGiveTime tells whether a timestamp of ms unix milliseconds, read
// at readAt, gives a time: not before MinRecordTime, nor more than
// MaxClockLead ahead of the read. It compares milliseconds, so that a stamp
// past the year 2262 (or in microseconds, a producer's bug) is refused
// before any conversion to nanoseconds could wrap it.
func MillisGiveTime(ms int64, readAt time.Time) bool {
	return ms >= MinRecordTime.UnixMilli() && ms <= readAt.Add(MaxClockLead).UnixMilli()
}

// Cluster is everything the receiver asks of Kafka.
//
// The contract every implementation keeps:
//   - Work is batched: one request per broker (leader or group coordinator)
//     per call, whatever the number of groups or partitions, except where a
//     method says otherwise.
//   - Every method returns what it could read together with an error that
//     says what it could not, so that one failing broker or group degrades a
//     scrape instead of failing it. The error is an Errors of per-item errors
//     where items can be told apart: a GroupError or TopicError names the
//     group or topic, a PartitionError the group and partition of a group's
//     offset that alone could not be read (its other partitions were), and
//     each wraps an AuthorizationError when an ACL refused it (see Denials).
//   - Every network call honours ctx and a request deadline of its own, and
//     no lock is held across one.
//   - Connecting is lazy: a cluster that is down fails calls, not creation.
type Cluster interface {
	// ConsumerGroups lists the ids of every consumer group the brokers know,
	// sorted, including groups that only hold committed offsets.
	ConsumerGroups(ctx context.Context) ([]string, error)
	// CommittedOffsets reads the committed offsets of the groups, keyed by
	// group. Partitions without a committed offset are absent; so are groups
	// whose read failed, and partitions whose offset the coordinator could
	// not give (a PartitionError each).
	CommittedOffsets(ctx context.Context, groups []string) (map[string]Commits, error)
	// DescribeGroups reads the state, protocol and members of the groups,
	// keyed by group; groups that could not be described are absent.
	DescribeGroups(ctx context.Context, groups []string) (map[string]GroupDescription, error)
	// EndOffsets reads the high watermark of each partition.
	EndOffsets(ctx context.Context, partitions []TopicPartition) (OffsetRead, error)
	// StartOffsets reads the log start offset of each partition.
	StartOffsets(ctx context.Context, partitions []TopicPartition) (OffsetRead, error)
	// StableOffsets reads the last stable offset of each partition: the
	// end of what a read_committed consumer can be given (the first offset
	// of the oldest transaction still open, else the high watermark).
	StableOffsets(ctx context.Context, partitions []TopicPartition) (OffsetRead, error)
	Identifier
	// RecordTimestamps reads the timestamp of the record at each offset of
	// each partition: one request per leader per round, a round holding at
	// most one offset per partition. Offsets below the log start or at the
	// end have no record and are not answered. Reads isolate what they
	// cannot decode: a batch too large once decompressed, or corrupt, makes
	// its partition's answer RecordUntimed (and an error naming it), not the
	// whole request's. Near offsets are answered only from the batches
	// read for the others, with no read of their own.
	RecordTimestamps(ctx context.Context, wanted []PartitionOffsets) (RecordReads, error)
	// TimestampOffsets looks each time of each partition up in its
	// broker's time index (ListOffsets by timestamp, read_uncommitted): a
	// TimePoint per distinct time, no record batch read. A request carries
	// one time per partition, so a call is rounds of one request per leader,
	// a round asking each partition's lowest time not answered yet; an
	// answer also answers the partition's higher times up to its record's
	// timestamp (the same record is first for them), and a time found
	// beyond the end answers every higher one. Partitions whose leader moved
	// are asked again within the round, as EndOffsets does. A negative time
	// (not asked; the partition's other times are), an unknown or forbidden
	// partition, a broker that cannot search by timestamp (ListOffsets v0,
	// a topic of the v0 message format) are errors naming the topic; a
	// partition that fails keeps the points its earlier rounds answered.
	TimestampOffsets(ctx context.Context, asks []PartitionTimes) (TimePoints, error)
	RetentionReader
	SizeReader
	// Close ends every connection; later calls fail.
	Close() error
}

// OffsetReader is the part of Cluster the sampler reads through: partition
// offsets, and the identities that tell whose offsets they are.
type OffsetReader interface {
	EndOffsets(ctx context.Context, partitions []TopicPartition) (OffsetRead, error)
	StartOffsets(ctx context.Context, partitions []TopicPartition) (OffsetRead, error)
	Identifier
}

// RequestObserver is told of every request sent to a broker, by Kafka API
// name, with its transport error (nil when the broker answered), and of the
// bytes of every response read.
type RequestObserver interface {
	Request(ctx context.Context, api string, err error)
	// ResponseBytes is told the size on the wire of each response read from
	// a broker (its 4-byte size and body, as sent: compressed batches
	// compressed; TLS excluded), by the Kafka API name of its request. It
	// sees the requests the clients send on their own too (ApiVersions,
	// Metadata refreshes, FindCoordinator, SASL); it is called from the
	// connections' reads, so it must not block.
	ResponseBytes(api string, bytes int)
}
