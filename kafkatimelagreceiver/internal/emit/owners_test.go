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
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/retention"
)

type fixedRetention map[string]kafka.TopicRetention

func (f fixedRetention) TopicRetention(_ context.Context, topics []string) (map[string]kafka.TopicRetention, error) {
	out := map[string]kafka.TopicRetention{}
	for _, t := range topics {
		if r, ok := f[t]; ok {
			out[t] = r
		}
	}
	return out, nil
}

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
	limits := retention.NewCache(fixedRetention{"orders": {Delete: true, RetentionMs: 600_000, RetentionBytes: -1}})
	at := time.Now()
	require.NoError(t, limits.Refresh(context.Background(), []string{"orders"}, at))

	sw := newWriter(t, cfg).Begin(context.Background(), at.UnixNano(), 0)
	sw.PartitionOwners(g)
	sw.RetentionMargins(lags, limits)
	md, err := sw.Finish()
	require.NoError(t, err)
	got := metricsByName(md)

	mb := metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, receivertest.NewNopSettings(metadata.Type))
	ts := pcommon.NewTimestampFromTime(at)
	mb.RecordKafkaConsumerGroupPartitionOwnerDataPoint(ts, 1, "billing", "orders", 0, "c1", "h1", "")
	mb.RecordKafkaConsumerGroupPartitionOwnerDataPoint(ts, 1, "billing", "orders", 1, "c1", "h1", "")
	mb.RecordKafkaConsumerGroupPartitionOwnerDataPoint(ts, 1, "billing", "orders", 2, "c2", "h2", "static-2")
	mb.RecordKafkaConsumerGroupRetentionMarginDataPoint(ts, 510, "billing", "orders") // the worst partition's
	mb.RecordKafkaConsumerGroupPartitionRetentionMarginDataPoint(ts, 570, "billing", "orders", 0)
	mb.RecordKafkaConsumerGroupPartitionRetentionMarginDataPoint(ts, 510, "billing", "orders", 1)
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
