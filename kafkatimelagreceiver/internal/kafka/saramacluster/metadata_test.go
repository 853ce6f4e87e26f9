//go:build !unit

package saramacluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/saramatest"
)

// A read that names partitions of deleted topics (a group's commits outlive
// its topic; tables are kept through partial reads) must not refresh the
// metadata of each such topic on its own (sarama's way: two requests and a
// 100 ms backoff per topic, one after the other, at every sample). The
// topics and partitions the client's metadata lacks are asked about
// together, in one Metadata request per read, and those the cluster does
// not have are reported as unknown.
func TestEndOffsetsOfDeletedTopicsCostOneMetadataRequest(t *testing.T) {
	k := kfaketest.New(t, 1, nil)
	k.CreateTopic("live", 2)
	k.Produce("live", 0, time.Now())
	c, err := New(saramatest.Settings(k.Addrs))
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	live := []kafka.TopicPartition{{Topic: "live", Partition: 0}, {Topic: "live", Partition: 1}}
	_, err = c.EndOffsets(ctx, live) // connects and fills the metadata cache
	require.NoError(t, err)

	partitions := append([]kafka.TopicPartition(nil), live...)
	for i := range 20 {
		gone := fmt.Sprintf("gone-%02d", i)
		partitions = append(partitions, kafka.TopicPartition{Topic: gone, Partition: 0}, kafka.TopicPartition{Topic: gone, Partition: 1})
	}
	before := k.Counts.Snapshot()
	read, err := c.EndOffsets(ctx, partitions)
	got := k.Counts.Snapshot().Since(before)
	require.Error(t, err)
	require.Equal(t, map[kafka.TopicPartition]int64{live[0]: 1, live[1]: 0}, read.Offsets)
	// The test's own franz-go client may refresh its metadata in the window.
	require.LessOrEqual(t, got.Of(kmsg.Metadata), int64(2), "one Metadata request for all 20 missing topics, not two each")
	require.Len(t, read.Unknown, 40, "every partition of the missing topics is reported unknown")
	var errs kafka.Errors
	require.ErrorAs(t, err, &errs)
	require.Len(t, errs, 20, "one error per missing topic")
	var topicErr *kafka.TopicError
	require.ErrorAs(t, err, &topicErr)
	require.Equal(t, "gone-00", topicErr.Topic)

	// A partition beyond a live topic's count is unknown too.
	read, err = c.EndOffsets(ctx, []kafka.TopicPartition{live[0], {Topic: "live", Partition: 7}})
	require.Error(t, err)
	require.Equal(t, []kafka.TopicPartition{{Topic: "live", Partition: 7}}, read.Unknown)
	require.Equal(t, map[kafka.TopicPartition]int64{live[0]: 1}, read.Offsets)
}

// Topic ids tell a topic deleted and created again under the same name from
// the old one, and the cluster id tells one cluster from another: kfake
// gives both, as Kafka does from Metadata v10 (2.8).
func TestIdentifyReadsClusterAndTopicIDs(t *testing.T) {
	k := kfaketest.New(t, 2, nil, kfake.ClusterID("prod-eu"))
	k.CreateTopic("orders", 2)
	c, err := New(saramatest.Settings(k.Addrs))
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()

	_, err = c.EndOffsets(ctx, []kafka.TopicPartition{{Topic: "orders", Partition: 0}}) // connects
	require.NoError(t, err)
	before := k.Counts.Snapshot()
	id, err := c.Identify(ctx, []string{"orders", "nonexistent"})
	require.NoError(t, err, "an unknown topic is absent, not an error: the offset reads report it")
	require.Equal(t, "prod-eu", id.ClusterID)
	require.Len(t, id.Topics, 1)
	first := id.Topics["orders"]
	require.False(t, first.IsZero())
	// The test's own franz-go client may refresh its metadata in the window.
	require.LessOrEqual(t, k.Counts.Snapshot().Since(before).Of(kmsg.Metadata), int64(2), "one Metadata request")

	_, err = k.Admin.DeleteTopics(ctx, "orders")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		resp, err := k.Admin.CreateTopic(ctx, 2, 1, nil, "orders")
		return err == nil && resp.Err == nil
	}, 20*time.Second, 100*time.Millisecond)
	id, err = c.Identify(ctx, []string{"orders"})
	require.NoError(t, err)
	require.NotEqual(t, first, id.Topics["orders"], "a recreated topic has a new id")

	// Brokers before 2.8 give no topic ids: the id is unknown, not wrong.
	old := saramatest.Settings(k.Addrs)
	old.ProtocolVersion = "2.4.0"
	c24, err := New(old)
	require.NoError(t, err)
	defer c24.Close()
	id, err = c24.Identify(ctx, []string{"orders"})
	require.NoError(t, err)
	require.Equal(t, "prod-eu", id.ClusterID)
	require.Empty(t, id.Topics)

	_, err = c.Identify(ctx, nil)
	require.Error(t, err, "no topics would ask for every topic")
}
