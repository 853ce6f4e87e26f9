//go:build !unit

package saramacluster

import (
	"context"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceRaw appends the batch, as it is, to one partition.
func produceRaw(k *kfaketest.Kafka, topic string, partition int32, b rawBatch) {
	k.TB.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 30_000
	topics, err := k.Admin.ListTopics(ctx, topic)
	require.NoError(k.TB, err)
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rt.TopicID = topics[topic].ID // produce v13 names topics by id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = b.encode()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := k.Client.Request(ctx, req)
	require.NoError(k.TB, err)
	for _, t := range resp.(*kmsg.ProduceResponse).Topics {
		for _, p := range t.Partitions {
			require.Zero(k.TB, p.ErrorCode, "produce to %s/%d", topic, p.Partition)
		}
	}
}
