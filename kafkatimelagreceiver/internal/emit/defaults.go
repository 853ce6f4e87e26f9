package emit

import "github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"

// DefaultMetricsBuilderConfig is the generated default with the aggregation
// each metric needs when a user drops some of its attributes. mdatagen
// defaults every gauge to avg, which for these metrics misleads: dropping
// partition from time_lag would average the partitions and hide the one that
// is hours behind; dropping group from status would give a fraction instead
// of how many groups have it. With every attribute kept (the default)
// points are unique and nothing is aggregated.
func DefaultMetricsBuilderConfig() metadata.MetricsBuilderConfig {
	cfg := metadata.NewDefaultMetricsBuilderConfig()
	m := &cfg.Metrics
	const sum, worst = metadata.AggregationStrategySum, metadata.AggregationStrategyMax

	// Counts and amounts: what the dropped dimension held, added up.
	m.KafkaConsumerGroupState.AggregationStrategy = sum
	m.KafkaConsumerGroupStatus.AggregationStrategy = sum
	m.KafkaConsumerGroupPartitionStatus.AggregationStrategy = sum
	m.KafkaConsumerGroupMembers.AggregationStrategy = sum
	m.KafkaConsumerGroupAssignedPartitions.AggregationStrategy = sum
	m.KafkaConsumerGroupPartitionOwner.AggregationStrategy = sum
	m.KafkaConsumerGroupLag.AggregationStrategy = sum
	m.KafkaConsumerGroupLagSum.AggregationStrategy = sum
	m.KafkaConsumerGroupStableLag.AggregationStrategy = sum
	m.KafkaConsumerGroupLostMessages.AggregationStrategy = sum
	m.KafkaConsumerGroupConsumeRate.AggregationStrategy = sum
	m.KafkaConsumerGroupLagTrend.AggregationStrategy = sum
	m.KafkaPartitionProduceRate.AggregationStrategy = sum
	m.KafkaTopicProduceRate.AggregationStrategy = sum
	m.KafkaShareGroupState.AggregationStrategy = sum
	m.KafkaShareGroupMembers.AggregationStrategy = sum
	m.KafkaShareGroupLag.AggregationStrategy = sum
	m.KafkaShareGroupLagSum.AggregationStrategy = sum

	// Delays and maxima: the worst of what the dropped dimension held.
	m.KafkaConsumerGroupTimeLag.AggregationStrategy = worst
	m.KafkaConsumerGroupTimeLagMax.AggregationStrategy = worst
	m.KafkaConsumerGroupLagMax.AggregationStrategy = worst
	m.KafkaConsumerGroupStuckTime.AggregationStrategy = worst
	m.KafkaConsumerGroupTimeToDrain.AggregationStrategy = worst
	m.KafkaConsumerGroupPartitionTimeToDrain.AggregationStrategy = worst
	m.KafkaShareGroupTimeLag.AggregationStrategy = worst
	m.KafkaShareGroupTimeLagMax.AggregationStrategy = worst

	// Margins: the worst is the smallest.
	m.KafkaConsumerGroupRetentionMargin.AggregationStrategy = metadata.AggregationStrategyMin
	m.KafkaConsumerGroupPartitionRetentionMargin.AggregationStrategy = metadata.AggregationStrategyMin
	return cfg
}
