package emit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/emit"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

func shareFixture() ([]lag.SharePartitionLag, map[string]kafka.ShareGroupDescription) {
	tp := func(p int32) kafka.TopicPartition { return kafka.TopicPartition{Topic: "jobs", Partition: p} }
	lags := []lag.SharePartitionLag{
		{Group: "workers", TopicPartition: tp(0), StartOffset: 90, End: 100, Lag: 6, LagFromBroker: true, TimeLag: 42, HasEnd: true, HasLag: true, HasTimeLag: true},
		{Group: "workers", TopicPartition: tp(1), StartOffset: 100, End: 100, HasEnd: true, HasLag: true, HasTimeLag: true},
		// End offset unread, no lag from the broker: the start offset alone.
		{Group: "workers", TopicPartition: tp(2), StartOffset: 7},
	}
	described := map[string]kafka.ShareGroupDescription{
		"workers": {State: kafka.GroupStateStable, Members: []kafka.ShareGroupMember{{MemberID: "a"}, {MemberID: "b"}}},
		"idle":    {State: kafka.GroupStateEmpty},
		"unknown": {State: kafka.GroupStateUnknown},
	}
	return lags, described
}

func writeShares(t *testing.T, cfg *emit.Settings, at time.Time) pmetric.Metrics {
	t.Helper()
	lags, described := shareFixture()
	sw := newWriter(t, cfg).Begin(context.Background(), at.UnixNano(), len(lags))
	sw.SharePairs(lags)
	for _, g := range []string{"idle", "unknown", "workers"} {
		sw.ShareGroup(g, described[g])
	}
	sw.ShareAggregates(lag.AggregateShares(nil, lags))
	md, err := sw.Finish()
	require.NoError(t, err)
	return md
}

// The share-group metrics written directly are what the generated builder
// writes for the same values, point for point.
func TestShareGroupMetricsMatchBuilder(t *testing.T) {
	cfg := newSettings()
	cfg.Metrics.KafkaShareGroupStartOffset.Enabled = true
	at := time.Now()
	got := metricsByName(writeShares(t, cfg, at))

	mb := metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, receivertest.NewNopSettings(metadata.Type))
	ts := pcommon.NewTimestampFromTime(at)
	mb.RecordKafkaShareGroupStartOffsetDataPoint(ts, 90, "workers", "jobs", 0)
	mb.RecordKafkaShareGroupLagDataPoint(ts, 6, "workers", "jobs", 0)
	mb.RecordKafkaShareGroupTimeLagDataPoint(ts, 42, "workers", "jobs", 0)
	mb.RecordKafkaShareGroupStartOffsetDataPoint(ts, 100, "workers", "jobs", 1)
	mb.RecordKafkaShareGroupLagDataPoint(ts, 0, "workers", "jobs", 1)
	mb.RecordKafkaShareGroupTimeLagDataPoint(ts, 0, "workers", "jobs", 1)
	mb.RecordKafkaShareGroupStartOffsetDataPoint(ts, 7, "workers", "jobs", 2)
	for _, g := range []struct {
		name    string
		state   kafka.GroupState
		members int64
	}{{"idle", kafka.GroupStateEmpty, 0}, {"unknown", kafka.GroupStateUnknown, -1}, {"workers", kafka.GroupStateStable, 2}} {
		for _, st := range kafka.ShareGroupStates {
			mb.RecordKafkaShareGroupStateDataPoint(ts, oneIf(st == g.state), g.name, metadata.MapAttributeState[st.String()])
		}
		if g.members >= 0 {
			mb.RecordKafkaShareGroupMembersDataPoint(ts, g.members, g.name)
		}
	}
	// Partition 2 has neither lag nor time lag: no aggregate over part of
	// the topic.
	want := metricsByName(mb.Emit())

	require.Len(t, got, len(want))
	for name, w := range want {
		g, ok := got[name]
		require.True(t, ok, "no %s", name)
		require.Equal(t, w.Description(), g.Description(), name)
		require.Equal(t, w.Unit(), g.Unit(), name)
		require.Equal(t, w.Type(), g.Type(), name)
		wantPoints, gotPoints := w.Gauge().DataPoints(), g.Gauge().DataPoints()
		require.Equal(t, wantPoints.Len(), gotPoints.Len(), name)
		for i := range wantPoints.Len() {
			wp, gp := wantPoints.At(i), gotPoints.At(i)
			require.Equal(t, wp.Attributes().AsRaw(), gp.Attributes().AsRaw(), "%s point %d", name, i)
			require.Equal(t, wp.ValueType(), gp.ValueType(), "%s point %d", name, i)
			require.Equal(t, wp.IntValue(), gp.IntValue(), "%s point %d", name, i)
			require.Equal(t, wp.DoubleValue(), gp.DoubleValue(), "%s point %d", name, i)
		}
	}
	require.NotContains(t, got, "kafka.share_group.lag_sum", "partition 2 has no lag")
}

