package kafkatimelagreceiver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/health"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/progress"
)

func directTestScraper(t *testing.T, configure func(*Config)) *timeLagScraper {
	t.Helper()
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.Metrics.KafkaPartitionOldestOffset.Enabled = true
	cfg.Metrics.KafkaConsumerGroupOffset.Enabled = true
	if configure != nil {
		configure(cfg)
	}
	s, err := newTimeLagScraper(cfg, receivertest.NewNopSettings(metadata.Type), nil)
	require.NoError(t, err)
	return s
}

func directTestSnapshot() (*lag.Snapshot, []lag.PartitionLag) {
	now := time.Now().UnixNano()
	tp0, tp1 := kafka.TopicPartition{Topic: "orders", Partition: 0}, kafka.TopicPartition{Topic: "orders", Partition: 1}
	snap := &lag.Snapshot{
		At:        now,
		Committed: map[string]map[kafka.TopicPartition]int64{"billing": {tp0: 2, tp1: 5}},
		End:       map[kafka.TopicPartition]int64{tp0: 10, tp1: 9},
		Start:     map[kafka.TopicPartition]int64{tp0: 4, tp1: 0},
		Stable:    map[kafka.TopicPartition]int64{tp0: 8, tp1: 9},
	}
	lags := lag.NewIndex(snap).GroupLags(nil, "billing", snap.At, func(_ *lag.Partition, c int64) (int64, lag.Method, bool) {
		return now - c*int64(time.Second), lag.MethodTable, true
	})
	return snap, lags
}

// emitScrape writes a scrape of one group's lags (every pair STALL, a drain
// time of 30 s each), every partition producing 5 records/s, and its
// aggregates when asked, through the metric writer, in one piece.
func emitScrape(t *testing.T, s *timeLagScraper, snap *lag.Snapshot, lags []lag.PartitionLag, withAggregates bool) pmetric.Metrics {
	t.Helper()
	out := s.writer.begin(t.Context(), snap.At, len(lags))
	statuses := make([]health.Status, len(lags))
	for i := range statuses {
		statuses[i] = health.StatusStall
	}
	out.partitionStatuses(lags, statuses)
	drains := make([]progress.Partition, len(lags))
	for i := range drains {
		drains[i] = progress.Partition{Drain: 30, HasDrain: true}
	}
	out.partitionDrains(lags, drains)
	out.groupLags(lags)
	if withAggregates {
		out.aggregates(lag.Aggregate(nil, lags))
	}
	parts := s.index(snap).Parts
	for i := range parts {
		parts[i].ProduceRate, parts[i].HasProduceRate = 5, parts[i].HasEnd
	}
	out.partitions(parts)
	md, err := out.finish()
	require.NoError(t, err)
	return md
}

func metricsByName(md pmetric.Metrics) map[string]pmetric.Metric {
	out := map[string]pmetric.Metric{}
	eachMetric(md, func(m pmetric.Metric) { out[m.Name()] = m })
	return out
}

