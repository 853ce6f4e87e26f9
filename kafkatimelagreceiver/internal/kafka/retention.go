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
}

// TimeLimit is how long records are kept, when time deletes them.
func (r TopicRetention) TimeLimit() (time.Duration, bool) {
	if !r.Delete || r.RetentionMs <= 0 {
		return 0, false
	}
	return time.Duration(r.RetentionMs) * time.Millisecond, true
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
