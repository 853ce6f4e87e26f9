package emit

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

// metrics holds the descriptor of every metric the receiver writes. Adding a
// metric is its entry in metadata.yaml (then `make generate`), one
// descriptor here, and the call that gives it its value in scrape.go.
type metrics struct {
	all []*metric // in declaration order; each one's id is its index

	// Per (group, topic, partition) pair: written per chunk (pairs.go).
	offset, lag, stableLag, lostMessages pairMetric[int64]
	timeLag, partitionTimeToDrain        pairMetric[float64]
	partitionStatus                      pairLabelMetric[int64]
	partitionRetentionMargin             pairLabelMetric[float64]

	// Per (topic, partition), and per topic.
	currentOffset, oldestOffset partitionMetric[int64]
	partitionProduceRate        partitionMetric[float64]
	topicProduceRate            labelMetric1[float64]

	// Per group, and per (group, topic).
	rebalances                                                labelMetric1[int64]
	status, state, members                                    labelMetric2[int64]
	assignedPartitions                                        labelMetric4[int64]
	partitionOwner                                            ownerMetric
	lagSum, lagMax                                            labelMetric2[int64]
	timeLagMax, consumeRate, lagTrend, timeToDrain, stuckTime labelMetric2[float64]
	retentionMargin                                           labelMetric3[float64]

	share shareMetrics
}

