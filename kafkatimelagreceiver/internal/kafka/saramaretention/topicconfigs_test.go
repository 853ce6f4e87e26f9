//go:build !unit

package saramaretention

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/saramatest"
)

func TestRetentionOf(t *testing.T) {
	entry := func(name, value string) *sarama.ConfigEntry { return &sarama.ConfigEntry{Name: name, Value: value} }
	r, err := retentionOf([]*sarama.ConfigEntry{entry("cleanup.policy", "compact,delete"), entry("retention.ms", "3600000"), entry("retention.bytes", "1073741824")})
	require.NoError(t, err)
	require.Equal(t, kafka.TopicRetention{Delete: true, Compact: true, RetentionMs: 3_600_000, RetentionBytes: 1 << 30}, r)

	r, err = retentionOf(nil)
	require.NoError(t, err)
	require.Equal(t, kafka.TopicRetention{Delete: true, RetentionMs: 604_800_000, RetentionBytes: -1}, r, "Kafka's defaults for what the broker leaves out")

	r, err = retentionOf([]*sarama.ConfigEntry{entry("cleanup.policy", "compact")})
	require.NoError(t, err)
	require.False(t, r.Delete)

	r, err = retentionOf([]*sarama.ConfigEntry{entry("message.timestamp.type", "LogAppendTime")})
	require.NoError(t, err)
	require.True(t, r.LogAppendTime)
	r, err = retentionOf([]*sarama.ConfigEntry{entry("message.timestamp.before.max.ms", "60000"), entry("message.timestamp.after.max.ms", "3600000")})
	require.NoError(t, err)
	require.Equal(t, int64(3_600_000), r.StampBoundMs, "KIP-937: the larger of the two bounds")
	r, err = retentionOf([]*sarama.ConfigEntry{entry("message.timestamp.after.max.ms", "3600000")})
	require.NoError(t, err)
	require.Zero(t, r.StampBoundMs, "before.max.ms unbounded by default: stamps any age before their append")
	_, err = retentionOf([]*sarama.ConfigEntry{entry("message.timestamp.type", "CreationTime")})
	require.EqualError(t, err, `message.timestamp.type: "CreationTime" is neither CreateTime nor LogAppendTime`)

	_, err = retentionOf([]*sarama.ConfigEntry{entry("retention.ms", "a week")})
	require.EqualError(t, err, `retention.ms: "a week" is not a number`)

	// Tiered storage: retention.* bound what a consumer can read; the
	// local.retention.* a broker might list are not asked for, and a
	// broker that lists them anyway changes nothing.
	r, err = retentionOf([]*sarama.ConfigEntry{
		entry("remote.storage.enable", "true"), entry("retention.ms", "2592000000"), entry("retention.bytes", "107374182400"),
		entry("local.retention.ms", "3600000"), entry("local.retention.bytes", "1073741824"),
	})
	require.NoError(t, err)
	require.Equal(t, kafka.TopicRetention{Delete: true, RetentionMs: 2_592_000_000, RetentionBytes: 100 << 30, RemoteStorage: true}, r)
	require.NotContains(t, retentionConfigs, "local.retention.ms")
	require.NotContains(t, retentionConfigs, "local.retention.bytes")

	_, err = retentionOf([]*sarama.ConfigEntry{entry("remote.storage.enable", "yes")})
	require.EqualError(t, err, `remote.storage.enable: "yes" is not true or false`)
}

// TestManyTopicsAreDescribedInChunks: configs of 2,100 topics in three
// requests of at most maxTopicsPerDescribeConfigs, every topic answered; a
// topic that does not exist is named in the error, and the others stand.
func TestManyTopicsAreDescribedInChunks(t *testing.T) {
	const topics = 2100
	k := kfaketest.New(t, 3, nil)
	names := make([]string, topics)
	for i := range names {
		names[i] = fmt.Sprintf("topic-%04d", i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	retention := "3600000"
	created, err := k.Admin.CreateTopics(ctx, 1, 1, map[string]*string{"retention.ms": &retention}, names...)
	require.NoError(t, err)
	require.NoError(t, created.Error())
	c, err := open(saramatest.Settings(k.Addrs))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })

	before := k.Requests(int16(kmsg.DescribeConfigs))
	got, err := c.TopicRetention(ctx, append(names, "missing"))
	require.ErrorContains(t, err, `topic "missing"`)
	require.Equal(t, int64(3), k.Requests(int16(kmsg.DescribeConfigs))-before)
	require.Len(t, got, topics)
	for _, n := range names {
		require.Equal(t, kafka.TopicRetention{Delete: true, RetentionMs: 3_600_000, RetentionBytes: -1}, got[n], n)
	}
}
