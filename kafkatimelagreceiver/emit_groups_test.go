package kafkatimelagreceiver

import (
	"context"
	"fmt"
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

// groupFixture is what one group contributes to a scrape's per-group and
// per-(group, topic) metrics.
type groupFixture struct {
	health   health.GroupHealth
	agg      lag.TopicLag
	progress progress.Topic
}

func groupFixtures(n int, rebalancesSince int64) []groupFixture {
	out := make([]groupFixture, n)
	for i := range out {
		g := fmt.Sprintf("group-%05d", i)
		out[i] = groupFixture{
			health: health.GroupHealth{
				Group:     g,
				Described: true,
				Description: kafka.GroupDescription{State: kafka.GroupStateStable, Protocol: "range", Members: []kafka.GroupMember{
					{ClientID: "c1", Host: "h1", Assignment: make([]kafka.TopicPartition, 2), AssignmentKnown: true},
					{ClientID: "c2", Host: "h2", InstanceID: "static-2", Assignment: make([]kafka.TopicPartition, 1), AssignmentKnown: true},
				}},
				Protocol:    "range",
				Rebalances:  int64(i % 3),
				StatusKnown: true,
				Status:      health.Statuses[i%len(health.Statuses)],
			},
			agg:      lag.TopicLag{Group: g, Topic: "t", LagSum: int64(10 * i), LagMax: int64(i), HasLag: true, TimeLagMax: float64(i) / 2, HasTimeLag: true},
			progress: progress.Topic{Group: g, Topic: "t", ConsumeRate: 1.5, HasConsumeRate: true, Trend: -0.5, HasTrend: true, Drain: float64(i), HasDrain: i%2 == 0, Stuck: 3, HasStuck: true},
		}
		if i == 1 {
			out[i].health.RebalancesSince = rebalancesSince
		}
	}
	return out
}

// allGroupMetricsConfig turns every per-group and per-(group, topic) metric
// on, with all its attributes.
func allGroupMetricsConfig(cfg *Config) {
	cfg.Metrics.KafkaConsumerGroupAssignedPartitions.Enabled = true
	cfg.Metrics.KafkaConsumerGroupStatus.Enabled = true
	cfg.Metrics.KafkaConsumerGroupState.Enabled = true
	cfg.Metrics.KafkaConsumerGroupMembers.Enabled = true
	cfg.Metrics.KafkaConsumerGroupRebalances.Enabled = true
}

func writeGroups(t testing.TB, cfg *Config, at time.Time, groups []groupFixture) pmetric.Metrics {
	t.Helper()
	w := newMetricWriter(cfg, receivertest.NewNopSettings(metadata.Type), nil)
	sw := w.begin(context.Background(), at.UnixNano(), 0)
	aggs := make([]lag.TopicLag, 0, len(groups))
	for _, g := range groups {
		sw.groupHealth(g.health)
		sw.groupProgress([]progress.Topic{g.progress})
		aggs = append(aggs, g.agg)
	}
	sw.aggregates(aggs)
	md, err := sw.finish()
	require.NoError(t, err)
	return md
}

// TestGroupMetricsMatchBuilder: the per-group metrics written directly are
// what the generated builder writes for the same values, point for point:
// name, description, unit, type, attributes, value and timestamps (a
// rebalance count that started late carries its own start).
func TestGroupMetricsMatchBuilder(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	allGroupMetricsConfig(cfg)
	at := time.Now()
	since := at.Add(-time.Minute).UnixNano()
	groups := groupFixtures(4, since)
	got := metricsByName(writeGroups(t, cfg, at, groups))

	mb := metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, receivertest.NewNopSettings(metadata.Type))
	ts := pcommon.NewTimestampFromTime(at)
	for _, g := range groups {
		h := g.health
		mb.RecordKafkaConsumerGroupRebalancesDataPoint(ts, h.Rebalances, h.Group)
		for _, st := range health.Statuses {
			mb.RecordKafkaConsumerGroupStatusDataPoint(ts, oneIf(st == h.Status), h.Group, metadata.MapAttributeStatus[st.String()])
		}
		for _, st := range kafka.GroupStates {
			mb.RecordKafkaConsumerGroupStateDataPoint(ts, oneIf(st == h.Description.State), h.Group, metadata.MapAttributeState[st.String()])
		}
		mb.RecordKafkaConsumerGroupMembersDataPoint(ts, 2, h.Group, h.Protocol)
		mb.RecordKafkaConsumerGroupAssignedPartitionsDataPoint(ts, 2, h.Group, "c1", "h1", "")
		mb.RecordKafkaConsumerGroupAssignedPartitionsDataPoint(ts, 1, h.Group, "c2", "h2", "static-2")
		p := g.progress
		mb.RecordKafkaConsumerGroupConsumeRateDataPoint(ts, p.ConsumeRate, p.Group, p.Topic)
		mb.RecordKafkaConsumerGroupLagTrendDataPoint(ts, p.Trend, p.Group, p.Topic)
		if p.HasDrain {
			mb.RecordKafkaConsumerGroupTimeToDrainDataPoint(ts, p.Drain, p.Group, p.Topic)
		}
		mb.RecordKafkaConsumerGroupStuckTimeDataPoint(ts, p.Stuck, p.Group, p.Topic)
	}
	for _, g := range groups {
		a := g.agg
		mb.RecordKafkaConsumerGroupLagSumDataPoint(ts, a.LagSum, a.Group, a.Topic)
		mb.RecordKafkaConsumerGroupLagMaxDataPoint(ts, a.LagMax, a.Group, a.Topic)
		mb.RecordKafkaConsumerGroupTimeLagMaxDataPoint(ts, a.TimeLagMax, a.Group, a.Topic)
	}
	want := metricsByName(mb.Emit())
	gotStart := got[rebalancesMetric].Sum().DataPoints().At(0).StartTimestamp()
	require.NotZero(t, gotStart)

	require.Len(t, got, len(want))
	for name, w := range want {
		g, ok := got[name]
		require.True(t, ok, "no %s", name)
		require.Equal(t, w.Description(), g.Description(), name)
		require.Equal(t, w.Unit(), g.Unit(), name)
		require.Equal(t, w.Type(), g.Type(), name)
		wantPoints, gotPoints := numberPoints(w), numberPoints(g)
		if w.Type() == pmetric.MetricTypeSum {
			require.Equal(t, w.Sum().IsMonotonic(), g.Sum().IsMonotonic(), name)
			require.Equal(t, w.Sum().AggregationTemporality(), g.Sum().AggregationTemporality(), name)
		}
		require.Equal(t, wantPoints.Len(), gotPoints.Len(), name)
		for i := range wantPoints.Len() {
			wp, gp := wantPoints.At(i), gotPoints.At(i)
			require.Equal(t, wp.Attributes().AsRaw(), gp.Attributes().AsRaw(), "%s point %d", name, i)
			require.Equal(t, wp.ValueType(), gp.ValueType(), "%s point %d", name, i)
			require.Equal(t, wp.IntValue(), gp.IntValue(), "%s point %d", name, i)
			require.Equal(t, wp.DoubleValue(), gp.DoubleValue(), "%s point %d", name, i)
			require.Equal(t, wp.Timestamp(), gp.Timestamp(), "%s point %d", name, i)
			// The builder and the writer were created at different
			// instants; each stamps its own start on every point, but
			// the group whose count started later carries that start.
			wantStart := gotStart
			if name == rebalancesMetric && i == 1 {
				wantStart = pcommon.Timestamp(since)
			}
			require.Equal(t, wantStart, gp.StartTimestamp(), "%s point %d", name, i)
		}
	}
}

