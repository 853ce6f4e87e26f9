package emit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/emit"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

// reducedSettings drop partition from time_lag (kept per (group, topic),
// the worst partition's) and keep only topic on lag (summed over groups and
// partitions): the README's example of cutting series.
func reducedSettings() *emit.Settings {
	cfg := newSettings()
	cfg.Metrics.KafkaConsumerGroupTimeLag.EnabledAttributes = []metadata.KafkaConsumerGroupTimeLagMetricAttributeKey{
		metadata.KafkaConsumerGroupTimeLagMetricAttributeKeyGroup, metadata.KafkaConsumerGroupTimeLagMetricAttributeKeyTopic}
	cfg.Metrics.KafkaConsumerGroupLag.EnabledAttributes = []metadata.KafkaConsumerGroupLagMetricAttributeKey{
		metadata.KafkaConsumerGroupLagMetricAttributeKeyTopic}
	return cfg
}

// reducedGroups is pairs (group, partition) pairs: groups of 10 partitions
// of one topic each, 100 topics, so pairs/10 (group, topic) series of
// time_lag and 100 of lag.
func reducedGroups(pairs int) [][]lag.PartitionLag {
	groups := make([][]lag.PartitionLag, pairs/10)
	for g := range groups {
		lags := make([]lag.PartitionLag, 10)
		for p := range lags {
			lags[p] = lag.PartitionLag{
				Group: fmt.Sprintf("group-%06d", g), TopicPartition: kafka.TopicPartition{Topic: fmt.Sprintf("topic-%03d", g%100), Partition: int32(p)},
				Committed: int64(100 * p), HasEnd: true, End: int64(100*p + g + p), Lag: int64(g + p),
				HasTimeLag: true, TimeLag: float64(g%7) + float64(p)/10,
			}
		}
		groups[g] = lags
	}
	return groups
}

func writeReduced(ctx context.Context, w *emit.Writer, at int64, groups [][]lag.PartitionLag) (pmetric.Metrics, error) {
	out := w.Begin(ctx, at, 10*len(groups))
	for _, lags := range groups {
		out.Pairs(lags)
	}
	return out.Finish()
}

// BenchmarkReducedAttributes: one scrape's per-pair gauges with time_lag
// reduced to (group, topic) and lag to topic. Linear in pairs: 4x the pairs
// costs about 4x, not 16x.
func BenchmarkReducedAttributes(b *testing.B) {
	for _, pairs := range []int{10_000, 20_000, 40_000, 100_000} {
		b.Run(fmt.Sprintf("pairs=%d", pairs), func(b *testing.B) {
			w := newWriter(b, reducedSettings())
			groups := reducedGroups(pairs)
			at := time.Now().UnixNano()
			points := 0
			b.ReportAllocs()
			for b.Loop() {
				md, err := writeReduced(context.Background(), w, at, groups)
				if err != nil {
					b.Fatal(err)
				}
				points = md.DataPointCount()
			}
			b.ReportMetric(float64(points), "points/op")
		})
	}
}

// TestCancelledScrapeStopsWriting: a scrape whose context ended (its
// deadline passed) stops writing at the next chunk of pairs and says so,
// instead of building every point nobody will wait for. Points that
// aggregate over groups are dropped rather than sent half-summed.
func TestCancelledScrapeStopsWriting(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	groups := reducedGroups(20_000)
	md, err := writeReduced(ctx, newWriter(t, reducedSettings()), time.Now().UnixNano(), groups)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "pairs")
	got := metricsByName(md)
	_, hasLag := got["kafka.consumer_group.lag"]
	require.False(t, hasLag, "a half-summed lag per topic is not sent")
	require.Less(t, md.DataPointCount(), 20_000, "the write stopped before the last pairs")
}

