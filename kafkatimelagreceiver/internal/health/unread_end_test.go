package health

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
)

// A group whose commits were read but not all of whose end offsets were
// (its leaders unavailable, ListOffsets denied or timed out) is not judged:
// the worst status of the partitions read could understate the group's.
// Each partition read has its status; one unread has none, even when it had
// one before.
func TestPartitionsWithoutEndOffsetAreNotOK(t *testing.T) {
	tr := NewTracker(3, 0)
	noEnd := func(p int32) lag.PartitionLag {
		return lag.PartitionLag{Group: "g", TopicPartition: kafka.TopicPartition{Topic: "t", Partition: p}, Committed: 5}
	}
	withEnd := func(p int32, end int64) lag.PartitionLag {
		pl := noEnd(p)
		pl.HasEnd, pl.End, pl.Lag = true, end, end-pl.Committed
		return pl
	}
	groups, partitions := tr.observe(healthInput{groups: []string{"g"}, lags: []lag.PartitionLag{noEnd(0), noEnd(1)}})
	require.Len(t, groups, 1)
	require.False(t, groups[0].StatusKnown, "no end offset read: no status, not OK")
	for _, p := range partitions {
		require.Equal(t, StatusUnknown, p.status, "%v", p)
	}

	groups, partitions = tr.observe(healthInput{groups: []string{"g"}, lags: []lag.PartitionLag{withEnd(0, 5), noEnd(1)}})
	require.False(t, groups[0].StatusKnown, "one partition unread: not judged on the other alone")
	require.True(t, groups[0].Unjudged)
	require.Equal(t, []Status{StatusOK, StatusUnknown}, []Status{partitions[0].status, partitions[1].status})

	groups, partitions = tr.observe(healthInput{groups: []string{"g"}, lags: []lag.PartitionLag{withEnd(0, 5), withEnd(1, 5)}})
	require.True(t, groups[0].StatusKnown)
	require.Equal(t, StatusOK, groups[0].Status)

	groups, partitions = tr.observe(healthInput{groups: []string{"g"}, lags: []lag.PartitionLag{withEnd(0, 5), noEnd(1)}})
	require.False(t, groups[0].StatusKnown)
	require.Equal(t, []Status{StatusOK, StatusUnknown}, []Status{partitions[0].status, partitions[1].status},
		"a partition judged before is not judged again from its old points")
}

// A group whose commits were all deleted with their topic (or that never
// committed) has no partition behind it: no status, rather than OK.
func TestGroupWithoutPartitionsIsNotJudged(t *testing.T) {
	tr := NewTracker(3, 0)
	groups, _ := tr.observe(healthInput{groups: []string{"g"}})
	require.Len(t, groups, 1)
	require.False(t, groups[0].StatusKnown)
	require.True(t, groups[0].Unjudged)
}
