package kafka_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// TestCommitsSort: whatever order the commits arrive in, with every
// partition of a topic or some of them, repeated or at the int32 limits,
// Sort leaves them in (topic, partition) order and loses none.
func TestCommitsSort(t *testing.T) {
	commit := func(topic string, p int32, offset int64) kafka.Commit {
		return kafka.Commit{TopicPartition: kafka.TopicPartition{Topic: topic, Partition: p}, Offset: offset}
	}
	for _, tt := range []struct {
		name    string
		commits kafka.Commits
	}{
		{"empty", nil},
		{"one", kafka.Commits{commit("t", 3, 1)}},
		{"every partition, reversed", kafka.Commits{commit("t", 3, 3), commit("t", 2, 2), commit("t", 1, 1), commit("t", 0, 0)}},
		{"dense from 5", kafka.Commits{commit("t", 6, 6), commit("t", 5, 5), commit("t", 7, 7)}},
		{"some partitions", kafka.Commits{commit("t", 9, 9), commit("t", 0, 0), commit("t", 4, 4)}},
		{"topics interleaved", kafka.Commits{commit("u", 1, 1), commit("t", 1, 1), commit("u", 0, 0), commit("t", 0, 0)}},
		{"a partition twice, as dense as a permutation", kafka.Commits{commit("t", 0, 1), commit("t", 0, 2), commit("t", 2, 3)}},
		{"a partition twice, found after a swap", kafka.Commits{commit("t", 2, 1), commit("t", 0, 2), commit("t", 0, 3)}},
		{"a partition twice, with others placed", kafka.Commits{commit("t", 3, 1), commit("t", 1, 2), commit("t", 0, 3), commit("t", 1, 4)}},
		{"int32 limits", kafka.Commits{commit("t", math.MaxInt32, 1), commit("t", math.MinInt32, 2), commit("t", -1, 3), commit("t", 0, 4)}},
		{"limits, dense", kafka.Commits{commit("t", math.MaxInt32, 1), commit("t", math.MaxInt32-1, 2)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := slices.Clone(tt.commits)
			got.Sort()
			require.True(t, slices.IsSortedFunc(got, func(a, b kafka.Commit) int { return a.Compare(b.TopicPartition) }), "%v", got)
			want := slices.Clone(tt.commits)
			slices.SortStableFunc(want, func(a, b kafka.Commit) int { return a.Compare(b.TopicPartition) })
			require.ElementsMatch(t, want, got, "nothing lost or repeated")
		})
	}
}

func TestCommitsOf(t *testing.T) {
	offsets := map[kafka.TopicPartition]int64{}
	for p := range int32(100) {
		offsets[kafka.TopicPartition{Topic: fmt.Sprint("t", p%3), Partition: p}] = int64(p)
	}
	commits := kafka.CommitsOf(offsets)
	require.Len(t, commits, 100)
	require.True(t, slices.IsSortedFunc(commits, func(a, b kafka.Commit) int { return a.Compare(b.TopicPartition) }))
	require.Equal(t, offsets, commits.Map())
}