// TestReducedAttributesMatchBuilder: metrics whose attributes were reduced,
// with each aggregation strategy, come out as the generated builder folds
// them (the writer's path before it folded them itself): same points,
// attributes and values.
func TestReducedAttributesMatchBuilder(t *testing.T) {
	cfg := reducedSettings()
	m := &cfg.Metrics
	m.KafkaConsumerGroupOffset.Enabled = true
	m.KafkaConsumerGroupOffset.EnabledAttributes = []metadata.KafkaConsumerGroupOffsetMetricAttributeKey{metadata.KafkaConsumerGroupOffsetMetricAttributeKeyGroup}
	m.KafkaConsumerGroupOffset.AggregationStrategy = metadata.AggregationStrategyAvg
	m.KafkaConsumerGroupLagSum.EnabledAttributes = []metadata.KafkaConsumerGroupLagSumMetricAttributeKey{metadata.KafkaConsumerGroupLagSumMetricAttributeKeyTopic}
	m.KafkaConsumerGroupLagSum.AggregationStrategy = metadata.AggregationStrategyMin
	m.KafkaConsumerGroupLagMax.EnabledAttributes = []metadata.KafkaConsumerGroupLagMaxMetricAttributeKey{}
	m.KafkaConsumerGroupTimeLagMax.EnabledAttributes = []metadata.KafkaConsumerGroupTimeLagMaxMetricAttributeKey{metadata.KafkaConsumerGroupTimeLagMaxMetricAttributeKeyTopic}
	m.KafkaConsumerGroupTimeLagMax.AggregationStrategy = metadata.AggregationStrategyAvg
	m.KafkaPartitionCurrentOffset.EnabledAttributes = []metadata.KafkaPartitionCurrentOffsetMetricAttributeKey{metadata.KafkaPartitionCurrentOffsetMetricAttributeKeyPartition}
	m.KafkaPartitionCurrentOffset.AggregationStrategy = metadata.AggregationStrategyMax

	groups := reducedGroups(2000)
	at := time.Now()
	ts := pcommon.NewTimestampFromTime(at)
	out := newWriter(t, cfg).Begin(t.Context(), at.UnixNano(), 2000)
	mb := metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, receivertest.NewNopSettings(metadata.Type))
	var aggs []lag.TopicLag
	partitions := map[kafka.TopicPartition]lag.Partition{}
	for _, lags := range groups {
		out.Pairs(lags)
		aggs = lag.Aggregate(aggs, lags)
		for _, pl := range lags {
			mb.RecordKafkaConsumerGroupOffsetDataPoint(ts, pl.Committed, pl.Group, pl.Topic, int64(pl.Partition))
			mb.RecordKafkaConsumerGroupLagDataPoint(ts, pl.Lag, pl.Group, pl.Topic, int64(pl.Partition))
			mb.RecordKafkaConsumerGroupTimeLagDataPoint(ts, pl.TimeLag, pl.Group, pl.Topic, int64(pl.Partition))
			partitions[pl.TopicPartition] = lag.Partition{TopicPartition: pl.TopicPartition, End: pl.End, HasEnd: true}
		}
	}
	out.Aggregates(aggs)
	for _, a := range aggs {
		mb.RecordKafkaConsumerGroupLagSumDataPoint(ts, a.LagSum, a.Group, a.Topic)
		mb.RecordKafkaConsumerGroupLagMaxDataPoint(ts, a.LagMax, a.Group, a.Topic)
		mb.RecordKafkaConsumerGroupTimeLagMaxDataPoint(ts, a.TimeLagMax, a.Group, a.Topic)
	}
	parts := make([]lag.PartitionGauge, 0, len(partitions))
	for _, p := range partitions {
		parts = append(parts, lag.PartitionGauge{Partition: &p})
		mb.RecordKafkaPartitionCurrentOffsetDataPoint(ts, p.End, p.Topic, int64(p.Partition))
	}
	out.Partitions(parts)
	md, err := out.Finish()
	require.NoError(t, err)

	got, want := pointsByAttributes(md), pointsByAttributes(mb.Emit())
	require.Len(t, got, 7)
	require.Equal(t, want, got)
	require.Len(t, got["kafka.consumer_group.time_lag"], 200)
	require.Len(t, got["kafka.consumer_group.lag"], 100)
	require.Len(t, got["kafka.consumer_group.lag_max"], 1)
	require.Len(t, got["kafka.partition.current_offset"], 10)
}

// pointsByAttributes is every point's value by metric and attributes.
func pointsByAttributes(md pmetric.Metrics) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	emit.EachMetric(md, func(m pmetric.Metric) {
		dps := m.Gauge().DataPoints()
		byAttrs := map[string]float64{}
		for i := range dps.Len() {
			dp := dps.At(i)
			v := dp.DoubleValue()
			if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
				v = float64(dp.IntValue())
			}
			byAttrs[fmt.Sprint(dp.Attributes().AsRaw())] = v
		}
		out[m.Name()] = byAttrs
	})
	return out
}

