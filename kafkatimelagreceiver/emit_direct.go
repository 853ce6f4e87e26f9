package kafkatimelagreceiver

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

// metricInfo is what the generated code says of a metric besides its name.
// sum is set for the one cumulative sum written directly.
type metricInfo struct {
	description, unit string
	sum               bool
	monotonic         bool
	temporality       pmetric.AggregationTemporality
}

// generatedMetricInfo reads the description, unit and type of every metric
// written without the builder from what the generated builder writes, so
// that metadata.yaml stays the one source of both paths' metadata.
func generatedMetricInfo(settings receiver.Settings) map[string]metricInfo {
	cfg := metadata.NewDefaultMetricsBuilderConfig()
	m := &cfg.Metrics
	m.KafkaConsumerGroupOffset.Enabled = true
	m.KafkaConsumerGroupLag.Enabled = true
	m.KafkaConsumerGroupLostMessages.Enabled = true
	m.KafkaConsumerGroupStableLag.Enabled = true
	m.KafkaConsumerGroupTimeLag.Enabled = true
	m.KafkaConsumerGroupPartitionStatus.Enabled = true
	m.KafkaPartitionCurrentOffset.Enabled = true
	m.KafkaPartitionOldestOffset.Enabled = true
	m.KafkaPartitionProduceRate.Enabled = true
	m.KafkaConsumerGroupPartitionTimeToDrain.Enabled = true
	m.KafkaConsumerGroupRebalances.Enabled = true
	m.KafkaConsumerGroupStatus.Enabled = true
	m.KafkaConsumerGroupState.Enabled = true
	m.KafkaConsumerGroupMembers.Enabled = true
	m.KafkaConsumerGroupAssignedPartitions.Enabled = true
	m.KafkaConsumerGroupLagSum.Enabled = true
	m.KafkaConsumerGroupLagMax.Enabled = true
	m.KafkaConsumerGroupTimeLagMax.Enabled = true
	m.KafkaConsumerGroupConsumeRate.Enabled = true
	m.KafkaConsumerGroupLagTrend.Enabled = true
	m.KafkaConsumerGroupTimeToDrain.Enabled = true
	m.KafkaConsumerGroupStuckTime.Enabled = true
	m.KafkaConsumerGroupPartitionOwner.Enabled = true
	m.KafkaConsumerGroupRetentionMargin.Enabled = true
	m.KafkaConsumerGroupPartitionRetentionMargin.Enabled = true
	mb := metadata.NewMetricsBuilder(cfg, settings)
	var ts pcommon.Timestamp
	mb.RecordKafkaConsumerGroupOffsetDataPoint(ts, 0, "", "", 0)
	mb.RecordKafkaConsumerGroupLagDataPoint(ts, 0, "", "", 0)
	mb.RecordKafkaConsumerGroupLostMessagesDataPoint(ts, 0, "", "", 0)
	mb.RecordKafkaConsumerGroupStableLagDataPoint(ts, 0, "", "", 0)
	mb.RecordKafkaConsumerGroupTimeLagDataPoint(ts, 0, "", "", 0)
	mb.RecordKafkaConsumerGroupPartitionStatusDataPoint(ts, 0, "", "", 0, metadata.AttributeStatusOK)
	mb.RecordKafkaPartitionCurrentOffsetDataPoint(ts, 0, "", 0)
	mb.RecordKafkaPartitionOldestOffsetDataPoint(ts, 0, "", 0)
	mb.RecordKafkaPartitionProduceRateDataPoint(ts, 0, "", 0)
	mb.RecordKafkaConsumerGroupPartitionTimeToDrainDataPoint(ts, 0, "", "", 0)
	mb.RecordKafkaConsumerGroupRebalancesDataPoint(ts, 0, "")
	mb.RecordKafkaConsumerGroupStatusDataPoint(ts, 0, "", metadata.AttributeStatusOK)
	mb.RecordKafkaConsumerGroupStateDataPoint(ts, 0, "", metadata.AttributeStateStable)
	mb.RecordKafkaConsumerGroupMembersDataPoint(ts, 0, "", "")
	mb.RecordKafkaConsumerGroupAssignedPartitionsDataPoint(ts, 0, "", "", "", "")
	mb.RecordKafkaConsumerGroupLagSumDataPoint(ts, 0, "", "")
	mb.RecordKafkaConsumerGroupLagMaxDataPoint(ts, 0, "", "")
	mb.RecordKafkaConsumerGroupTimeLagMaxDataPoint(ts, 0, "", "")
	mb.RecordKafkaConsumerGroupConsumeRateDataPoint(ts, 0, "", "")
	mb.RecordKafkaConsumerGroupLagTrendDataPoint(ts, 0, "", "")
	mb.RecordKafkaConsumerGroupTimeToDrainDataPoint(ts, 0, "", "")
	mb.RecordKafkaConsumerGroupStuckTimeDataPoint(ts, 0, "", "")
	mb.RecordKafkaConsumerGroupPartitionOwnerDataPoint(ts, 0, "", "", 0, "", "", "")
	mb.RecordKafkaConsumerGroupRetentionMarginDataPoint(ts, 0, "", "")
	mb.RecordKafkaConsumerGroupPartitionRetentionMarginDataPoint(ts, 0, "", "", 0)
	out := map[string]metricInfo{}
	eachMetric(mb.Emit(), func(m pmetric.Metric) {
		info := metricInfo{description: m.Description(), unit: m.Unit()}
		if m.Type() == pmetric.MetricTypeSum {
			info.sum, info.monotonic, info.temporality = true, m.Sum().IsMonotonic(), m.Sum().AggregationTemporality()
		}
		out[m.Name()] = info
	})
	return out
}