// The gauges built without the MetricsBuilder must be indistinguishable from
// the builder's: same names, descriptions, units and types.
func TestDirectGaugesMatchBuilder(t *testing.T) {
	cfg := metadata.NewDefaultMetricsBuilderConfig()
	cfg.Metrics.KafkaPartitionOldestOffset.Enabled = true
	cfg.Metrics.KafkaConsumerGroupPartitionStatus.Enabled = true
	cfg.Metrics.KafkaConsumerGroupStableLag.Enabled = true
	cfg.Metrics.KafkaConsumerGroupPartitionTimeToDrain.Enabled = true
	cfg.Metrics.KafkaConsumerGroupOffset.Enabled = true
	mb := metadata.NewMetricsBuilder(cfg, receivertest.NewNopSettings(metadata.Type))
	ts := pcommon.NewTimestampFromTime(time.Now())
	mb.RecordKafkaConsumerGroupOffsetDataPoint(ts, 1, "g", "t", 0)
	mb.RecordKafkaConsumerGroupLagDataPoint(ts, 1, "g", "t", 0)
	mb.RecordKafkaConsumerGroupLostMessagesDataPoint(ts, 1, "g", "t", 0)
	mb.RecordKafkaConsumerGroupTimeLagDataPoint(ts, 1, "g", "t", 0)
	mb.RecordKafkaConsumerGroupStableLagDataPoint(ts, 1, "g", "t", 0)
	mb.RecordKafkaPartitionCurrentOffsetDataPoint(ts, 1, "t", 0)
	mb.RecordKafkaPartitionOldestOffsetDataPoint(ts, 1, "t", 0)
	mb.RecordKafkaConsumerGroupPartitionStatusDataPoint(ts, 1, "g", "t", 0, metadata.AttributeStatusOK)
	mb.RecordKafkaPartitionProduceRateDataPoint(ts, 1, "t", 0)
	mb.RecordKafkaConsumerGroupPartitionTimeToDrainDataPoint(ts, 1, "g", "t", 0)
	want := metricsByName(mb.Emit())

	s := directTestScraper(t, func(cfg *Config) {
		cfg.Metrics.KafkaConsumerGroupPartitionStatus.Enabled = true
		cfg.Metrics.KafkaConsumerGroupStableLag.Enabled = true
		cfg.Metrics.KafkaConsumerGroupPartitionTimeToDrain.Enabled = true
	})
	snap, lags := directTestSnapshot()
	direct := pmetric.NewMetricSlice()
	eachMetric(emitScrape(t, s, snap, lags, false), func(m pmetric.Metric) { m.CopyTo(direct.AppendEmpty()) })
	require.Equal(t, len(want), direct.Len())
	for i := range direct.Len() {
		got := direct.At(i)
		w, ok := want[got.Name()]
		require.True(t, ok, got.Name())
		require.Equal(t, w.Description(), got.Description(), got.Name())
		require.Equal(t, w.Unit(), got.Unit(), got.Name())
		require.Equal(t, w.Type(), got.Type(), got.Name())
		require.Equal(t, w.Gauge().DataPoints().At(0).ValueType(), got.Gauge().DataPoints().At(0).ValueType(), got.Name())
	}
	byName := map[string]pmetric.Metric{}
	for i := range direct.Len() {
		byName[direct.At(i).Name()] = direct.At(i)
	}
	require.Equal(t, 2, byName["kafka.consumer_group.lag"].Gauge().DataPoints().Len())
	require.Equal(t, 1, byName["kafka.consumer_group.lost_messages"].Gauge().DataPoints().Len(), "only partition 0 lost records")
	stable := byName["kafka.consumer_group.stable_lag"].Gauge().DataPoints()
	require.Equal(t, 2, stable.Len())
	require.Equal(t, []int64{6, 4}, []int64{stable.At(0).IntValue(), stable.At(1).IntValue()}, "last stable offset minus committed offset")
	require.Equal(t, 2, byName["kafka.consumer_group.partition_time_to_drain"].Gauge().DataPoints().Len())
	require.Equal(t, 30.0, byName["kafka.consumer_group.partition_time_to_drain"].Gauge().DataPoints().At(0).DoubleValue())
	require.Equal(t, 2, byName["kafka.partition.produce_rate"].Gauge().DataPoints().Len())
	require.Equal(t, 5.0, byName["kafka.partition.produce_rate"].Gauge().DataPoints().At(1).DoubleValue())
	statuses := byName["kafka.consumer_group.partition_status"].Gauge().DataPoints()
	require.Equal(t, 2*len(health.Statuses), statuses.Len(), "a point per status per pair")
	for i := range statuses.Len() {
		st, _ := statuses.At(i).Attributes().Get("status")
		require.Equal(t, oneIf(st.Str() == "STALL"), statuses.At(i).IntValue(), st.Str())
		require.Equal(t, 4, statuses.At(i).Attributes().Len())
	}
}

