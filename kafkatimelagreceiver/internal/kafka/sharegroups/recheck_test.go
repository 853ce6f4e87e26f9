//go:build !unit

package sharegroups

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kafkacount"
)

// A cluster found without share groups is asked again after
// recheckUnsupported, so that a rolling upgrade is noticed.
func TestUnsupportedIsAskedAgainLater(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.MaxVersions(kversion.V3_9_0()))
	require.NoError(t, err)
	defer cluster.Close()
	counts := kafkacount.Observe(cluster)
	s := settings()
	s.Brokers = cluster.ListenAddrs()
	c, err := New(s)
	require.NoError(t, err)
	defer c.Close()
	now := time.Now()
	c.now = func() time.Time { return now }
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	asked := func() int64 {
		before := counts.Snapshot()
		_, err := c.ShareGroups(ctx)
		require.ErrorIs(t, err, kafka.ErrShareGroupsUnsupported)
		return counts.Snapshot().Since(before).Of(kmsg.ApiVersions)
	}
	require.Positive(t, asked())
	now = now.Add(recheckUnsupported - time.Second)
	require.Zero(t, asked())
	now = now.Add(time.Second)
	require.Equal(t, int64(1), asked(), "one question an hour")
	require.Zero(t, asked())
}
