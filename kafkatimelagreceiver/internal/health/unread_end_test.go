package health

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
)

// A group whose commits were read but none of whose end offsets were (its
// leaders unavailable, ListOffsets denied or timed out) has no lag: nothing
// says it is OK. Its status is unknown, and so is each partition's that
// never had an end offset, until one is read; a partition that had one
// keeps the status its window shows.
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
	require.True(t, groups[0].StatusKnown)
	require.Equal(t, StatusOK, groups[0].Status, "judged on the partition that was read")
	require.Equal(t, []Status{StatusOK, StatusUnknown}, []Status{partitions[0].status, partitions[1].status})
}
