//go:build !unit

package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/scaleload"
)

// The replayed exporters send per scrape what their sources send, no
// record read among it, and their bytes are counted.
func TestExporterReplays(t *testing.T) {
	const brokers = 3
	k, err := scaleload.Start(brokers)
	require.NoError(t, err)
	defer k.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := scaleload.Workload{Groups: 4, Topics: 2, PartitionsPerTopic: 6}
	require.NoError(t, k.Load(ctx, w))
	scrapes, err := compareExporters(ctx, k, w)
	require.NoError(t, err)
	require.Len(t, scrapes, 2)
	kminion, klag := scrapes[0], scrapes[1]
	require.Equal(t, "kminion", kminion.name)
	for _, s := range scrapes {
		require.Zero(t, s.requests.Of(kmsg.Fetch), s.name)
		require.Equal(t, int64(w.Groups), s.requests.Of(kmsg.OffsetFetch), "%s: one OffsetFetch a group", s.name)
		require.Equal(t, int64(brokers), s.requests.Of(kmsg.ListGroups), s.name)
		require.Positive(t, s.bytes.Of(kmsg.OffsetFetch), s.name)
		require.Positive(t, s.bytes.Of(kmsg.ListOffsets), s.name)
	}
	leaders := 0 // distinct leaders of each topic, summed
	anyTopic := map[int32]bool{}
	for topic := range w.Topics {
		of := map[int32]bool{}
		for p := range w.PartitionsPerTopic {
			leader := k.Kafka.LeaderFor(w.Topic(topic), p)
			of[leader], anyTopic[leader] = true, true
		}
		leaders += len(of)
	}
	// The partitions' leaders are placed at random: a broker may lead none.
	require.Equal(t, int64(2*len(anyTopic)), kminion.requests.Of(kmsg.ListOffsets), "kminion: start and end offsets, a request per leading broker each")
	require.Equal(t, int64(brokers), kminion.requests.Of(kmsg.DescribeLogDirs))
	require.Equal(t, int64(1), kminion.requests.Of(kmsg.DescribeConfigs))
	require.Equal(t, int64(3*leaders), klag.requests.Of(kmsg.ListOffsets), "klag: three lists a topic, a request per leader of its partitions each")
	require.Equal(t, int64(1+4*w.Topics), klag.requests.Of(kmsg.Metadata),
		"klag: the brokers, for listing the groups on each, then a description and three lists a topic, each after its Metadata")
}
