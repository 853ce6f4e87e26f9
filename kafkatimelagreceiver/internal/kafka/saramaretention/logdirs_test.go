//go:build !unit

package saramaretention

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/rcrowley/go-metrics"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/saramatest"
)

// sizedCluster is three brokers with topic a (6 partitions) and b (3),
// partition p of each holding p+1 records of 1,000 random bytes (which no
// compression shrinks).
func sizedCluster(t *testing.T) (*kfaketest.Kafka, *testReads, []kafka.TopicPartition) {
	k := kfaketest.New(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var tps []kafka.TopicPartition
	for topic, partitions := range map[string]int32{"a": 6, "b": 3} {
		k.CreateTopic(topic, partitions)
		for p := range partitions {
			for range p + 1 {
				value := make([]byte, 1000)
				_, _ = rand.Read(value)
				rec := &kgo.Record{Topic: topic, Partition: p, Value: value}
				require.NoError(t, k.Client.ProduceSync(ctx, rec).FirstErr())
			}
			tps = append(tps, kafka.TopicPartition{Topic: topic, Partition: p})
		}
	}
	kafka.SortPartitions(tps)
	c, err := open(saramatest.Settings(k.Addrs))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return k, c, tps
}

// TestPartitionSizes: one DescribeLogDirs per leader, each carrying the
// partitions it leads, answers every partition with the size kfake keeps
// of it: the bytes of its batches as they came on the wire (kfake keeps one
// copy, no index files, and answers it from every broker); a partition
// with more records is larger.
func TestPartitionSizes(t *testing.T) {
	k, c, tps := sizedCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	topics, err := k.Admin.ListTopics(ctx, "a", "b")
	require.NoError(t, err)
	leaders := map[int32]bool{}
	for _, td := range topics {
		for _, pd := range td.Partitions {
			leaders[pd.Leader] = true
		}
	}
	dirs, err := k.Admin.DescribeAllLogDirs(ctx, nil)
	require.NoError(t, err)
	want := map[kafka.TopicPartition]int64{}
	dirs.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			want[kafka.TopicPartition{Topic: p.Topic, Partition: p.Partition}] = p.Size
		})
	})

	before := k.Requests(int16(kmsg.DescribeLogDirs))
	got, err := c.PartitionSizes(ctx, tps)
	require.NoError(t, err)
	require.Equal(t, int64(len(leaders)), k.Requests(int16(kmsg.DescribeLogDirs))-before, "one request per leader")
	require.Len(t, got, len(tps))
	for _, tp := range tps {
		require.Equal(t, want[tp], got[tp], "%s/%d", tp.Topic, tp.Partition)
		require.Greater(t, got[tp], int64(1000)*int64(tp.Partition+1), "%d records of 1,000 bytes and their batches' headers", tp.Partition+1)
	}
	require.Greater(t, got[kafka.TopicPartition{Topic: "a", Partition: 5}], got[kafka.TopicPartition{Topic: "a", Partition: 4}])

	before = k.Requests(int16(kmsg.DescribeLogDirs))
	got, err = c.PartitionSizes(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, got)
	require.Equal(t, before, k.Requests(int16(kmsg.DescribeLogDirs)), "a request naming nothing would describe everything: none is sent")
}