// newMetrics describes every metric from its configuration, its generated
// MetricsInfo and its MetricsBuilder.Record... method.
func newMetrics(cfg metadata.MetricsConfig) *metrics {
	m := &metrics{}
	info := metadata.MetricsInfo
	type mb = metadata.MetricsBuilder

	m.offset = pairOf(m, info.KafkaConsumerGroupOffset, cfg.KafkaConsumerGroupOffset.Enabled, cfg.KafkaConsumerGroupOffset.EnabledAttributes, cfg.KafkaConsumerGroupOffset.AggregationStrategy, (*mb).RecordKafkaConsumerGroupOffsetDataPoint, true)
	m.lag = pairOf(m, info.KafkaConsumerGroupLag, cfg.KafkaConsumerGroupLag.Enabled, cfg.KafkaConsumerGroupLag.EnabledAttributes, cfg.KafkaConsumerGroupLag.AggregationStrategy, (*mb).RecordKafkaConsumerGroupLagDataPoint, true)
	m.stableLag = pairOf(m, info.KafkaConsumerGroupStableLag, cfg.KafkaConsumerGroupStableLag.Enabled, cfg.KafkaConsumerGroupStableLag.EnabledAttributes, cfg.KafkaConsumerGroupStableLag.AggregationStrategy, (*mb).RecordKafkaConsumerGroupStableLagDataPoint, true)
	m.lostMessages = pairOf(m, info.KafkaConsumerGroupLostMessages, cfg.KafkaConsumerGroupLostMessages.Enabled, cfg.KafkaConsumerGroupLostMessages.EnabledAttributes, cfg.KafkaConsumerGroupLostMessages.AggregationStrategy, (*mb).RecordKafkaConsumerGroupLostMessagesDataPoint, false)
	m.timeLag = pairOf(m, info.KafkaConsumerGroupTimeLag, cfg.KafkaConsumerGroupTimeLag.Enabled, cfg.KafkaConsumerGroupTimeLag.EnabledAttributes, cfg.KafkaConsumerGroupTimeLag.AggregationStrategy, (*mb).RecordKafkaConsumerGroupTimeLagDataPoint, true)
	m.partitionTimeToDrain = pairOf(m, info.KafkaConsumerGroupPartitionTimeToDrain, cfg.KafkaConsumerGroupPartitionTimeToDrain.Enabled, cfg.KafkaConsumerGroupPartitionTimeToDrain.EnabledAttributes, cfg.KafkaConsumerGroupPartitionTimeToDrain.AggregationStrategy, (*mb).RecordKafkaConsumerGroupPartitionTimeToDrainDataPoint, false)
	m.partitionStatus = pairLabelOf(m, info.KafkaConsumerGroupPartitionStatus, cfg.KafkaConsumerGroupPartitionStatus.Enabled, cfg.KafkaConsumerGroupPartitionStatus.EnabledAttributes, cfg.KafkaConsumerGroupPartitionStatus.AggregationStrategy,
		func(b *mb, ts pcommon.Timestamp, v int64, group, topic string, partition int64, status string) {
			b.RecordKafkaConsumerGroupPartitionStatusDataPoint(ts, v, group, topic, partition, metadata.MapAttributeStatus[status])
		})

	m.currentOffset = partitionOf(m, info.KafkaPartitionCurrentOffset, cfg.KafkaPartitionCurrentOffset.Enabled, cfg.KafkaPartitionCurrentOffset.EnabledAttributes, cfg.KafkaPartitionCurrentOffset.AggregationStrategy, (*mb).RecordKafkaPartitionCurrentOffsetDataPoint)
	m.oldestOffset = partitionOf(m, info.KafkaPartitionOldestOffset, cfg.KafkaPartitionOldestOffset.Enabled, cfg.KafkaPartitionOldestOffset.EnabledAttributes, cfg.KafkaPartitionOldestOffset.AggregationStrategy, (*mb).RecordKafkaPartitionOldestOffsetDataPoint)
	m.partitionProduceRate = partitionOf(m, info.KafkaPartitionProduceRate, cfg.KafkaPartitionProduceRate.Enabled, cfg.KafkaPartitionProduceRate.EnabledAttributes, cfg.KafkaPartitionProduceRate.AggregationStrategy, (*mb).RecordKafkaPartitionProduceRateDataPoint)
	m.topicProduceRate = label1Of(m, info.KafkaTopicProduceRate, cfg.KafkaTopicProduceRate.Enabled, cfg.KafkaTopicProduceRate.EnabledAttributes, cfg.KafkaTopicProduceRate.AggregationStrategy, (*mb).RecordKafkaTopicProduceRateDataPoint)

	m.rebalances = label1Of(m, info.KafkaConsumerGroupRebalances, cfg.KafkaConsumerGroupRebalances.Enabled, cfg.KafkaConsumerGroupRebalances.EnabledAttributes, cfg.KafkaConsumerGroupRebalances.AggregationStrategy, (*mb).RecordKafkaConsumerGroupRebalancesDataPoint)
	m.status = label2Of(m, info.KafkaConsumerGroupStatus, cfg.KafkaConsumerGroupStatus.Enabled, cfg.KafkaConsumerGroupStatus.EnabledAttributes, cfg.KafkaConsumerGroupStatus.AggregationStrategy,
		func(b *mb, ts pcommon.Timestamp, v int64, group, status string) {
			b.RecordKafkaConsumerGroupStatusDataPoint(ts, v, group, metadata.MapAttributeStatus[status])
		})
	m.state = label2Of(m, info.KafkaConsumerGroupState, cfg.KafkaConsumerGroupState.Enabled, cfg.KafkaConsumerGroupState.EnabledAttributes, cfg.KafkaConsumerGroupState.AggregationStrategy,
		func(b *mb, ts pcommon.Timestamp, v int64, group, state string) {
			b.RecordKafkaConsumerGroupStateDataPoint(ts, v, group, metadata.MapAttributeState[state])
		})
	m.members = label2Of(m, info.KafkaConsumerGroupMembers, cfg.KafkaConsumerGroupMembers.Enabled, cfg.KafkaConsumerGroupMembers.EnabledAttributes, cfg.KafkaConsumerGroupMembers.AggregationStrategy, (*mb).RecordKafkaConsumerGroupMembersDataPoint)
	m.assignedPartitions = label4Of(m, info.KafkaConsumerGroupAssignedPartitions, cfg.KafkaConsumerGroupAssignedPartitions.Enabled, cfg.KafkaConsumerGroupAssignedPartitions.EnabledAttributes, cfg.KafkaConsumerGroupAssignedPartitions.AggregationStrategy, (*mb).RecordKafkaConsumerGroupAssignedPartitionsDataPoint)
	m.lagSum = label2Of(m, info.KafkaConsumerGroupLagSum, cfg.KafkaConsumerGroupLagSum.Enabled, cfg.KafkaConsumerGroupLagSum.EnabledAttributes, cfg.KafkaConsumerGroupLagSum.AggregationStrategy, (*mb).RecordKafkaConsumerGroupLagSumDataPoint)
	m.lagMax = label2Of(m, info.KafkaConsumerGroupLagMax, cfg.KafkaConsumerGroupLagMax.Enabled, cfg.KafkaConsumerGroupLagMax.EnabledAttributes, cfg.KafkaConsumerGroupLagMax.AggregationStrategy, (*mb).RecordKafkaConsumerGroupLagMaxDataPoint)
	m.timeLagMax = label2Of(m, info.KafkaConsumerGroupTimeLagMax, cfg.KafkaConsumerGroupTimeLagMax.Enabled, cfg.KafkaConsumerGroupTimeLagMax.EnabledAttributes, cfg.KafkaConsumerGroupTimeLagMax.AggregationStrategy, (*mb).RecordKafkaConsumerGroupTimeLagMaxDataPoint)
	m.consumeRate = label2Of(m, info.KafkaConsumerGroupConsumeRate, cfg.KafkaConsumerGroupConsumeRate.Enabled, cfg.KafkaConsumerGroupConsumeRate.EnabledAttributes, cfg.KafkaConsumerGroupConsumeRate.AggregationStrategy, (*mb).RecordKafkaConsumerGroupConsumeRateDataPoint)
	m.lagTrend = label2Of(m, info.KafkaConsumerGroupLagTrend, cfg.KafkaConsumerGroupLagTrend.Enabled, cfg.KafkaConsumerGroupLagTrend.EnabledAttributes, cfg.KafkaConsumerGroupLagTrend.AggregationStrategy, (*mb).RecordKafkaConsumerGroupLagTrendDataPoint)
	m.timeToDrain = label2Of(m, info.KafkaConsumerGroupTimeToDrain, cfg.KafkaConsumerGroupTimeToDrain.Enabled, cfg.KafkaConsumerGroupTimeToDrain.EnabledAttributes, cfg.KafkaConsumerGroupTimeToDrain.AggregationStrategy, (*mb).RecordKafkaConsumerGroupTimeToDrainDataPoint)
	m.stuckTime = label2Of(m, info.KafkaConsumerGroupStuckTime, cfg.KafkaConsumerGroupStuckTime.Enabled, cfg.KafkaConsumerGroupStuckTime.EnabledAttributes, cfg.KafkaConsumerGroupStuckTime.AggregationStrategy, (*mb).RecordKafkaConsumerGroupStuckTimeDataPoint)
	m.partitionOwner = ownerOf(m, info.KafkaConsumerGroupPartitionOwner, cfg.KafkaConsumerGroupPartitionOwner.Enabled, cfg.KafkaConsumerGroupPartitionOwner.EnabledAttributes, cfg.KafkaConsumerGroupPartitionOwner.AggregationStrategy, (*mb).RecordKafkaConsumerGroupPartitionOwnerDataPoint)
	m.retentionMargin = label3Of(m, info.KafkaConsumerGroupRetentionMargin, cfg.KafkaConsumerGroupRetentionMargin.Enabled, cfg.KafkaConsumerGroupRetentionMargin.EnabledAttributes, cfg.KafkaConsumerGroupRetentionMargin.AggregationStrategy,
		func(b *mb, ts pcommon.Timestamp, v float64, group, topic, basis string) {
			b.RecordKafkaConsumerGroupRetentionMarginDataPoint(ts, v, group, topic, metadata.MapAttributeRetention[basis])
		})
	m.partitionRetentionMargin = pairLabelOf(m, info.KafkaConsumerGroupPartitionRetentionMargin, cfg.KafkaConsumerGroupPartitionRetentionMargin.Enabled, cfg.KafkaConsumerGroupPartitionRetentionMargin.EnabledAttributes, cfg.KafkaConsumerGroupPartitionRetentionMargin.AggregationStrategy,
		func(b *mb, ts pcommon.Timestamp, v float64, group, topic string, partition int64, basis string) {
			b.RecordKafkaConsumerGroupPartitionRetentionMarginDataPoint(ts, v, group, topic, partition, metadata.MapAttributeRetention[basis])
		})
	m.share = newShareMetrics(m, cfg)
	return m
}

