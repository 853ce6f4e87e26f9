//go:build !unit

package kafkatimelagreceiver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRetentionMargin: on a topic kept 10 minutes, a group behind a record
// appended 2 minutes ago has about 8 minutes before retention may delete
// it: retention.ms minus the record's age, within 1.5 s of what the
// record's timestamp says. A compacted topic and a caught-up group have no
// margin. Topic configs are read once (one DescribeConfigs for every
// topic), cached, and read at once for a topic seen for the first time.
func TestRetentionMargin(t *testing.T) {
	k := newTestKafka(t, 3)
	ctx := context.Background()
	create := func(topic string, configs map[string]*string) {
		resp, err := k.Admin.CreateTopic(ctx, 2, 1, configs, topic)
		require.NoError(t, err)
		require.NoError(t, resp.Err)
	}
	str := func(s string) *string { return &s }
	create("short", map[string]*string{"retention.ms": str("600000")})
	create("compacted", map[string]*string{"cleanup.policy": str("compact")})
	create("both", map[string]*string{"cleanup.policy": str("compact,delete"), "retention.ms": str("3600000")})
	appended := time.Now().Add(-2 * time.Minute)
	for _, topic := range []string{"short", "compacted", "both"} {
		k.Produce(topic, 0, appended, appended.Add(time.Second))
		k.Produce(topic, 1, appended)
		k.Commit("behind", topic, map[int32]int64{0: 0, 1: 1})
	}
	k.Commit("done", "short", map[int32]int64{0: 2, 1: 1})

	cfg := k.testConfig()
	cfg.Metrics.KafkaConsumerGroupPartitionRetentionMargin.Enabled = true
	s := startScraper(t, cfg)
	before := k.Requests(int16(kmsg.DescribeConfigs))
	md, err := s.scrape(ctx)
	require.NoError(t, err)
	require.Equal(t, before+1, k.Requests(int16(kmsg.DescribeConfigs)), "one request for the three topics")

	margins := pointsOf(md, "kafka.consumer_group.retention_margin")
	timeLags := pointsOf(md, "kafka.consumer_group.time_lag")
	short, ok := margins[pointKey{"behind", "short", -1}]
	require.True(t, ok)
	age := short.timestamp.Sub(appended).Seconds()
	require.InDelta(t, 600-age, short.doubleValue, 1.5, "retention.ms minus the record's age")
	require.InDelta(t, 600-timeLags[pointKey{"behind", "short", 0}].doubleValue, short.doubleValue, 1e-9, "the age is the time lag's")
	both, ok := margins[pointKey{"behind", "both", -1}]
	require.True(t, ok, "compact,delete deletes by time too")
	require.InDelta(t, 3600-age, both.doubleValue, 1.5)
	require.NotContains(t, margins, pointKey{"behind", "compacted", -1}, "compacted only: nothing is deleted by time")
	require.NotContains(t, margins, pointKey{"done", "short", -1}, "caught up: nothing to lose")

	partitionMargins := pointsOf(md, "kafka.consumer_group.partition_retention_margin")
	require.InDelta(t, 600-age, partitionMargins[pointKey{"behind", "short", 0}].doubleValue, 1.5)
	require.NotContains(t, partitionMargins, pointKey{"behind", "short", 1}, "caught up on partition 1")
	require.NotContains(t, partitionMargins, pointKey{"behind", "compacted", 0})

	before = k.Requests(int16(kmsg.DescribeConfigs))
	_, err = s.scrape(ctx)
	require.NoError(t, err)
	require.Equal(t, before, k.Requests(int16(kmsg.DescribeConfigs)), "cached")

	create("late", map[string]*string{"retention.ms": str("60000")})
	k.Produce("late", 0, appended)
	k.Commit("behind", "late", map[int32]int64{0: 0})
	before = k.Requests(int16(kmsg.DescribeConfigs))
	md, err = s.scrape(ctx)
	require.NoError(t, err)
	require.Equal(t, before+1, k.Requests(int16(kmsg.DescribeConfigs)), "a new topic is read at once")
	late, ok := pointsOf(md, "kafka.consumer_group.retention_margin")[pointKey{"behind", "late", -1}]
	require.True(t, ok)
	require.Less(t, late.doubleValue, 0.0, "kept a minute, appended two ago: overdue")
}
