package kafkatimelagreceiver

import (
	"cmp"
	"context"
	"strings"
	"time"
)

// topicPartition names one partition.
type topicPartition struct {
	topic     string
	partition int32
}

// compareTopicPartition orders by topic, then partition.
func compareTopicPartition(a, b topicPartition) int {
	if c := strings.Compare(a.topic, b.topic); c != 0 {
		return c
	}
	return cmp.Compare(a.partition, b.partition)
}

// offsetRead is the answer to one end- or start-offset read. Sent and received
// bracket the requests: the offsets were true at some instant between them.
type offsetRead struct {
	offsets  map[topicPartition]int64
	sent     time.Time
	received time.Time
}

// recordAt names the record at an offset of a partition.
type recordAt struct {
	topicPartition
	offset int64
}

// recordTimestamp is what a record-timestamp read found: the timestamp of the
// first record at or after the requested offset, and that record's offset
// (they differ when compaction or a transaction marker left a gap).
type recordTimestamp struct {
	offset    int64
	timestamp int64 // unix nanoseconds
}

// cluster is everything the receiver asks of Kafka. The rest of the receiver
// sees only this interface; sarama stays behind it. Every method batches its
// work into one request per broker (or per group coordinator) and returns what
// it could read together with an error describing what it could not, so that
// one failing broker or group degrades a scrape instead of failing it.
type cluster interface {
	// consumerGroups lists the ids of every consumer group the brokers know,
	// including groups that only hold committed offsets.
	consumerGroups(ctx context.Context) ([]string, error)
	// committedOffsets reads the committed offsets of the groups, keyed by
	// group. Partitions without a committed offset are absent.
	committedOffsets(ctx context.Context, groups []string) (map[string]map[topicPartition]int64, error)
	// describeGroups reads the state, protocol and members of the groups,
	// keyed by group; groups that could not be described are absent.
	describeGroups(ctx context.Context, groups []string) (map[string]groupDescription, error)
	// endOffsets reads the high watermark of each partition.
	endOffsets(ctx context.Context, partitions []topicPartition) (offsetRead, error)
	// startOffsets reads the log start offset of each partition.
	startOffsets(ctx context.Context, partitions []topicPartition) (offsetRead, error)
	// recordTimestamps reads the timestamp of the record at each offset.
	// Offsets below the log start or at the end have no record and are absent.
	recordTimestamps(ctx context.Context, records []recordAt) (map[recordAt]recordTimestamp, error)
	close() error
}