// Wants is what the enabled metrics need a scrape to read and compute
// besides committed and end offsets.
type Wants struct {
	// GroupHealth: DescribeGroups and the health tracker.
	GroupHealth bool
	// Assignments: each member's assigned partitions.
	Assignments bool
	// Owners: who holds each partition of a described group.
	Owners bool
	// Progress: committed offsets followed from scrape to scrape.
	Progress bool
	// ProduceRates: the partitions' production rates.
	ProduceRates bool
	// StartOffsets: each partition's log start offset.
	StartOffsets bool
	// StableOffsets: each partition's last stable offset.
	StableOffsets bool
	// Retention: the topics' retention settings, the sizes of partitions
	// deleting by size, the log starts' moves and the production rates.
	Retention bool
	// ShareGroups: the share groups' start offsets; ShareGroupHealth: their
	// state and members too.
	ShareGroups, ShareGroupHealth bool
}

// WantsOf says what the enabled metrics of cfg need.
func WantsOf(cfg metadata.MetricsConfig) Wants {
	m := newMetrics(cfg)
	return Wants{
		GroupHealth: m.rebalances.on || m.status.on || m.state.on || m.members.on ||
			m.assignedPartitions.on || m.partitionOwner.on || m.partitionStatus.on,
		Assignments:   m.assignedPartitions.on,
		Owners:        m.partitionOwner.on,
		Progress:      m.consumeRate.on || m.lagTrend.on || m.timeToDrain.on || m.partitionTimeToDrain.on || m.stuckTime.on,
		ProduceRates:  m.partitionProduceRate.on || m.topicProduceRate.on || m.lagTrend.on || m.timeToDrain.on || m.partitionTimeToDrain.on,
		StartOffsets:  m.oldestOffset.on,
		StableOffsets: m.stableLag.on,
		Retention:     m.retentionMargin.on || m.partitionRetentionMargin.on,
		ShareGroups: m.share.lag.on || m.share.startOffset.on || m.share.timeLag.on || m.share.lagSum.on || m.share.timeLagMax.on ||
			m.share.members.on || m.share.state.on,
		ShareGroupHealth: m.share.members.on || m.share.state.on,
	}
}
