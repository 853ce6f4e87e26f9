package kafkatimelagreceiver

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/progress"
)

// progressEnabled says whether any metric needs the groups' committed
// offsets followed from scrape to scrape (internal/progress).
func (w *metricWriter) progressEnabled() bool {
	m := w.metrics
	return m.KafkaConsumerGroupConsumeRate.Enabled ||
		m.KafkaConsumerGroupLagTrend.Enabled ||
		m.KafkaConsumerGroupTimeToDrain.Enabled ||
		m.KafkaConsumerGroupPartitionTimeToDrain.Enabled ||
		m.KafkaConsumerGroupStuckTime.Enabled
}

// produceRatesNeeded says whether any metric needs the partitions'
// production rates.
func (w *metricWriter) produceRatesNeeded() bool {
	m := w.metrics
	return m.KafkaPartitionProduceRate.Enabled ||
		m.KafkaTopicProduceRate.Enabled ||
		m.KafkaConsumerGroupLagTrend.Enabled ||
		m.KafkaConsumerGroupTimeToDrain.Enabled ||
		m.KafkaConsumerGroupPartitionTimeToDrain.Enabled
}

// partitionDrains writes kafka.consumer_group.partition_time_to_drain of one
// group's pairs; parts is in the order of lags.
func (sw *scrapeWriter) partitionDrains(lags []lag.PartitionLag, parts []progress.Partition) {
	if !sw.w.metrics.KafkaConsumerGroupPartitionTimeToDrain.Enabled {
		return
	}
	for i := range lags {
		sw.pairs.addDrain(&lags[i], &parts[i])
	}
}

// groupProgress writes one group's per-(group, topic) progress: what is not
// known is omitted, never written as 0.
func (sw *scrapeWriter) groupProgress(topics []progress.Topic) {
	m := sw.w.metrics
	info := metadata.MetricsInfo
	rate := groupTopicGauge(sw, info.KafkaConsumerGroupConsumeRate.Name, m.KafkaConsumerGroupConsumeRate.Enabled, len(m.KafkaConsumerGroupConsumeRate.EnabledAttributes), sw.w.mb.RecordKafkaConsumerGroupConsumeRateDataPoint)
	trend := groupTopicGauge(sw, info.KafkaConsumerGroupLagTrend.Name, m.KafkaConsumerGroupLagTrend.Enabled, len(m.KafkaConsumerGroupLagTrend.EnabledAttributes), sw.w.mb.RecordKafkaConsumerGroupLagTrendDataPoint)
	drain := groupTopicGauge(sw, info.KafkaConsumerGroupTimeToDrain.Name, m.KafkaConsumerGroupTimeToDrain.Enabled, len(m.KafkaConsumerGroupTimeToDrain.EnabledAttributes), sw.w.mb.RecordKafkaConsumerGroupTimeToDrainDataPoint)
	stuck := groupTopicGauge(sw, info.KafkaConsumerGroupStuckTime.Name, m.KafkaConsumerGroupStuckTime.Enabled, len(m.KafkaConsumerGroupStuckTime.EnabledAttributes), sw.w.mb.RecordKafkaConsumerGroupStuckTimeDataPoint)
	for i := range topics {
		tp := &topics[i]
		if tp.HasConsumeRate {
			rate(tp.ConsumeRate, tp.Group, tp.Topic)
		}
		if tp.HasTrend {
			trend(tp.Trend, tp.Group, tp.Topic)
		}
		if tp.HasDrain {
			drain(tp.Drain, tp.Group, tp.Topic)
		}
		if tp.HasStuck {
			stuck(tp.Stuck, tp.Group, tp.Topic)
		}
	}
}

// groupTopicGauge returns the writer of one gauge with the attributes group
// and topic: direct when it has both (see groupMetrics), else record, the
// builder's.
func groupTopicGauge[V int64 | float64](sw *scrapeWriter, name string, enabled bool, attributes int, record func(pcommon.Timestamp, V, string, string)) func(value V, group, topic string) {
	ts := sw.ts
	if !allAttributes(enabled, attributes, 2) {
		return func(value V, group, topic string) { record(ts, value, group, topic) }
	}
	start, d := sw.w.startTime, &sw.groups
	return func(value V, group, topic string) {
		dp := d.point(name, start, ts, "group", group, "topic", topic)
		switch v := any(value).(type) {
		case int64:
			dp.SetIntValue(v)
		case float64:
			dp.SetDoubleValue(v)
		}
	}
}

// topicProduceRates writes kafka.topic.produce_rate: the sum of each
// topic's partition rates, when every partition of it has one. parts are in
// (topic, partition) order.
func (sw *scrapeWriter) topicProduceRates(parts []lag.Partition) {
	if !sw.w.metrics.KafkaTopicProduceRate.Enabled {
		return
	}
	for start := 0; start < len(parts); {
		end, sum, all := start, 0.0, true
		for ; end < len(parts) && parts[end].Topic == parts[start].Topic; end++ {
			sum += parts[end].ProduceRate
			all = all && parts[end].HasProduceRate
		}
		if all {
			sw.w.mb.RecordKafkaTopicProduceRateDataPoint(sw.ts, sum, parts[start].Topic)
		}
		start = end
	}
}
