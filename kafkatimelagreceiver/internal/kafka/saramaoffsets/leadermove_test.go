//go:build !unit

package saramaoffsets

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/saramatest"
)

// TestEndOffsetsFollowALeaderThatMovesTwice: during a rolling leader move
// the leader a refresh names can move on before it is asked. A partition
// refused as "not the leader" twice in one call is still read in that
// call, with the time of that read.
func TestEndOffsetsFollowALeaderThatMovesTwice(t *testing.T) {
	k := kfaketest.New(t, 3, nil)
	k.CreateTopic("orders", 1)
	now := time.Now()
	k.Produce("orders", 0, now, now)
	cl, err := open(saramatest.Settings(k.Addrs))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cl.Close()) })
	moving := kafka.TopicPartition{Topic: "orders", Partition: 0}
	partitions := []kafka.TopicPartition{moving}
	_, err = cl.EndOffsets(context.Background(), partitions) // connect and learn leaders
	require.NoError(t, err)

	var refusals atomic.Int32
	k.Cluster.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
		k.Cluster.KeepControl()
		list := req.(*kmsg.ListOffsetsRequest)
		for _, topic := range list.Topics {
			for _, p := range topic.Partitions {
				if topic.Topic != moving.Topic || p.Partition != moving.Partition || refusals.Load() >= 2 {
					continue
				}
				refusals.Add(1)
				resp := list.ResponseKind().(*kmsg.ListOffsetsResponse)
				rt := kmsg.NewListOffsetsResponseTopic()
				rt.Topic = topic.Topic
				rp := kmsg.NewListOffsetsResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = kerr.NotLeaderForPartition.Code
				rt.Partitions = append(rt.Partitions, rp)
				resp.Topics = append(resp.Topics, rt)
				return resp, nil, true
			}
		}
		return nil, nil, false
	})
	before := time.Now()
	read, err := cl.EndOffsets(context.Background(), partitions)
	require.NoError(t, err)
	require.Equal(t, int32(2), refusals.Load(), "refused twice")
	require.Equal(t, map[kafka.TopicPartition]int64{moving: 2}, read.Offsets)
	require.Len(t, read.Retries, 1, "the first retry read nothing, the second the moving partition")
	require.Equal(t, []kafka.TopicPartition{moving}, read.Retries[0].Partitions)
	require.False(t, read.Retries[0].Sent.Before(read.Received), "the retry is sent after the first answer")
	require.False(t, read.Sent.Before(before))

	first, retries := read.Split()
	require.Empty(t, first.Offsets)
	require.Len(t, retries, 1)
	require.Equal(t, map[kafka.TopicPartition]int64{moving: 2}, retries[0].Offsets)
	require.Equal(t, read.Retries[0].Received, retries[0].Received)
}