// A user who reduces a metric's attributes gets the builder's re-aggregation.
func TestReducedAttributesGoThroughBuilder(t *testing.T) {
	s := directTestScraper(t, func(cfg *Config) {
		cfg.Metrics.KafkaConsumerGroupLag.EnabledAttributes = []metadata.KafkaConsumerGroupLagMetricAttributeKey{
			metadata.KafkaConsumerGroupLagMetricAttributeKeyGroup, metadata.KafkaConsumerGroupLagMetricAttributeKeyTopic,
		}
		cfg.Metrics.KafkaConsumerGroupLag.AggregationStrategy = metadata.AggregationStrategySum
		cfg.Metrics.KafkaConsumerGroupStableLag.Enabled = true
		cfg.Metrics.KafkaConsumerGroupStableLag.EnabledAttributes = []metadata.KafkaConsumerGroupStableLagMetricAttributeKey{
			metadata.KafkaConsumerGroupStableLagMetricAttributeKeyGroup,
		}
		cfg.Metrics.KafkaConsumerGroupStableLag.AggregationStrategy = metadata.AggregationStrategySum
	})
	snap, lags := directTestSnapshot()
	md := emitScrape(t, s, snap, lags, true)
	lagMetric := metricsByName(md)["kafka.consumer_group.lag"]
	require.Equal(t, 1, lagMetric.Gauge().DataPoints().Len(), "two partitions folded into one point")
	dp := lagMetric.Gauge().DataPoints().At(0)
	require.Equal(t, int64(8+4), dp.IntValue())
	_, hasPartition := dp.Attributes().Get("partition")
	require.False(t, hasPartition)
	require.Equal(t, 2, metricsByName(md)["kafka.consumer_group.time_lag"].Gauge().DataPoints().Len(), "other metrics stay direct")
	stable := metricsByName(md)["kafka.consumer_group.stable_lag"].Gauge().DataPoints()
	require.Equal(t, 1, stable.Len())
	require.Equal(t, int64(6+4), stable.At(0).IntValue())
}

// The new per-partition gauges fold like the others when a user drops an
// attribute, and the per-topic production rate sums the partitions'.
func TestReducedAttributesOfRateGauges(t *testing.T) {
	s := directTestScraper(t, func(cfg *Config) {
		m := &cfg.Metrics
		m.KafkaPartitionProduceRate.EnabledAttributes = []metadata.KafkaPartitionProduceRateMetricAttributeKey{metadata.KafkaPartitionProduceRateMetricAttributeKeyTopic}
		m.KafkaPartitionProduceRate.AggregationStrategy = metadata.AggregationStrategySum
		m.KafkaConsumerGroupPartitionTimeToDrain.Enabled = true
		m.KafkaConsumerGroupPartitionTimeToDrain.EnabledAttributes = []metadata.KafkaConsumerGroupPartitionTimeToDrainMetricAttributeKey{
			metadata.KafkaConsumerGroupPartitionTimeToDrainMetricAttributeKeyGroup, metadata.KafkaConsumerGroupPartitionTimeToDrainMetricAttributeKeyTopic,
		}
		m.KafkaConsumerGroupPartitionTimeToDrain.AggregationStrategy = metadata.AggregationStrategyMax
		m.KafkaTopicProduceRate.Enabled = true
		cfg.ClusterAlias = "prod"
	})
	snap, lags := directTestSnapshot()
	md := emitScrape(t, s, snap, lags, false)
	require.Equal(t, 1, md.ResourceMetrics().Len(), "the folded points are in the one resource")
	alias, _ := md.ResourceMetrics().At(0).Resource().Attributes().Get("kafka.cluster.alias")
	require.Equal(t, "prod", alias.Str())
	byName := metricsByName(md)
	for _, name := range []string{"kafka.partition.produce_rate", "kafka.topic.produce_rate"} {
		dps := byName[name].Gauge().DataPoints()
		require.Equal(t, 1, dps.Len(), name)
		require.Equal(t, 10.0, dps.At(0).DoubleValue(), name)
	}
	drain := byName["kafka.consumer_group.partition_time_to_drain"].Gauge().DataPoints()
	require.Equal(t, 1, drain.Len())
	require.Equal(t, 30.0, drain.At(0).DoubleValue())
}
