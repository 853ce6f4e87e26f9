package kafkatimelagreceiver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

func directTestScraper(t *testing.T, configure func(*Config)) *timeLagScraper {
	t.Helper()
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.Metrics.KafkaPartitionOldestOffset.Enabled = true
	if configure != nil {
		configure(cfg)
	}
	s, err := newTimeLagScraper(cfg, receivertest.NewNopSettings(metadata.Type))
	require.NoError(t, err)
	return s
}

func directTestSnapshot() (*snapshot, []partitionLag) {
	now := time.Now().UnixNano()
	tp0, tp1 := topicPartition{"orders", 0}, topicPartition{"orders", 1}
	snap := &snapshot{
		at:        now,
		committed: map[string]map[topicPartition]int64{"billing": {tp0: 2, tp1: 5}},
		end:       map[topicPartition]int64{tp0: 10, tp1: 9},
		start:     map[topicPartition]int64{tp0: 4, tp1: 0},
	}
	lags := computeLags(snap, func(_ *indexedPartition, c int64) (int64, estimateMethod, bool) {
		return now - c*int64(time.Second), methodTable, true
	})
	return snap, lags
}

// emitAll builds the per-pair and per-partition gauges of a scrape, in one
// piece.
func emitAll(t *testing.T, s *timeLagScraper, snap *snapshot, lags []partitionLag) pmetric.MetricSlice {
	t.Helper()
	out := pmetric.NewMetricSlice()
	pairs := s.newPairEmitter(t.Context(), snap, len(lags))
	for _, pl := range lags {
		pairs.add(pl)
		if s.cfg.Metrics.KafkaConsumerGroupPartitionStatus.Enabled {
			pairs.addStatus(pl, statusStall)
		}
	}
	require.NoError(t, pairs.finish(out))
	s.emitPartitions(out, snap.at, s.index(snap).parts)
	return out
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
	mb := metadata.NewMetricsBuilder(cfg, receivertest.NewNopSettings(metadata.Type))
	ts := pcommon.NewTimestampFromTime(time.Now())
	mb.RecordKafkaConsumerGroupOffsetDataPoint(ts, 1, "g", "t", 0)
	mb.RecordKafkaConsumerGroupLagDataPoint(ts, 1, "g", "t", 0)
	mb.RecordKafkaConsumerGroupLostMessagesDataPoint(ts, 1, "g", "t", 0)
	mb.RecordKafkaConsumerGroupTimeLagDataPoint(ts, 1, "g", "t", 0)
	mb.RecordKafkaPartitionCurrentOffsetDataPoint(ts, 1, "t", 0)
	mb.RecordKafkaPartitionOldestOffsetDataPoint(ts, 1, "t", 0)
	mb.RecordKafkaConsumerGroupPartitionStatusDataPoint(ts, 1, "g", "t", 0, metadata.AttributeStatusOK)
	want := metricsByName(mb.Emit())

	s := directTestScraper(t, func(cfg *Config) { cfg.Metrics.KafkaConsumerGroupPartitionStatus.Enabled = true })
	snap, lags := directTestSnapshot()
	direct := emitAll(t, s, snap, lags)
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
	statuses := byName["kafka.consumer_group.partition_status"].Gauge().DataPoints()
	require.Equal(t, 2*len(healthStatuses), statuses.Len(), "a point per status per pair")
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
	})
	snap, lags := directTestSnapshot()
	direct := emitAll(t, s, snap, lags)
	s.emit(snap, aggregateLags(nil, lags))
	md := s.withDirect(s.mb.Emit(), direct)
	lag := metricsByName(md)["kafka.consumer_group.lag"]
	require.Equal(t, 1, lag.Gauge().DataPoints().Len(), "two partitions folded into one point")
	dp := lag.Gauge().DataPoints().At(0)
	require.Equal(t, int64(8+4), dp.IntValue())
	_, hasPartition := dp.Attributes().Get("partition")
	require.False(t, hasPartition)
	require.Equal(t, 2, metricsByName(md)["kafka.consumer_group.time_lag"].Gauge().DataPoints().Len(), "other metrics stay direct")
}
