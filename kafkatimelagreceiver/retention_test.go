//go:build !unit

package kafkatimelagreceiver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
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
	// The records were stamped two minutes before the test: their stamps
	// date them, as an operator who knows their producers says.
	cfg.TrustedTimestampTopics = []string{"."}
	s := startScraper(t, cfg)
	before := k.Requests(int16(kmsg.DescribeConfigs))
	md, err := s.scrape(ctx)
	require.NoError(t, err)
	require.Equal(t, before+1, k.Requests(int16(kmsg.DescribeConfigs)), "one request for the three topics")
	require.Zero(t, k.Requests(int16(kmsg.DescribeLogDirs)), "no topic deletes by size: no size is read")
	require.Equal(t, "time", marginsOf(md)[[2]string{"behind", "short"}].basis)

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

// TestTieredStorageRetentionMargin: a topic with tiered storage
// (remote.storage.enable, KIP-405), whose broker keeps a minute and 1 KB
// locally (local.retention.*) and a day and 1 GB in all: a consumer still
// reads what the local retention deleted, from remote storage, so the
// margin is the day's, retention.ms minus the record's age. The size a
// broker reports is of its local copy only: no size is read for it.
// kfake has no tiered storage: the broker's DescribeConfigs answer is the
// one a tiered broker gives.
func TestTieredStorageRetentionMargin(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("tiered", 1)
	appended := time.Now().Add(-2 * time.Minute)
	k.Produce("tiered", 0, appended, appended.Add(time.Second))
	k.Commit("behind", "tiered", map[int32]int64{0: 0})
	k.Cluster.ControlKey(int16(kmsg.DescribeConfigs), func(req kmsg.Request) (kmsg.Response, error, bool) {
		k.Cluster.KeepControl()
		describe := req.(*kmsg.DescribeConfigsRequest)
		resp := describe.ResponseKind().(*kmsg.DescribeConfigsResponse)
		for _, r := range describe.Resources {
			res := kmsg.NewDescribeConfigsResponseResource()
			res.ResourceType, res.ResourceName = r.ResourceType, r.ResourceName
			for name, value := range map[string]string{
				"cleanup.policy": "delete", "retention.ms": "86400000", "retention.bytes": "1000000000",
				"remote.storage.enable": "true", "local.retention.ms": "60000", "local.retention.bytes": "1000",
			} {
				c := kmsg.NewDescribeConfigsResponseResourceConfig()
				c.Name, c.Value = name, kmsg.StringPtr(value)
				res.Configs = append(res.Configs, c)
			}
			resp.Resources = append(resp.Resources, res)
		}
		return resp, nil, true
	})

	cfg := k.testConfig()
	// The records were stamped in the past: their stamps date them, as an
	// operator who knows their producers says (trusted_timestamp_topics).
	cfg.TrustedTimestampTopics = []string{"."}
	cfg.Metrics.KafkaConsumerGroupPartitionRetentionMargin.Enabled = true
	s := startScraper(t, cfg)
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	margin, ok := marginsOf(md)[[2]string{"behind", "tiered"}]
	require.True(t, ok)
	require.Equal(t, "time", margin.basis)
	require.InDelta(t, 86_400-margin.at.Sub(appended).Seconds(), margin.seconds, 1.5, "retention.ms, not local.retention.ms")
	require.Zero(t, k.Requests(int16(kmsg.DescribeLogDirs)), "a tiered partition's local size says nothing of what retention.bytes counts")
}

// TestSizeMarginRefusedIsCounted: a topic deleting by size, whose
// partitions' sizes the brokers refuse to describe (DescribeLogDirs needs
// Describe on the cluster): its retention margin is withheld, and counted
// (otelcol_kafka_time_lag_aggregates_withheld, reason
// retention_margin_unknown).
func TestSizeMarginRefusedIsCounted(t *testing.T) {
	k := newTestKafka(t, 1)
	bytes := "1000000"
	k.CreateTopicWith("sized", 1, map[string]*string{"retention.bytes": &bytes})
	k.Produce("sized", 0, time.Now(), time.Now())
	k.Commit("behind", "sized", map[int32]int64{0: 0})
	k.Cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.DescribeLogDirs}, Err: kerr.ClusterAuthorizationFailed, Count: -1})
	cfg := k.testConfig()
	cfg.TrustedTimestampTopics = []string{"."}
	s, tt := startTelemetryScraper(t, cfg)
	md, err := s.scrape(context.Background())
	require.Error(t, err, "the refusal is reported")
	require.Contains(t, pointsOf(md, "kafka.consumer_group.lag"), pointKey{"behind", "sized", 0})
	require.NotContains(t, pointsOf(md, "kafka.consumer_group.retention_margin"), pointKey{"behind", "sized", -1}, "no margin without the partition's size")
	m, err := tt.GetMetric("otelcol_kafka_time_lag_aggregates_withheld")
	require.NoError(t, err)
	withheld := map[string]int64{}
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		reason, _ := dp.Attributes.Value("reason")
		withheld[reason.AsString()] = dp.Value
	}
	require.Equal(t, int64(1), withheld["retention_margin_unknown"], "the withheld margin is counted: %v", withheld)
}
