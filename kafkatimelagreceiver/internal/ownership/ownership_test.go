package ownership

import (
	"cmp"
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

// twoReplicas are two replicas holding half the coordination partitions
// each.
func twoReplicas() [2]*Owner {
	const count = 8
	return [2]*Owner{New([]int32{0, 1, 2, 3}, count), New([]int32{4, 5, 6, 7}, count)}
}

// TestSplitDividesTopics: each topic's partitions, every group's commits on
// them and their gauges go to exactly one replica, the topic's owner, and
// together the replicas cover every commit.
func TestSplitDividesTopics(t *testing.T) {
	replicas := twoReplicas()
	committed := map[string]kafka.Commits{}
	for g := range 20 {
		offsets := map[kafka.TopicPartition]int64{}
		for topic := range 10 {
			for p := range int32(3) {
				offsets[kafka.TopicPartition{Topic: fmt.Sprintf("topic-%d", topic), Partition: p}] = int64(g)
			}
		}
		committed[fmt.Sprintf("group-%d", g)] = kafka.CommitsOf(offsets)
	}
	shares := [2]Share{replicas[0].Split(committed, nil), replicas[1].Split(committed, nil)}
	for i, s := range shares {
		require.NotEmpty(t, s.Gauged, "10 topics over 8 partitions leave neither replica without one")
		for tp := range s.Gauged {
			require.True(t, replicas[i].OwnsTopic(tp.Topic))
			require.NotContains(t, shares[1-i].Gauged, tp, "%v gauged twice", tp)
		}
	}
	require.Len(t, shares[0].Gauged, 30-len(shares[1].Gauged), "every partition with a commit is gauged once")
	// Every (group, partition) commit on a topic is computed by its owner
	// and reported once; a group's own series go to its home topic's owner.
	for g, commits := range committed {
		home := 0
		for _, s := range shares {
			if s.Home[g] {
				home++
				require.Equal(t, commits, s.Committed[g], "the home replica judges %s over all its partitions", g)
			}
		}
		require.Equal(t, 1, home, "group %s has one home", g)
		for _, c := range commits {
			reporting := 0
			for i, s := range shares {
				if replicas[i].OwnsTopic(c.Topic) {
					reporting++
					require.Contains(t, s.Committed[g], c)
				}
			}
			require.Equal(t, 1, reporting, "%s on %v", g, c.TopicPartition)
		}
	}
	require.Len(t, committed, 20, "Split leaves its input alone")
}

// TestSplitKeepsAGroupOfOneTopicWithIt: a group reading one topic (most do)
// is reported whole by that topic's owner, which reads nothing of the
// other replica's topics for it; a group reading several goes with the
// topic it reads the most partitions of.
func TestSplitKeepsAGroupOfOneTopicWithIt(t *testing.T) {
	replicas := twoReplicas()
	var mine, theirs string
	for i := 0; mine == "" || theirs == ""; i++ {
		topic := fmt.Sprintf("topic-%d", i)
		if replicas[0].OwnsTopic(topic) {
			mine = cmp.Or(mine, topic)
		} else {
			theirs = cmp.Or(theirs, topic)
		}
	}
	tp := func(topic string, p int32) kafka.TopicPartition {
		return kafka.TopicPartition{Topic: topic, Partition: p}
	}
	committed := kafka.CommitsByGroup(map[string]map[kafka.TopicPartition]int64{
		"single": {tp(mine, 0): 1, tp(mine, 1): 1},
		"mostly": {tp(theirs, 0): 1, tp(theirs, 1): 1, tp(mine, 0): 1},
	})
	a, b := replicas[0].Split(committed, nil), replicas[1].Split(committed, nil)
	require.Equal(t, map[string]bool{"single": true}, a.Home)
	require.Equal(t, map[string]bool{"mostly": true}, b.Home)
	require.Equal(t, committed["single"], a.Committed["single"])
	require.NotContains(t, b.Committed, "single", "nothing of a group on another replica's topic only")
	require.Equal(t, kafka.Commits{{TopicPartition: tp(mine, 0), Offset: 1}}, a.Committed["mostly"], "its commits on this replica's topic")
	require.Equal(t, committed["mostly"], b.Committed["mostly"], "its home replica reads all its partitions for its health")
	require.Equal(t, mine, HomeTopic(committed["single"]))
	require.Equal(t, theirs, HomeTopic(committed["mostly"]))
	require.Empty(t, HomeTopic(nil))
	tied := kafka.CommitsOf(map[kafka.TopicPartition]int64{tp("b", 0): 1, tp("a", 3): 1})
	require.Equal(t, "a", HomeTopic(tied), "a tie goes to the first topic by name")
}
