package kafkatimelagreceiver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestOlderBrokerAnsweredAtTheDefaultVersion: a cluster that advertises only
// Kafka 2.8's request versions (no batched OffsetFetch, no
// ConsumerGroupDescribe) is read in full at the default protocol_version,
// the newest the client knows: every request is negotiated down to what the
// broker speaks, and what only newer brokers have is not asked for.
func TestOlderBrokerAnsweredAtTheDefaultVersion(t *testing.T) {
	k := newTestKafka(t, 1, kfake.MaxVersions(kversion.V2_8_0()))
	k.CreateTopic("orders", 2)
	now := time.Now()
	k.Produce("orders", 0, now.Add(-time.Minute), now.Add(-30*time.Second), now)
	k.Produce("orders", 1, now)
	k.Commit("billing", "orders", map[int32]int64{0: 1, 1: 1})
	k.Commit("audit", "orders", map[int32]int64{0: 0})
	k.joinGroup("live", "orders", "member-a")

	cfg := k.healthConfig(3)
	require.Equal(t, "4.3.1", cfg.ProtocolVersion, "the default")
	s := startScraper(t, cfg)
	v := settled(t, s, "live", 1)
	require.Equal(t, map[string]map[string]int64{"member-a": {"": 2}}, v.assigned)

	offsetFetches := k.Requests(int16(kmsg.OffsetFetch))
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	lags := pointsOf(md, "kafka.consumer_group.lag")
	require.Equal(t, int64(2), lags[pointKey{"billing", "orders", 0}].intValue)
	require.Equal(t, int64(0), lags[pointKey{"billing", "orders", 1}].intValue)
	require.Equal(t, int64(3), lags[pointKey{"audit", "orders", 0}].intValue)
	timeLag, ok := pointsOf(md, "kafka.consumer_group.time_lag")[pointKey{"audit", "orders", 0}]
	require.True(t, ok, "the record at the committed offset was read")
	require.InDelta(t, time.Since(now.Add(-time.Minute)).Seconds(), timeLag.doubleValue, 2)
	require.Equal(t, "Empty", viewGroup(t, md, "billing").state)
	require.Equal(t, "Stable", viewGroup(t, md, "live").state)
	// Without OffsetFetch v8 every group is asked on its own.
	require.Equal(t, int64(3), k.Requests(int16(kmsg.OffsetFetch))-offsetFetches)
	require.Zero(t, k.Requests(int16(kmsg.ConsumerGroupDescribe)), "the broker has no such API")
}
