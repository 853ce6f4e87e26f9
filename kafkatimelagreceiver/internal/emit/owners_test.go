package emit_test

import (
	"context"
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
)

// TestOwnersAndMarginsMatchBuilder: partition_owner and the retention
// margins written directly are what the generated builder writes for the
// same values: description, unit, type, attributes, values, timestamps.
func TestOwnersAndMarginsMatchBuilder(t *testing.T) {
	cfg := newSettings()
	cfg.Metrics.KafkaConsumerGroupPartitionOwner.Enabled = true
	cfg.Metrics.KafkaConsumerGroupPartitionRetentionMargin.Enabled = true
	tp := func(p int32) kafka.TopicPartition { return kafka.TopicPartition{Topic: "orders", Partition: p} }
	g := health.GroupHealth{Group: "billing", Described: true, Protocol: "range", Description: kafka.GroupDescription{
		State: kafka.GroupStateStable, Protocol: "range", Epoch: -1, Members: []kafka.GroupMember{
			{ClientID: "c1", Host: "h1", Assignment: []kafka.TopicPartition{tp(0), tp(1)}, AssignmentKnown: true},
			{ClientID: "c2", Host: "h2", InstanceID: "static-2", Assignment: []kafka.TopicPartition{tp(2)}, AssignmentKnown: true},
		}}}
	lags := []lag.PartitionLag{
		{Group: "billing", TopicPartition: tp(0), HasEnd: true, Lag: 5, HasTimeLag: true, TimeLag: 30},
		{Group: "billing", TopicPartition: tp(1), HasEnd: true, Lag: 2, HasTimeLag: true, TimeLag: 90},
		{Group: "billing", TopicPartition: tp(2), HasEnd: true, Lag: 0, HasTimeLag: true, CaughtUp: true},
	}
	at := time.Now()

	g.Owners = health.PartitionOwners(g.Description) // as the computation finds them
	sw := newWriter(t, cfg).Begin(context.Background(), at.UnixNano(), 0)
	sw.PartitionOwners(g)
	sw.PartitionRetentionMargin(&lags[0], 570, "time")
	sw.PartitionRetentionMargin(&lags[1], 3.5, "size")
	sw.RetentionMargin("billing", "orders", 3.5, "size")
	md, err := sw.Finish()
	require.NoError(t, err)
	got := metricsByName(md)

	mb := metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, receivertest.NewNopSettings(metadata.Type))
	ts := pcommon.NewTimestampFromTime(at)
	mb.RecordKafkaConsumerGroupPartitionOwnerDataPoint(ts, 1, "billing", "orders", 0, "c1", "h1", "")
	mb.RecordKafkaConsumerGroupPartitionOwnerDataPoint(ts, 1, "billing", "orders", 1, "c1", "h1", "")
	mb.RecordKafkaConsumerGroupPartitionOwnerDataPoint(ts, 1, "billing", "orders", 2, "c2", "h2", "static-2")
	mb.RecordKafkaConsumerGroupRetentionMarginDataPoint(ts, 3.5, "billing", "orders", metadata.AttributeRetentionSize)
	mb.RecordKafkaConsumerGroupPartitionRetentionMarginDataPoint(ts, 570, "billing", "orders", 0, metadata.AttributeRetentionTime)
	mb.RecordKafkaConsumerGroupPartitionRetentionMarginDataPoint(ts, 3.5, "billing", "orders", 1, metadata.AttributeRetentionSize)
	want := metricsByName(mb.Emit())

	for _, name := range []string{"kafka.consumer_group.partition_owner", "kafka.consumer_group.retention_margin", "kafka.consumer_group.partition_retention_margin"} {
		wm, gm := want[name], got[name]
		require.Equal(t, wm.Description(), gm.Description(), name)
		require.Equal(t, wm.Unit(), gm.Unit(), name)
		require.Equal(t, pmetric.MetricTypeGauge, gm.Type(), name)
		wp, gp := wm.Gauge().DataPoints(), gm.Gauge().DataPoints()
		require.Equal(t, wp.Len(), gp.Len(), name)
		for i := range wp.Len() {
			require.Equal(t, wp.At(i).Attributes().AsRaw(), gp.At(i).Attributes().AsRaw(), name)
			require.Equal(t, wp.At(i).IntValue(), gp.At(i).IntValue(), name)
			require.Equal(t, wp.At(i).DoubleValue(), gp.At(i).DoubleValue(), name)
			require.Equal(t, wp.At(i).Timestamp(), gp.At(i).Timestamp(), name)
		}
	}
}

// TestUnknownMarginsWithholdTheirReducedPoints: with the topic and
// partition dropped, a group's margin is the smallest over its topics; one
// topic whose margin is not known leaves the group's point out, whatever
// basis it would have had, rather than give the others' smallest.
func TestUnknownMarginsWithholdTheirReducedPoints(t *testing.T) {
	cfg := newSettings()
	cfg.Metrics.KafkaConsumerGroupRetentionMargin.EnabledAttributes = []metadata.KafkaConsumerGroupRetentionMarginMetricAttributeKey{metadata.KafkaConsumerGroupRetentionMarginMetricAttributeKeyGroup}
	cfg.Metrics.KafkaConsumerGroupPartitionRetentionMargin.Enabled = true
	cfg.Metrics.KafkaConsumerGroupPartitionRetentionMargin.EnabledAttributes = []metadata.KafkaConsumerGroupPartitionRetentionMarginMetricAttributeKey{metadata.KafkaConsumerGroupPartitionRetentionMarginMetricAttributeKeyGroup}
	pl := func(group, topic string) *lag.PartitionLag {
		return &lag.PartitionLag{Group: group, TopicPartition: kafka.TopicPartition{Topic: topic}}
	}
	sw := newWriter(t, cfg).Begin(context.Background(), time.Now().UnixNano(), 0)
	sw.RetentionMargin("billing", "orders", 600, "time")
	sw.PartitionRetentionMargin(pl("billing", "orders"), 600, "time")
	sw.RetentionMarginUnknown("billing", "invoices")
	sw.PartitionRetentionMarginUnknown(pl("billing", "invoices"))
	sw.RetentionMargin("audit", "orders", 30, "size")
	sw.RetentionMargin("audit", "payments", 60, "time")
	sw.PartitionRetentionMargin(pl("audit", "orders"), 30, "size")
	md, err := sw.Finish()
	require.NoError(t, err)
	got := metricsByName(md)
	for _, name := range []string{"kafka.consumer_group.retention_margin", "kafka.consumer_group.partition_retention_margin"} {
		dps := got[name].Gauge().DataPoints()
		require.Equal(t, 1, dps.Len(), name)
		require.Equal(t, map[string]any{"group": "audit"}, dps.At(0).Attributes().AsRaw(), name)
		require.Equal(t, 30.0, dps.At(0).DoubleValue(), name)
	}
}
