package kafka

import (
	"context"
	"strings"
	"time"
)

// TopicRetention is what a topic's configuration says about deleting the
// records no one has consumed, and about what its records' timestamps are.
type TopicRetention struct {
	// Delete: the topic's cleanup.policy contains delete (it may also
	// compact).
	Delete bool
	// Compact: the topic's cleanup.policy contains compact. The log cleaner
	// removes records whose key was written again, so the offset a group
	// committed may hold no record: its next record is a later one.
	Compact bool
	// RetentionMs is retention.ms; below 0 (-1) keeps records for ever, and
	// 0 deletes every segment but the active one at the next retention
	// check.
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
	// LogAppendTime: message.timestamp.type is LogAppendTime, and every
	// record's timestamp is the time its leader appended it.
	LogAppendTime bool
	// StampBoundMs is the larger of message.timestamp.before.max.ms and
	// message.timestamp.after.max.ms (KIP-937) where both are below a
	// year: the broker refuses a record stamped further than that before
	// or after its append. 0: nothing bounds it (Kafka's default for
	// before.max.ms is unbounded).
	StampBoundMs int64
}

// StampsWithin is how far apart a record's timestamp and its append can be
// on the topic, as its configuration proves; not ok when nothing bounds
// it. Under LogAppendTime they are the same.
func (r TopicRetention) StampsWithin() (time.Duration, bool) {
	switch {
	case r.LogAppendTime:
		return 0, true
	case r.StampBoundMs > 0:
		return time.Duration(r.StampBoundMs) * time.Millisecond, true
	}
	return 0, false
}

// StampBound is TopicRetention.StampBoundMs of the two configs, in
// milliseconds.
func StampBound(beforeMaxMs, afterMaxMs int64) int64 {
	const yearMs = 365 * 24 * 3600 * 1000
	far := max(beforeMaxMs, afterMaxMs)
	if far >= yearMs {
		return 0
	}
	return max(far, 1)
}

// TimeLimit is how long records are kept, when time deletes them.
func (r TopicRetention) TimeLimit() (time.Duration, bool) {
	if !r.Delete || r.RetentionMs < 0 {
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
	return cleanupPolicyHas(policy, "delete")
}

// CleanupPolicyCompacts tells whether a cleanup.policy value compacts.
func CleanupPolicyCompacts(policy string) bool {
	return cleanupPolicyHas(policy, "compact")
}

func cleanupPolicyHas(policy, want string) bool {
	for p := range strings.SplitSeq(policy, ",") {
		if strings.EqualFold(strings.TrimSpace(p), want) {
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
