package read

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/ownership"
)

// commitsOnCluster is a cluster that can read some partitions only.
type commitsOnCluster struct{ kafka.Cluster }

func (commitsOnCluster) CommittedOffsetsOn(context.Context, map[string][]kafka.TopicPartition) (map[string]kafka.Commits, error) {
	return nil, nil
}

// TestWholeReadsRotate: a replica holding half the coordination partitions
// reads the groups it reports whole every scrape, a group never read whole
// at once, and each other group on its own topics' partitions only (none
// there: not asked), but whole once in every WholeCommitsEvery(0.5) = 20
// scrapes, a twentieth of them each scrape.
func TestWholeReadsRotate(t *testing.T) {
	owner := ownership.New([]int32{0, 1, 2, 3}, 8)
	require.InDelta(t, 0.5, owner.Share(), 1e-9)
	require.Equal(t, uint64(20), WholeCommitsEvery(owner.Share()))
	require.Equal(t, uint64(40), WholeCommitsEvery(0.25))
	var mine, theirs string
	for i := 0; mine == "" || theirs == ""; i++ {
		if topic := fmt.Sprintf("topic-%d", i); owner.OwnsTopic(topic) {
			mine = topic
		} else {
			theirs = topic
		}
	}
	tp := func(topic string, p int32) kafka.TopicPartition {
		return kafka.TopicPartition{Topic: topic, Partition: p}
	}
	committed := map[string]kafka.Commits{}
	var groups []string
	for i := range 100 {
		g := fmt.Sprintf("group-%03d", i)
		groups = append(groups, g)
		switch i % 3 {
		case 0: // reported here
			committed[g] = kafka.Commits{{TopicPartition: tp(mine, 0)}, {TopicPartition: tp(mine, 1)}}
		case 1: // elsewhere, one partition here
			committed[g] = kafka.Commits{{TopicPartition: tp(mine, 0)}, {TopicPartition: tp(theirs, 0)}, {TopicPartition: tp(theirs, 1)}}
		default: // elsewhere only
			committed[g] = kafka.Commits{{TopicPartition: tp(theirs, 0)}}
		}
	}
	var k groupCommits
	cluster := commitsOnCluster{}
	on, partial := k.asks(owner, groups, cluster)
	require.Len(t, on, len(groups), "never read whole: every group whole")
	require.Empty(t, partial)
	k.learn(groups, committed, partial)
	wholes := map[string]int{}
	for range 20 {
		on, partial = k.asks(owner, groups, cluster)
		for i, g := range groups {
			parts, asked := on[g]
			switch {
			case asked && parts == nil:
				wholes[g]++
				require.False(t, partial[g])
			case i%3 == 0:
				t.Fatalf("%s, reported here, not read whole", g)
			case i%3 == 1:
				require.Equal(t, []kafka.TopicPartition{tp(mine, 0)}, parts, g)
				require.True(t, partial[g])
			default:
				require.False(t, asked, "%s has no partition here", g)
				require.True(t, partial[g])
			}
		}
	}
	for i, g := range groups {
		want := 1
		if i%3 == 0 {
			want = 20
		}
		require.Equal(t, want, wholes[g], g)
	}
	require.Nil(t, func() map[string][]kafka.TopicPartition { on, _ := k.asks(nil, groups, cluster); return on }(), "without coordination every group is read whole")
}
