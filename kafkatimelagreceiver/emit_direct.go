package kafkatimelagreceiver

// The per-pair and per-partition gauges are built directly into a
// pmetric.MetricSlice, not through the generated MetricsBuilder: mdatagen's
// recordDataPoint searches every point already recorded for the metric for
// one with equal attributes (to reaggregate), which is quadratic in points:
// 4.4 s a scrape at 10,000 pairs, minutes at 100,000. (group, topic,
// partition) is unique within a scrape, so there is nothing to reaggregate.
// Names, descriptions and units must match metadata.yaml; a test compares
// them with the builder's. A metric whose attributes the user reduced (the
// generated `attributes` setting) does need re-aggregation, so it keeps going
// through the builder.

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

func appendGauge(ms pmetric.MetricSlice, enabled bool, name, description, unit string, capacity int) (pmetric.NumberDataPointSlice, bool) {
	if !enabled {
		return pmetric.NumberDataPointSlice{}, false
	}
	m := ms.AppendEmpty()
	m.SetName(name)
	m.SetDescription(description)
	m.SetUnit(unit)
	dps := m.SetEmptyGauge().DataPoints()
	dps.EnsureCapacity(capacity)
	return dps, true
}

func pairPoint(dps pmetric.NumberDataPointSlice, start, ts pcommon.Timestamp, group, topic string, partition int64) pmetric.NumberDataPoint {
	dp := dps.AppendEmpty()
	dp.SetStartTimestamp(start)
	dp.SetTimestamp(ts)
	attrs := dp.Attributes()
	attrs.EnsureCapacity(3)
	attrs.PutStr("group", group)
	attrs.PutStr("topic", topic)
	attrs.PutInt("partition", partition)
	return dp
}

func partitionPoint(dps pmetric.NumberDataPointSlice, start, ts pcommon.Timestamp, tp topicPartition, value int64) {
	dp := dps.AppendEmpty()
	dp.SetStartTimestamp(start)
	dp.SetTimestamp(ts)
	attrs := dp.Attributes()
	attrs.EnsureCapacity(2)
	attrs.PutStr("topic", tp.topic)
	attrs.PutInt("partition", int64(tp.partition))
	dp.SetIntValue(value)
}