func numberPoints(m pmetric.Metric) pmetric.NumberDataPointSlice {
	if m.Type() == pmetric.MetricTypeSum {
		return m.Sum().DataPoints()
	}
	return m.Gauge().DataPoints()
}

// TestGroupMetricsWithAttributesRemovedAreAggregated: with an attribute
// removed, points that became equal are still aggregated by the builder,
// by default as the metric means (groups counted per status, lag summed).
func TestGroupMetricsWithAttributesRemovedAreAggregated(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	allGroupMetricsConfig(cfg)
	cfg.Metrics.KafkaConsumerGroupStatus.EnabledAttributes = []metadata.KafkaConsumerGroupStatusMetricAttributeKey{metadata.KafkaConsumerGroupStatusMetricAttributeKeyStatus}
	cfg.Metrics.KafkaConsumerGroupLagSum.EnabledAttributes = []metadata.KafkaConsumerGroupLagSumMetricAttributeKey{metadata.KafkaConsumerGroupLagSumMetricAttributeKeyTopic}
	groups := groupFixtures(10, 0)
	got := metricsByName(writeGroups(t, cfg, time.Now(), groups))

	statuses := got["kafka.consumer_group.status"].Gauge().DataPoints()
	require.Equal(t, len(health.Statuses), statuses.Len(), "one point per status, summed over the groups")
	total := int64(0)
	for i := range statuses.Len() {
		require.Equal(t, 1, statuses.At(i).Attributes().Len())
		total += statuses.At(i).IntValue()
	}
	require.Equal(t, int64(len(groups)), total, "every group counted once")

	sums := got["kafka.consumer_group.lag_sum"].Gauge().DataPoints()
	require.Equal(t, 1, sums.Len(), "one topic")
	require.Equal(t, map[string]any{"topic": "t"}, sums.At(0).Attributes().AsRaw())
	require.Equal(t, int64(10*(0+1+2+3+4+5+6+7+8+9)), sums.At(0).IntValue(), "the groups' lag summed")
	require.Equal(t, len(groups), got["kafka.consumer_group.lag_max"].Gauge().DataPoints().Len(), "lag_max keeps its attributes: direct")
}