// appendGauge appends an empty gauge named name to ms, with the generated
// description and unit and room for capacity points.
func (w *metricWriter) appendGauge(ms pmetric.MetricSlice, enabled bool, name string, capacity int) (pmetric.NumberDataPointSlice, bool) {
	if !enabled {
		return pmetric.NumberDataPointSlice{}, false
	}
	return w.appendMetric(ms, name, capacity), true
}

// appendMetric appends an empty metric named name to ms, of the generated
// type, description and unit, with room for capacity points.
func (w *metricWriter) appendMetric(ms pmetric.MetricSlice, name string, capacity int) pmetric.NumberDataPointSlice {
	info := w.info[name]
	m := ms.AppendEmpty()
	m.SetName(name)
	m.SetDescription(info.description)
	m.SetUnit(info.unit)
	var dps pmetric.NumberDataPointSlice
	if info.sum {
		sum := m.SetEmptySum()
		sum.SetIsMonotonic(info.monotonic)
		sum.SetAggregationTemporality(info.temporality)
		dps = sum.DataPoints()
	} else {
		dps = m.SetEmptyGauge().DataPoints()
	}
	dps.EnsureCapacity(capacity)
	return dps
}

// allAttributes says whether a metric is on with every attribute it has:
// then its points are unique within a scrape (one per group, or per group
// and topic, ...) and are written directly. With attributes removed, points
// that became equal must be re-aggregated, which the builder does.
func allAttributes(enabled bool, attributes, all int) bool {
	return enabled && attributes == all
}

// groupMetrics holds one scrape's per-group and per-(group, topic) metrics
// written without the builder: its re-aggregation scans a metric's points
// for equal attributes at every point, which at thousands of groups cost
// seconds a scrape (five status points and seven state points a group).
// Metrics are created at their first point, in that order.
type groupMetrics struct {
	w      *metricWriter
	ms     pmetric.MetricSlice
	byName map[string]pmetric.NumberDataPointSlice
}

func (g *groupMetrics) points(name string) pmetric.NumberDataPointSlice {
	if dps, ok := g.byName[name]; ok {
		return dps
	}
	if g.byName == nil {
		g.byName = map[string]pmetric.NumberDataPointSlice{}
		g.ms = pmetric.NewMetricSlice()
	}
	dps := g.w.appendMetric(g.ms, name, 0)
	g.byName[name] = dps
	return dps
}

// point appends a point of the metric name with the string attributes
// keysAndValues (key, value, key, value, ...).
func (g *groupMetrics) point(name string, start, ts pcommon.Timestamp, keysAndValues ...string) pmetric.NumberDataPoint {
	dp := g.points(name).AppendEmpty()
	dp.SetStartTimestamp(start)
	dp.SetTimestamp(ts)
	attrs := dp.Attributes()
	attrs.EnsureCapacity(len(keysAndValues) / 2)
	for i := 0; i+1 < len(keysAndValues); i += 2 {
		attrs.PutStr(keysAndValues[i], keysAndValues[i+1])
	}
	return dp
}

// moveTo moves the metrics into ms.
func (g *groupMetrics) moveTo(ms pmetric.MetricSlice) {
	if g.byName == nil {
		return
	}
	g.ms.MoveAndAppendTo(ms)
	g.byName = nil
}