// emitDirect appends the per-pair gauges of lags and the per-partition gauges
// of the snapshot to ms. Empty gauges are left out.
func (s *timeLagScraper) emitDirect(ms pmetric.MetricSlice, snap *snapshot, lags []partitionLag) {
	ts := pcommon.Timestamp(snap.at)
	start := s.startTime
	m := s.cfg.Metrics
	n := len(lags)
	from := ms.Len()
	const pairAttributes, partitionAttributes = 3, 2
	offsetDirect := len(m.KafkaConsumerGroupOffset.EnabledAttributes) == pairAttributes
	lagDirect := len(m.KafkaConsumerGroupLag.EnabledAttributes) == pairAttributes
	lostDirect := len(m.KafkaConsumerGroupLostMessages.EnabledAttributes) == pairAttributes
	timeLagDirect := len(m.KafkaConsumerGroupTimeLag.EnabledAttributes) == pairAttributes
	offset, offsetOn := appendGauge(ms, offsetDirect && m.KafkaConsumerGroupOffset.Enabled && n > 0, "kafka.consumer_group.offset", "Committed offset of the group on the partition.", "{offset}", n)
	lag, lagOn := appendGauge(ms, lagDirect && m.KafkaConsumerGroupLag.Enabled && n > 0, "kafka.consumer_group.lag", "Offset lag of the group on the partition, max(0, end offset - committed offset).", "{message}", n)
	lost, lostOn := appendGauge(ms, lostDirect && m.KafkaConsumerGroupLostMessages.Enabled && n > 0, "kafka.consumer_group.lost_messages", "Records the group never consumed because retention deleted them: log start offset minus committed offset, when positive.", "{message}", 0)
	timeLag, timeLagOn := appendGauge(ms, timeLagDirect && m.KafkaConsumerGroupTimeLag.Enabled && n > 0, "kafka.consumer_group.time_lag", "Estimated time since the oldest record the group has not consumed was appended (0 when the group is caught up). Omitted when no estimate can be made.", "s", n)
	omitted := 0
	for _, pl := range lags {
		partition := int64(pl.partition)
		if offsetOn {
			pairPoint(offset, start, ts, pl.group, pl.topic, partition).SetIntValue(pl.committed)
		} else if !offsetDirect {
			s.mb.RecordKafkaConsumerGroupOffsetDataPoint(ts, pl.committed, pl.group, pl.topic, partition)
		}
		if !pl.hasEnd {
			continue
		}
		if lagOn {
			pairPoint(lag, start, ts, pl.group, pl.topic, partition).SetIntValue(pl.lag)
		} else if !lagDirect {
			s.mb.RecordKafkaConsumerGroupLagDataPoint(ts, pl.lag, pl.group, pl.topic, partition)
		}
		if pl.lost > 0 {
			if lostOn {
				pairPoint(lost, start, ts, pl.group, pl.topic, partition).SetIntValue(pl.lost)
			} else if !lostDirect {
				s.mb.RecordKafkaConsumerGroupLostMessagesDataPoint(ts, pl.lost, pl.group, pl.topic, partition)
			}
		}
		if !pl.hasTimeLag {
			omitted++
		} else if timeLagOn {
			pairPoint(timeLag, start, ts, pl.group, pl.topic, partition).SetDoubleValue(pl.timeLag)
		} else if !timeLagDirect {
			s.mb.RecordKafkaConsumerGroupTimeLagDataPoint(ts, pl.timeLag, pl.group, pl.topic, partition)
		}
	}
	if omitted > 0 {
		s.logger.Debug("time lag omitted: no table point or record brackets the committed offset", zap.Int("partitions", omitted))
	}
	partitions := sortedKeys(snap.end)
	currentDirect := len(m.KafkaPartitionCurrentOffset.EnabledAttributes) == partitionAttributes
	oldestDirect := len(m.KafkaPartitionOldestOffset.EnabledAttributes) == partitionAttributes
	current, currentOn := appendGauge(ms, currentDirect && m.KafkaPartitionCurrentOffset.Enabled, "kafka.partition.current_offset", "End offset (high watermark) of the partition.", "{offset}", len(partitions))
	oldest, oldestOn := appendGauge(ms, oldestDirect && m.KafkaPartitionOldestOffset.Enabled, "kafka.partition.oldest_offset", "Log start offset (oldest available offset) of the partition.", "{offset}", len(partitions))
	for _, tp := range partitions {
		if currentOn {
			partitionPoint(current, start, ts, tp, snap.end[tp])
		} else if !currentDirect {
			s.mb.RecordKafkaPartitionCurrentOffsetDataPoint(ts, snap.end[tp], tp.topic, int64(tp.partition))
		}
		if st, ok := snap.start[tp]; ok {
			if oldestOn {
				partitionPoint(oldest, start, ts, tp, st)
			} else if !oldestDirect {
				s.mb.RecordKafkaPartitionOldestOffsetDataPoint(ts, st, tp.topic, int64(tp.partition))
			}
		}
	}
	i := 0
	ms.RemoveIf(func(x pmetric.Metric) bool {
		i++
		return i > from && x.Gauge().DataPoints().Len() == 0
	})
}

// withDirect moves the direct gauges into md's scope, creating the resource
// and scope when the builder emitted nothing.
func (s *timeLagScraper) withDirect(md pmetric.Metrics, direct pmetric.MetricSlice) pmetric.Metrics {
	if direct.Len() == 0 {
		return md
	}
	var sm pmetric.ScopeMetrics
	if md.ResourceMetrics().Len() == 0 {
		rm := md.ResourceMetrics().AppendEmpty()
		if s.cfg.ClusterAlias != "" && s.cfg.ResourceAttributes.KafkaClusterAlias.Enabled {
			rm.Resource().Attributes().PutStr("kafka.cluster.alias", s.cfg.ClusterAlias)
		}
		sm = rm.ScopeMetrics().AppendEmpty()
		sm.Scope().SetName(metadata.ScopeName)
		sm.Scope().SetVersion(s.buildVersion)
	} else {
		sm = md.ResourceMetrics().At(0).ScopeMetrics().At(0)
	}
	direct.MoveAndAppendTo(sm.Metrics())
	return md
}
