//go:build !unit

package saramaoffsets

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// TestCoordinatorOfManyGroupsIsDescribedInChunks: a coordinator's groups
// are described in requests of at most maxGroupsPerDescribe groups, and
// every group is answered.
func TestCoordinatorOfManyGroupsIsDescribedInChunks(t *testing.T) {
	const groups = 250
	require.Greater(t, groups, 2*maxGroupsPerDescribe, "the test needs more than two chunks")
	k, c, names := coordinatorOfGroups(t, groups)

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