// TestReducedPointsOverUnreadPairsAreWithheld: a point folded over pairs or
// partitions one of which has no value this scrape (its end offset unread,
// its time lag unknown) is left out, not sent as the sum or maximum of the
// others; points over pairs that were all read are sent.
func TestReducedPointsOverUnreadPairsAreWithheld(t *testing.T) {
	cfg := reducedSettings()
	m := &cfg.Metrics
	m.KafkaConsumerGroupLagSum.EnabledAttributes = []metadata.KafkaConsumerGroupLagSumMetricAttributeKey{metadata.KafkaConsumerGroupLagSumMetricAttributeKeyTopic}
	m.KafkaPartitionCurrentOffset.EnabledAttributes = []metadata.KafkaPartitionCurrentOffsetMetricAttributeKey{metadata.KafkaPartitionCurrentOffsetMetricAttributeKeyTopic}
	groups := reducedGroups(2000) // topic-000 is read by group-000000 and group-000100
	unread := &groups[100][3]
	unread.HasEnd, unread.End, unread.Lag, unread.HasTimeLag, unread.TimeLag = false, 0, 0, false, 0
	undated := &groups[1][2] // group-000001 on topic-001
	undated.HasTimeLag, undated.TimeLag = false, 0

	at := time.Now().UnixNano()
	out := newWriter(t, cfg).Begin(t.Context(), at, 2000)
	var aggs []lag.TopicLag
	var parts []lag.PartitionGauge
	for _, lags := range groups {
		out.Pairs(lags)
		aggs = lag.Aggregate(aggs, lags)
		if lags[0].Group == "group-000100" || lags[0].Group == "group-000001" {
			for _, pl := range lags {
				parts = append(parts, lag.PartitionGauge{Partition: &lag.Partition{TopicPartition: pl.TopicPartition, End: pl.End, HasEnd: pl.HasEnd}})
			}
		}
	}
	out.Aggregates(aggs)
	out.Partitions(parts)
	md, err := out.Finish()
	require.NoError(t, err)

	byTopic := func(name string) map[string]bool {
		seen := map[string]bool{}
		emit.EachMetric(md, func(metric pmetric.Metric) {
			if metric.Name() != name {
				return
			}
			dps := metric.Gauge().DataPoints()
			for i := range dps.Len() {
				topic, _ := dps.At(i).Attributes().Get("topic")
				group, ok := dps.At(i).Attributes().Get("group")
				key := topic.Str()
				if ok {
					key = group.Str() + "/" + key
				}
				seen[key] = true
			}
		})
		return seen
	}
	lagByTopic := byTopic("kafka.consumer_group.lag")
	require.False(t, lagByTopic["topic-000"], "summed over a pair whose end offset is unread")
	require.True(t, lagByTopic["topic-001"])
	require.Len(t, lagByTopic, 99)
	timeLag := byTopic("kafka.consumer_group.time_lag")
	require.False(t, timeLag["group-000100/topic-000"])
	require.False(t, timeLag["group-000001/topic-001"], "the worst of the partitions with a time lag")
	require.True(t, timeLag["group-000000/topic-000"])
	require.Len(t, timeLag, 198)
	lagSum := byTopic("kafka.consumer_group.lag_sum")
	require.False(t, lagSum["topic-000"])
	require.Len(t, lagSum, 99)
	offsets := byTopic("kafka.partition.current_offset")
	require.False(t, offsets["topic-000"])
	require.True(t, offsets["topic-001"])
}

// TestPointsFoldedOverGroupsWithAGroupUnread: while a group is not read, a
// point folded over groups (lag per topic, lag_max over everything) could
// be missing that group's part, and is left out; points that keep the group
// (time_lag per (group, topic)) and the partitions' own gauges are sent;
// the share groups' metrics are withheld only for a share group unread.
func TestPointsFoldedOverGroupsWithAGroupUnread(t *testing.T) {
	cfg := reducedSettings()
	cfg.Metrics.KafkaConsumerGroupLagMax.EnabledAttributes = []metadata.KafkaConsumerGroupLagMaxMetricAttributeKey{}
	groups := reducedGroups(200)
	write := func(unread, shareUnread bool) map[string]map[string]float64 {
		out := newWriter(t, cfg).Begin(t.Context(), time.Now().UnixNano(), 200)
		if unread {
			out.GroupsUnread(false)
		}
		if shareUnread {
			out.GroupsUnread(true)
		}
		var aggs []lag.TopicLag
		for _, lags := range groups {
			out.Pairs(lags)
			aggs = lag.Aggregate(aggs, lags)
		}
		out.Aggregates(aggs)
		md, err := out.Finish()
		require.NoError(t, err)
		return pointsByAttributes(md)
	}

	all := write(false, false)
	require.Len(t, all["kafka.consumer_group.lag"], 20)
	require.Len(t, all["kafka.consumer_group.lag_max"], 1)
	require.Equal(t, all, write(false, true), "a share group unread leaves the consumer groups' points alone")

	partial := write(true, false)
	require.NotContains(t, partial, "kafka.consumer_group.lag", "lag per topic, summed over groups")
	require.NotContains(t, partial, "kafka.consumer_group.lag_max", "lag_max over every group")
	require.Equal(t, all["kafka.consumer_group.time_lag"], partial["kafka.consumer_group.time_lag"], "per (group, topic): each group's own")
	require.Equal(t, all["kafka.consumer_group.lag_sum"], partial["kafka.consumer_group.lag_sum"])
}
