package kafkatimelagreceiver

import (
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/health"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/retention"
)

// retentionEnabled says whether a retention margin is on; when none is,
// no topic config is read.
func (w *metricWriter) retentionEnabled() bool {
	return w.metrics.KafkaConsumerGroupRetentionMargin.Enabled || w.metrics.KafkaConsumerGroupPartitionRetentionMargin.Enabled
}

// partitionOwners writes kafka.consumer_group.partition_owner of a
// described group: one point per assigned partition.
func (sw *scrapeWriter) partitionOwners(g health.GroupHealth) {
	m := sw.w.metrics.KafkaConsumerGroupPartitionOwner
	if !m.Enabled || !g.Described || g.Description.State == kafka.GroupStateUnknown {
		return
	}
	direct := allAttributes(true, len(m.EnabledAttributes), 6)
	name, start, ts := metadata.MetricsInfo.KafkaConsumerGroupPartitionOwner.Name, sw.w.startTime, sw.ts
	for _, o := range health.PartitionOwners(g.Description) {
		if !direct {
			sw.w.mb.RecordKafkaConsumerGroupPartitionOwnerDataPoint(ts, 1, g.Group, o.Topic, int64(o.Partition), o.ClientID, o.Host, o.InstanceID)
			continue
		}
		dp := sw.groups.points(name).AppendEmpty()
		dp.SetStartTimestamp(start)
		dp.SetTimestamp(ts)
		dp.SetIntValue(1)
		// Six attributes in one allocation: at 100,000 points a scrape the
		// map's growth was a third of what the metric allocated.
		attrs := dp.Attributes()
		attrs.EnsureCapacity(6)
		attrs.PutStr("group", g.Group)
		attrs.PutStr("topic", o.Topic)
		attrs.PutInt("partition", int64(o.Partition))
		attrs.PutStr("member", o.ClientID)
		attrs.PutStr("host", o.Host)
		attrs.PutStr("group_instance_id", o.InstanceID)
	}
}

// retentionMargins writes one group's retention margins: per topic, and
// per partition when that is on. lags are the group's, sorted by (topic,
// partition).
func (sw *scrapeWriter) retentionMargins(lags []lag.PartitionLag, limits *retention.Cache, margins []retention.TopicMargin) []retention.TopicMargin {
	m, mb, info := sw.w.metrics, sw.w.mb, metadata.MetricsInfo
	if m.KafkaConsumerGroupRetentionMargin.Enabled {
		margins = limits.TopicMargins(margins[:0], lags)
		write := groupTopicGauge(sw, info.KafkaConsumerGroupRetentionMargin.Name, true,
			len(m.KafkaConsumerGroupRetentionMargin.EnabledAttributes), mb.RecordKafkaConsumerGroupRetentionMarginDataPoint)
		for _, tm := range margins {
			write(tm.Seconds, tm.Group, tm.Topic)
		}
	}
	pm := m.KafkaConsumerGroupPartitionRetentionMargin
	if !pm.Enabled {
		return margins
	}
	direct := allAttributes(true, len(pm.EnabledAttributes), 3)
	name, start, ts := info.KafkaConsumerGroupPartitionRetentionMargin.Name, sw.w.startTime, sw.ts
	for i := range lags {
		pl := &lags[i]
		limit, ok := limits.Limit(pl.Topic)
		if !ok {
			continue
		}
		margin, ok := retention.Margin(pl, limit)
		if !ok {
			continue
		}
		if !direct {
			mb.RecordKafkaConsumerGroupPartitionRetentionMarginDataPoint(ts, margin, pl.Group, pl.Topic, int64(pl.Partition))
			continue
		}
		dp := sw.groups.point(name, start, ts, "group", pl.Group, "topic", pl.Topic)
		dp.Attributes().PutInt("partition", int64(pl.Partition))
		dp.SetDoubleValue(margin)
	}
	return margins
}