// TestPartitionSizesErrorsAreTyped: a topic the cluster does not have is
// named in a TopicError and the others are answered; an offline log
// directory names itself and the topics it cost; a principal refused
// Describe on the cluster is told that the partitions went unanswered for
// want of it (before DescribeLogDirs v3) or gets an AuthorizationError
// naming no topic, which kafka.Denials leaves an error.
func TestPartitionSizesErrorsAreTyped(t *testing.T) {
	k, c, tps := sizedCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	got, err := c.PartitionSizes(ctx, append(tps, kafka.TopicPartition{Topic: "gone", Partition: 0}))
	require.Len(t, got, len(tps))
	var topicErr *kafka.TopicError
	require.ErrorAs(t, err, &topicErr)
	require.Equal(t, "gone", topicErr.Topic)

	var dir string
	dirs, err := k.Admin.DescribeAllLogDirs(ctx, nil)
	require.NoError(t, err)
	dirs.Each(func(d kadm.DescribedLogDir) { dir = d.Dir })
	offline := k.Cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.DescribeLogDirs}, Resource: dir, Err: kerr.KafkaStorageError, Count: -1})
	got, err = c.PartitionSizes(ctx, tps)
	offline.Remove()
	require.Empty(t, got)
	var items kafka.Errors
	require.ErrorAs(t, err, &items)
	for _, item := range items {
		require.ErrorAs(t, item, &topicErr, "each error names its topic")
		require.ErrorContains(t, item, "log directory "+dir+": kafka server: Disk error")
	}

	denied := k.Cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.DescribeLogDirs}, TopLevel: true, Err: kerr.ClusterAuthorizationFailed, Count: -1})
	defer denied.Remove()
	got, err = c.PartitionSizes(ctx, tps)
	require.Empty(t, got)
	require.ErrorContains(t, err, "DescribeLogDirs needs Describe on the cluster",
		"DescribeLogDirs v2 (protocol 3.0) has no error for the request: the refusal is an empty answer")

	settings := saramatest.Settings(k.Addrs)
	settings.ProtocolVersion = "3.3.0"
	c, err = open(settings)
	require.NoError(t, err)
	defer c.Close()
	got, err = c.PartitionSizes(ctx, tps)
	require.Empty(t, got)
	var authz *kafka.AuthorizationError
	require.ErrorAs(t, err, &authz)
	require.ErrorIs(t, err, sarama.ErrClusterAuthorizationFailed)
	require.False(t, errors.As(err, &topicErr), "a refusal of the cluster is about no topic")
	require.Error(t, kafka.NewDenials().Split(err), "not a topic's denial: it stays an error")
}

// TestPartitionSizesCost: what reading the sizes costs, measured on the
// wire (sarama's byte meters) at 1,000 and 10,000 partitions led by three
// brokers: one DescribeLogDirs per broker whatever the partitions, about
// 4 bytes a partition out and 22 back; and the ListOffsets of their log
// starts read with them. docs/sizing.md has the figures.
func TestPartitionSizesCost(t *testing.T) {
	for _, partitions := range []int32{1_000, 10_000} {
		t.Run(fmt.Sprint(partitions), func(t *testing.T) {
			k := kfaketest.New(t, 3, nil)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			const topics = 10
			var tps []kafka.TopicPartition
			for i := range topics {
				topic := fmt.Sprintf("capped-%02d", i)
				k.CreateTopic(topic, partitions/topics)
				for p := range partitions / topics {
					tps = append(tps, kafka.TopicPartition{Topic: topic, Partition: p})
				}
			}
			c, err := open(saramatest.Settings(k.Addrs))
			require.NoError(t, err)
			defer c.Close()
			// Connected and the leaders known, as at a scrape's refresh.
			_, err = c.EndOffsets(ctx, tps)
			require.NoError(t, err)

			out, in := metrics.GetOrRegisterMeter("outgoing-byte-rate", c.Config().MetricRegistry), metrics.GetOrRegisterMeter("incoming-byte-rate", c.Config().MetricRegistry)
			sentBefore, receivedBefore, before := out.Snapshot().Count(), in.Snapshot().Count(), k.Requests(int16(kmsg.DescribeLogDirs))
			sizes, err := c.PartitionSizes(ctx, tps)
			require.NoError(t, err)
			require.Len(t, sizes, len(tps))
			requests := k.Requests(int16(kmsg.DescribeLogDirs)) - before
			sent, received := out.Snapshot().Count()-sentBefore, in.Snapshot().Count()-receivedBefore
			require.Equal(t, int64(3), requests, "one per broker")
			require.Less(t, sent, 6*int64(partitions)+2_000)
			require.Less(t, received, 30*int64(partitions)+2_000)
			t.Logf("%d partitions: %d DescribeLogDirs, %d bytes sent, %d received (%.1f and %.1f a partition)",
				partitions, requests, sent, received, float64(sent)/float64(partitions), float64(received)/float64(partitions))

			// The log starts read with them (retention.Cache), for the
			// bytes per offset.
			sentBefore, receivedBefore, before = out.Snapshot().Count(), in.Snapshot().Count(), k.Requests(int16(kmsg.ListOffsets))
			_, err = c.StartOffsets(ctx, tps)
			require.NoError(t, err)
			sent, received = out.Snapshot().Count()-sentBefore, in.Snapshot().Count()-receivedBefore
			t.Logf("%d partitions: %d ListOffsets of the log starts, %d bytes sent, %d received (%.1f and %.1f a partition)",
				partitions, k.Requests(int16(kmsg.ListOffsets))-before, sent, received, float64(sent)/float64(partitions), float64(received)/float64(partitions))
		})
	}
}
