package kafka

import (
	"context"
	"strings"
	"time"
)

// TopicRetention is what a topic's configuration says about deleting the
// records no one has consumed.
type TopicRetention struct {
	// Delete: the topic's cleanup.policy contains delete (it may also
	// compact).
	Delete bool
	// RetentionMs is retention.ms; -1 (or any value not above 0) keeps
	// records for ever.
	RetentionMs int64
	// RetentionBytes is retention.bytes, per partition; -1 has no bound.
	RetentionBytes int64
	// RemoteStorage is remote.storage.enable: the topic's older segments
	// are tiered to remote storage (KIP-405). retention.ms and
	// retention.bytes then bound the whole log, local and remote, which is
	// what a consumer can read; local.retention.ms and
	// local.retention.bytes bound only the copy on the brokers' disks,
	// whose deletion no consumer sees. The size a broker reports of the
	// partition (PartitionSizes) is of the local copy only.
	RemoteStorage bool
}

// TimeLimit is how long records are kept, when time deletes them.
func (r TopicRetention) TimeLimit() (time.Duration, bool) {
	if !r.Delete || r.RetentionMs <= 0 {
		return 0, false
	}
	return time.Duration(r.RetentionMs) * time.Millisecond, true
}

// SizeLimit is how many bytes of each partition are kept, when size
// deletes records (retention.bytes counts per partition).
func (r TopicRetention) SizeLimit() (int64, bool) {
	if !r.Delete || r.RetentionBytes < 0 {
		return 0, false
	}
	return r.RetentionBytes, true
}

// CleanupPolicyDeletes tells whether a cleanup.policy value ("delete",
// "compact", "compact,delete", in any case and spacing) deletes by
// retention.
func CleanupPolicyDeletes(policy string) bool {
	for p := range strings.SplitSeq(policy, ",") {
		if strings.EqualFold(strings.TrimSpace(p), "delete") {
			return true
		}
	}
	return false
}

// RetentionReader reads the retention settings of topics.
type RetentionReader interface {
	// TopicRetention reads the retention settings of each topic, keyed by
	// topic; topics whose configuration could not be read are absent and
	// named in the error (a TopicError each).
	TopicRetention(ctx context.Context, topics []string) (map[string]TopicRetention, error)
}

// SizeReader reads the sizes of partitions' logs.
type SizeReader interface {
	// PartitionSizes reads the size in bytes of each partition's log on its
	// leader's disks (DescribeLogDirs), keyed by partition: one request per
	// leader, carrying the partitions it leads. Partitions whose size could
	// not be read are absent and named in the error (a TopicError per topic
	// and broker); DescribeLogDirs needs Describe on the cluster, and a
	// principal refused it gets an AuthorizationError naming no topic.
	PartitionSizes(ctx context.Context, partitions []TopicPartition) (map[TopicPartition]int64, error)
}