// BenchmarkWriteGroups: the per-group and per-(group, topic) metrics of
// one scrape of many groups (5 status, 6 state, members, rebalances, 2
// assigned_partitions, 3 aggregates and 4 progress points a group).
func BenchmarkWriteGroups(b *testing.B) {
	for _, n := range []int{500, 5000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			cfg := createDefaultConfig().(*Config)
			allGroupMetricsConfig(cfg)
			groups := groupFixtures(n, 0)
			at := time.Now()
			points := 0
			b.ReportAllocs()
			for b.Loop() {
				points = writeGroups(b, cfg, at, groups).DataPointCount()
			}
			b.ReportMetric(float64(points), "points/op")
		})
	}
}

// TestDroppedPartitionKeepsTheWorstTimeLag: with partition dropped from the
// per-pair gauges and no aggregation_strategy set, time lag is the worst
// partition's (not their average, which would hide a partition hours
// behind) and lag the partitions' sum; a strategy the user sets wins.
func TestDroppedPartitionKeepsTheWorstTimeLag(t *testing.T) {
	groupAndTopic := func(cfg *Config) {
		cfg.Metrics.KafkaConsumerGroupTimeLag.EnabledAttributes = []metadata.KafkaConsumerGroupTimeLagMetricAttributeKey{
			metadata.KafkaConsumerGroupTimeLagMetricAttributeKeyGroup, metadata.KafkaConsumerGroupTimeLagMetricAttributeKeyTopic}
		cfg.Metrics.KafkaConsumerGroupLag.EnabledAttributes = []metadata.KafkaConsumerGroupLagMetricAttributeKey{
			metadata.KafkaConsumerGroupLagMetricAttributeKeyGroup, metadata.KafkaConsumerGroupLagMetricAttributeKeyTopic}
	}
	snap, lags := directTestSnapshot() // lags 8 and 4; time lags 4 s and 5 s
	got := metricsByName(emitScrape(t, directTestScraper(t, groupAndTopic), snap, lags, false))
	timeLag, lagPoints := got["kafka.consumer_group.time_lag"].Gauge().DataPoints(), got["kafka.consumer_group.lag"].Gauge().DataPoints()
	require.Equal(t, 1, timeLag.Len())
	require.InDelta(t, 5.0, timeLag.At(0).DoubleValue(), 0.01, "the worst partition")
	require.Equal(t, 1, lagPoints.Len())
	require.Equal(t, int64(12), lagPoints.At(0).IntValue(), "the partitions' lag added up")

	averaged := metricsByName(emitScrape(t, directTestScraper(t, func(cfg *Config) {
		groupAndTopic(cfg)
		cfg.Metrics.KafkaConsumerGroupTimeLag.AggregationStrategy = metadata.AggregationStrategyAvg
	}), snap, lags, false))
	require.InDelta(t, 4.5, averaged["kafka.consumer_group.time_lag"].Gauge().DataPoints().At(0).DoubleValue(), 0.01, "the user's avg")
}
