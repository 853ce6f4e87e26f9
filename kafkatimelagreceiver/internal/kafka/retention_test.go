package kafka

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCleanupPolicyDeletes(t *testing.T) {
	for policy, want := range map[string]bool{
		"delete": true, "compact": false, "compact,delete": true, "delete,compact": true,
		" Compact , DELETE ": true, "": false, "deleted": false,
	} {
		require.Equal(t, want, CleanupPolicyDeletes(policy), "%q", policy)
	}
}

func TestTimeLimit(t *testing.T) {
	limit, ok := TopicRetention{Delete: true, RetentionMs: 3_600_000}.TimeLimit()
	require.True(t, ok)
	require.Equal(t, time.Hour, limit)
	for _, r := range []TopicRetention{
		{Delete: false, RetentionMs: 3_600_000}, // compact only
		{Delete: true, RetentionMs: -1},         // kept for ever
	} {
		_, ok := r.TimeLimit()
		require.False(t, ok, "%+v", r)
	}
	// Kafka keeps records for ever only below 0: 0 deletes every segment
	// but the active one at the next retention check.
	limit, ok = TopicRetention{Delete: true, RetentionMs: 0}.TimeLimit()
	require.True(t, ok, "retention.ms 0 is a time limit")
	require.Zero(t, limit)
}

func TestSizeLimit(t *testing.T) {
	limit, ok := TopicRetention{Delete: true, RetentionBytes: 1 << 30}.SizeLimit()
	require.True(t, ok)
	require.Equal(t, int64(1<<30), limit)
	limit, ok = TopicRetention{Delete: true, RetentionBytes: 0}.SizeLimit()
	require.True(t, ok, "0 is a bound: records go at the next retention check")
	require.Zero(t, limit)
	for _, r := range []TopicRetention{
		{Delete: false, RetentionBytes: 1 << 30}, // compact only
		{Delete: true, RetentionBytes: -1},       // no bound
	} {
		_, ok := r.SizeLimit()
		require.False(t, ok, "%+v", r)
	}
}
