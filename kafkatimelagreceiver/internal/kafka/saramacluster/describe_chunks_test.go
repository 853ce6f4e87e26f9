package saramacluster

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/kfaketest"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// TestCoordinatorOfManyGroupsIsDescribedInChunks: a coordinator's groups
// are described in requests of at most maxGroupsPerDescribe groups, and
// every group is answered.
func TestCoordinatorOfManyGroupsIsDescribedInChunks(t *testing.T) {
	const groups = 250
	require.Greater(t, groups, 2*maxGroupsPerDescribe, "the test needs more than two chunks")
	k := kfaketest.New(t, 1, nil)
	k.CreateTopic("orders", 1)
	names := make([]string, groups)
	for i := range names {
		names[i] = fmt.Sprintf("group-%03d", i)
		k.Commit(names[i], "orders", map[int32]int64{0: int64(i)})
	}
	c, err := New(testSettings(k.Addrs))
	require.NoError(t, err)
	defer c.Close()

	before := k.Requests(int16(kmsg.DescribeGroups))
	described, err := c.DescribeGroups(context.Background(), names)
	require.NoError(t, err)
	sent := k.Requests(int16(kmsg.DescribeGroups)) - before
	require.Equal(t, int64((groups+maxGroupsPerDescribe-1)/maxGroupsPerDescribe), sent, "DescribeGroups requests for %d groups", groups)
	require.Len(t, described, groups)
	for _, g := range names {
		// Groups that only committed offsets have no members.
		require.Equal(t, kafka.GroupStateEmpty, described[g].State, g)
		require.Empty(t, described[g].Members, g)
	}
}