// A share-group time lag or lag reduced to (group, topic) is over every
// partition of the group on the topic or withheld: partition 2's end
// offset was not read, and a value over partitions 0 and 1 (42 s, 6)
// would pass for one over the topic.
func TestShareGroupReducedWithoutAPartitionIsWithheld(t *testing.T) {
	cfg := newSettings()
	cfg.Metrics.KafkaShareGroupTimeLag.EnabledAttributes = []metadata.KafkaShareGroupTimeLagMetricAttributeKey{
		metadata.KafkaShareGroupTimeLagMetricAttributeKeyGroup, metadata.KafkaShareGroupTimeLagMetricAttributeKeyTopic,
	}
	cfg.Metrics.KafkaShareGroupLag.EnabledAttributes = []metadata.KafkaShareGroupLagMetricAttributeKey{
		metadata.KafkaShareGroupLagMetricAttributeKeyGroup, metadata.KafkaShareGroupLagMetricAttributeKeyTopic,
	}
	got := metricsByName(writeShares(t, cfg, time.Now()))
	require.NotContains(t, got, "kafka.share_group.time_lag", "partition 2 has no time lag")
	require.NotContains(t, got, "kafka.share_group.lag", "partition 2 has no lag")
}

// Reduced to (group, topic) over partitions that all have one, the
// share-group time lag keeps the oldest unfinished record's age, not an
// average.
func TestShareGroupTimeLagReducedKeepsTheWorst(t *testing.T) {
	cfg := newSettings()
	cfg.Metrics.KafkaShareGroupTimeLag.EnabledAttributes = []metadata.KafkaShareGroupTimeLagMetricAttributeKey{
		metadata.KafkaShareGroupTimeLagMetricAttributeKeyGroup, metadata.KafkaShareGroupTimeLagMetricAttributeKeyTopic,
	}
	lags, _ := shareFixture()
	lags = lags[:2]
	sw := newWriter(t, cfg).Begin(context.Background(), time.Now().UnixNano(), len(lags))
	sw.SharePairs(lags)
	md, err := sw.Finish()
	require.NoError(t, err)
	points := metricsByName(md)["kafka.share_group.time_lag"].Gauge().DataPoints()
	require.Equal(t, 1, points.Len())
	require.Equal(t, 42.0, points.At(0).DoubleValue())
	require.Equal(t, map[string]any{"group": "workers", "topic": "jobs"}, points.At(0).Attributes().AsRaw())
}

// Summed over share groups (the group attribute removed), the lag sum of a
// topic is withheld when one group lacks a partition there, and members
// when one group's describe failed (GroupsUnread).
func TestShareGroupValuesSummedOverGroupsAreWithheldWhenOneIsPartlyRead(t *testing.T) {
	cfg := newSettings()
	cfg.Metrics.KafkaShareGroupLagSum.EnabledAttributes = []metadata.KafkaShareGroupLagSumMetricAttributeKey{metadata.KafkaShareGroupLagSumMetricAttributeKeyTopic}
	tp := func(p int32) kafka.TopicPartition { return kafka.TopicPartition{Topic: "jobs", Partition: p} }
	lags := []lag.SharePartitionLag{
		{Group: "mailers", TopicPartition: tp(0), StartOffset: 90, End: 100, Lag: 10, HasEnd: true, HasLag: true},
		{Group: "workers", TopicPartition: tp(0), StartOffset: 0, End: 100, Lag: 100, HasEnd: true, HasLag: true},
		{Group: "workers", TopicPartition: tp(1), Unread: true, StartOffset: -1},
	}
	write := func(lags []lag.SharePartitionLag) map[string]pmetric.Metric {
		sw := newWriter(t, cfg).Begin(context.Background(), time.Now().UnixNano(), len(lags))
		sw.SharePairs(lags)
		sw.ShareAggregates(lag.AggregateShares(nil, lags))
		md, err := sw.Finish()
		require.NoError(t, err)
		return metricsByName(md)
	}
	whole := write(lags[:2])["kafka.share_group.lag_sum"].Gauge().DataPoints()
	require.Equal(t, 1, whole.Len())
	require.Equal(t, int64(110), whole.At(0).IntValue(), "both groups read whole: summed over them")
	require.NotContains(t, write(lags), "kafka.share_group.lag_sum", "the workers' sum over jobs lacks partition 1")

	cfg = newSettings()
	cfg.Metrics.KafkaShareGroupMembers.EnabledAttributes = []metadata.KafkaShareGroupMembersMetricAttributeKey{}
	_, described := shareFixture()
	members := func(unread bool) map[string]pmetric.Metric {
		sw := newWriter(t, cfg).Begin(context.Background(), time.Now().UnixNano(), 0)
		if unread {
			sw.GroupsUnread(true)
		}
		sw.ShareGroup("workers", described["workers"])
		sw.ShareGroup("idle", described["idle"])
		md, err := sw.Finish()
		require.NoError(t, err)
		return metricsByName(md)
	}
	summed := members(false)["kafka.share_group.members"].Gauge().DataPoints()
	require.Equal(t, 1, summed.Len())
	require.Equal(t, int64(2), summed.At(0).IntValue())
	require.NotContains(t, members(true), "kafka.share_group.members", "a group's describe failed: the sum lacks its members")
}
