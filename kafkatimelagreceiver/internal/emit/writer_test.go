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
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/health"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/progress"
)

func newSettings() *emit.Settings {
	return &emit.Settings{MetricsBuilderConfig: emit.DefaultMetricsBuilderConfig(), Replica: "test"}
}

func newWriter(t testing.TB, cfg *emit.Settings) *emit.Writer {
	t.Helper()
	w, err := emit.New(*cfg, receivertest.NewNopSettings(metadata.Type))
	require.NoError(t, err)
	return w
}

// directTestWriter has the per-partition oldest offset and per-pair offset
// on besides the defaults, and what configure sets.
func directTestWriter(t *testing.T, configure func(*emit.Settings)) *emit.Writer {
	t.Helper()
	cfg := newSettings()
	cfg.Metrics.KafkaPartitionOldestOffset.Enabled = true
	cfg.Metrics.KafkaConsumerGroupOffset.Enabled = true
	if configure != nil {
		configure(cfg)
	}
	return newWriter(t, cfg)
}

func directTestSnapshot() (*lag.Snapshot, []lag.PartitionLag) {
	now := time.Now().UnixNano()
	tp0, tp1 := kafka.TopicPartition{Topic: "orders", Partition: 0}, kafka.TopicPartition{Topic: "orders", Partition: 1}
	snap := &lag.Snapshot{
		At:        now,
		Committed: kafka.CommitsByGroup(map[string]map[kafka.TopicPartition]int64{"billing": {tp0: 2, tp1: 5}}),
		End:       map[kafka.TopicPartition]int64{tp0: 10, tp1: 9},
		Start:     map[kafka.TopicPartition]int64{tp0: 4, tp1: 0},
		Stable:    map[kafka.TopicPartition]int64{tp0: 8, tp1: 9},
	}
	est := lag.Estimate(lag.NewIndex(snap), func(_ int32, c int64) (int64, lag.Method, bool) {
		return now - c*int64(time.Second), lag.MethodTable, true
	})
	lags := est.GroupLags(nil, "billing", snap.At)
	return snap, lags
}

// emitScrape writes a scrape of one group's lags (every pair STALL, a drain
// time of 30 s each), every partition producing 5 records/s, and its
// aggregates when asked, through the metric writer, in one piece.
func emitScrape(t *testing.T, w *emit.Writer, snap *lag.Snapshot, lags []lag.PartitionLag, withAggregates bool) pmetric.Metrics {
	t.Helper()
	out := w.Begin(t.Context(), snap.At, len(lags))
	statuses := make([]health.Status, len(lags))
	for i := range statuses {
		statuses[i] = health.StatusStall
	}
	out.PartitionStatuses(lags, statuses)
	drains := make([]progress.Partition, len(lags))
	for i := range drains {
		drains[i] = progress.Partition{Drain: 30, HasDrain: true}
	}
	out.PartitionDrains(lags, drains)
	out.Pairs(lags)
	if withAggregates {
		out.Aggregates(lag.Aggregate(nil, lags))
	}
	idx := lag.NewIndex(snap)
	parts := make([]lag.PartitionGauge, len(idx.Parts))
	for i := range idx.Parts {
		parts[i] = lag.PartitionGauge{Partition: &idx.Parts[i], ProduceRate: 5, HasProduceRate: idx.Parts[i].HasEnd}
	}
	out.Partitions(parts)
	out.TopicProduceRates(lag.TopicProduceRates(parts))
	md, err := out.Finish()
	require.NoError(t, err)
	return md
}

