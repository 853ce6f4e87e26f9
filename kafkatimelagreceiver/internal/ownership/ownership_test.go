package ownership

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// TestPartitionOfIsFNV1a pins the hash: replicas of different builds must
// place a group alike, so it may never change silently.
func TestPartitionOfIsFNV1a(t *testing.T) {
	// FNV-1a 32 of "orders-fast" is 0x8c3c721d = 2352771613 (computed
	// independently of Go's hash/fnv).
	require.Equal(t, int32(2352771613%60), PartitionOf("orders-fast", 60))
	require.Equal(t, int32(0), PartitionOf("anything", 1))
	for _, g := range []string{"", "a", "payments-stalled", "ü"} {
		p := PartitionOf(g, 7)
		require.GreaterOrEqual(t, p, int32(0))
		require.Less(t, p, int32(7))
	}
}

// TestEveryGroupHasExactlyOneOwner: whatever way the partitions are dealt
// out, each group is owned by exactly one of the holders.
func TestEveryGroupHasExactlyOneOwner(t *testing.T) {
	const count = 12
	shares := [][]int32{{0, 3, 6, 9}, {1, 4, 7, 10}, {2, 5, 8, 11}}
	owners := make([]*Owner, len(shares))
	for i, s := range shares {
		owners[i] = New(s, count)
	}
	groups := make([]string, 500)
	for i := range groups {
		groups[i] = fmt.Sprintf("group-%d", i)
	}
	total := 0
	for _, o := range owners {
		owned := o.Groups(groups)
		require.NotEmpty(t, owned, "500 groups over 12 partitions leave no share empty")
		total += len(owned)
	}
	require.Equal(t, len(groups), total)
	for _, g := range groups {
		n := 0
		for _, o := range owners {
			if o.OwnsGroup(g) {
				n++
			}
		}
		require.Equal(t, 1, n, "group %s", g)
	}
}

func TestOwnerIgnoresPartitionsOutOfRange(t *testing.T) {
	o := New([]int32{-1, 5, 99}, 3)
	for _, g := range []string{"a", "b", "c", "d"} {
		require.False(t, o.OwnsGroup(g))
	}
	require.False(t, New(nil, 0).OwnsGroup("a"), "no coordination partitions: nothing is owned")
}

// TestSplitGaugesEachPartitionOnce: a partition several groups commit on
// gets its gauges from exactly one replica, the owner of its first group by
// id, which reads that partition anyway.
func TestSplitGaugesEachPartitionOnce(t *testing.T) {
	const count = 8
	groups := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot"}
	shared := kafka.TopicPartition{Topic: "orders", Partition: 0}
	committed := map[string]kafka.Commits{}
	for i, g := range groups {
		committed[g] = kafka.CommitsOf(map[kafka.TopicPartition]int64{
			shared:                            int64(i),
			{Topic: "own-" + g, Partition: 0}: 1,
		})
	}
	// Two replicas, each with half the partitions.
	a, b := New([]int32{0, 1, 2, 3}, count), New([]int32{4, 5, 6, 7}, count)
	ownedA, gaugedA := a.Split(committed)
	ownedB, gaugedB := b.Split(committed)
	require.Equal(t, len(groups), len(ownedA)+len(ownedB))
	for tp := range gaugedA {
		require.NotContains(t, gaugedB, tp, "%v gauged twice", tp)
	}
	require.Equal(t, len(groups)+1, len(gaugedA)+len(gaugedB), "every partition with a commit is gauged once")

	var firstOwner map[string]kafka.Commits
	if a.OwnsGroup("alpha") {
		firstOwner = ownedA
		require.Contains(t, gaugedA, shared)
	} else {
		firstOwner = ownedB
		require.Contains(t, gaugedB, shared)
	}
	require.Contains(t, firstOwner["alpha"].Map(), shared, "the gauging replica reads the partition for alpha's lag")
	for g, offsets := range ownedA {
		require.True(t, a.OwnsGroup(g))
		require.Equal(t, committed[g], offsets)
	}
	require.Len(t, committed, len(groups), "Split leaves its input alone")
}

// TestSplitGaugesEachTopicOnOneReplica: groups that commit on only some of
// a topic's partitions (manual assignment) and belong to different
// replicas: the topic's partitions are all gauged by the owner of its first
// group, so its production rate is summed by one replica over all of them.
func TestSplitGaugesEachTopicOnOneReplica(t *testing.T) {
	const count = 8
	a, b := New([]int32{0, 1, 2, 3}, count), New([]int32{4, 5, 6, 7}, count)
	var onA, onB string
	for i := 0; onA == "" || onB == ""; i++ {
		g := fmt.Sprintf("group-%d", i)
		switch {
		case a.OwnsGroup(g) && onA == "":
			onA = g
		case b.OwnsGroup(g) && onB == "":
			onB = g
		}
	}
	p0, p1 := kafka.TopicPartition{Topic: "orders", Partition: 0}, kafka.TopicPartition{Topic: "orders", Partition: 1}
	committed := kafka.CommitsByGroup(map[string]map[kafka.TopicPartition]int64{onA: {p0: 1}, onB: {p1: 1}})
	_, gaugedA := a.Split(committed)
	_, gaugedB := b.Split(committed)
	both := map[kafka.TopicPartition]struct{}{p0: {}, p1: {}}
	if onA < onB {
		require.Equal(t, both, gaugedA)
		require.Empty(t, gaugedB)
	} else {
		require.Equal(t, both, gaugedB)
		require.Empty(t, gaugedA)
	}
}