func metricsByName(md pmetric.Metrics) map[string]pmetric.Metric {
	out := map[string]pmetric.Metric{}
	emit.EachMetric(md, func(m pmetric.Metric) { out[m.Name()] = m })
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

	w := directTestWriter(t, func(cfg *emit.Settings) {
		cfg.Metrics.KafkaConsumerGroupPartitionStatus.Enabled = true
		cfg.Metrics.KafkaConsumerGroupStableLag.Enabled = true
		cfg.Metrics.KafkaConsumerGroupPartitionTimeToDrain.Enabled = true
	})
	snap, lags := directTestSnapshot()
	direct := pmetric.NewMetricSlice()
	emit.EachMetric(emitScrape(t, w, snap, lags, false), func(m pmetric.Metric) { m.CopyTo(direct.AppendEmpty()) })
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

// A user who reduces a metric's attributes gets its points folded by the
// remaining attributes, as the builder folds them.
func TestReducedAttributesAreFolded(t *testing.T) {
	w := directTestWriter(t, func(cfg *emit.Settings) {
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
	md := emitScrape(t, w, snap, lags, true)
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
	w := directTestWriter(t, func(cfg *emit.Settings) {
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
	md := emitScrape(t, w, snap, lags, false)
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
		out[i].health.Assigned = health.AssignedPartitions(out[i].health.Description)
		if i == 1 {
			out[i].health.RebalancesSince = rebalancesSince
		}
	}
	return out
}

// allGroupMetricsConfig turns every per-group and per-(group, topic) metric
// on, with all its attributes.
func allGroupMetricsConfig(cfg *emit.Settings) {
	cfg.Metrics.KafkaConsumerGroupAssignedPartitions.Enabled = true
	cfg.Metrics.KafkaConsumerGroupStatus.Enabled = true
	cfg.Metrics.KafkaConsumerGroupState.Enabled = true
	cfg.Metrics.KafkaConsumerGroupMembers.Enabled = true
	cfg.Metrics.KafkaConsumerGroupRebalances.Enabled = true
}

func writeGroups(t testing.TB, cfg *emit.Settings, at time.Time, groups []groupFixture) pmetric.Metrics {
	t.Helper()
	sw := newWriter(t, cfg).Begin(context.Background(), at.UnixNano(), 0)
	aggs := make([]lag.TopicLag, 0, len(groups))
	for _, g := range groups {
		sw.GroupHealth(g.health)
		sw.GroupProgress([]progress.Topic{g.progress})
		aggs = append(aggs, g.agg)
	}
	sw.Aggregates(aggs)
	md, err := sw.Finish()
	require.NoError(t, err)
	return md
}

// TestGroupMetricsMatchBuilder: the per-group metrics written directly are
// what the generated builder writes for the same values, point for point:
// name, description, unit, type, attributes, value and timestamps (a
// rebalance count that started late carries its own start, and a gauge
// none).
func TestGroupMetricsMatchBuilder(t *testing.T) {
	cfg := newSettings()
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
	gotStart := got[metadata.MetricsInfo.KafkaConsumerGroupRebalances.Name].Sum().DataPoints().At(0).StartTimestamp()
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
			// instants; each stamps its own start on every point of a
			// sum, but the group whose count started later carries that
			// start. A gauge's points carry none: OTLP ignores it.
			wantStart := gotStart
			switch {
			case w.Type() == pmetric.MetricTypeGauge:
				wantStart = 0
			case name == metadata.MetricsInfo.KafkaConsumerGroupRebalances.Name && i == 1:
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
// removed, points that became equal are still aggregated,
// by default as the metric means (groups counted per status, lag summed).
func TestGroupMetricsWithAttributesRemovedAreAggregated(t *testing.T) {
	cfg := newSettings()
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
			cfg := newSettings()
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
	groupAndTopic := func(cfg *emit.Settings) {
		cfg.Metrics.KafkaConsumerGroupTimeLag.EnabledAttributes = []metadata.KafkaConsumerGroupTimeLagMetricAttributeKey{
			metadata.KafkaConsumerGroupTimeLagMetricAttributeKeyGroup, metadata.KafkaConsumerGroupTimeLagMetricAttributeKeyTopic}
		cfg.Metrics.KafkaConsumerGroupLag.EnabledAttributes = []metadata.KafkaConsumerGroupLagMetricAttributeKey{
			metadata.KafkaConsumerGroupLagMetricAttributeKeyGroup, metadata.KafkaConsumerGroupLagMetricAttributeKeyTopic}
	}
	snap, lags := directTestSnapshot() // lags 8 and 4; time lags 4 s and 5 s
	got := metricsByName(emitScrape(t, directTestWriter(t, groupAndTopic), snap, lags, false))
	timeLag, lagPoints := got["kafka.consumer_group.time_lag"].Gauge().DataPoints(), got["kafka.consumer_group.lag"].Gauge().DataPoints()
	require.Equal(t, 1, timeLag.Len())
	require.InDelta(t, 5.0, timeLag.At(0).DoubleValue(), 0.01, "the worst partition")
	require.Equal(t, 1, lagPoints.Len())
	require.Equal(t, int64(12), lagPoints.At(0).IntValue(), "the partitions' lag added up")

	averaged := metricsByName(emitScrape(t, directTestWriter(t, func(cfg *emit.Settings) {
		groupAndTopic(cfg)
		cfg.Metrics.KafkaConsumerGroupTimeLag.AggregationStrategy = metadata.AggregationStrategyAvg
	}), snap, lags, false))
	require.InDelta(t, 4.5, averaged["kafka.consumer_group.time_lag"].Gauge().DataPoints().At(0).DoubleValue(), 0.01, "the user's avg")
}

func oneIf(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
