package compute_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/compute"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/emit"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/read"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/retention"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// tallyInput is a read of four topics: group a committed above the end of
// the 12 partitions of "beyond" and inside the table of "dated"; group b
// on "undated", which has no table; group c on "unread", whose end offset
// was not read.
func tallyInput() *read.Input { return tallyInputRates(false) }

// tallyInputRates is tallyInput, with the partitions' production rates
// resolved over the table's span when withRates.
func tallyInputRates(withRates bool) *read.Input {
	t0 := time.Unix(1_700_000_000, 0)
	at := t0.Add(150 * time.Second).UnixNano()
	dated := kafka.TopicPartition{Topic: "dated", Partition: 0}
	tables := timetable.NewStore(16, 0, nil)
	tables.Track(map[kafka.TopicPartition]struct{}{dated: {}}, t0, 0)
	for i, offset := range []int64{100, 200} {
		sampled := t0.Add(time.Duration(i) * 100 * time.Second)
		tables.Record(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{dated: offset}, Sent: sampled, Received: sampled})
	}
	a := map[kafka.TopicPartition]int64{dated: 150}
	end := map[kafka.TopicPartition]int64{dated: 200, {Topic: "undated", Partition: 0}: 10}
	for p := range int32(12) {
		tp := kafka.TopicPartition{Topic: "beyond", Partition: p}
		a[tp], end[tp] = 12, 10
	}
	snap := &lag.Snapshot{
		At: at,
		Committed: kafka.CommitsByGroup(map[string]map[kafka.TopicPartition]int64{
			"a": a,
			"b": {{Topic: "undated", Partition: 0}: 3},
			"c": {{Topic: "unread", Partition: 0}: 1},
		}),
		End:   end,
		Start: map[kafka.TopicPartition]int64{},
	}
	idx := lag.NewIndex(snap)
	tabled := idx.ResolveTables(tables)
	est := lag.Estimate(idx, lag.AppendTimes(tabled, tables, recordcache.New(), at))
	if withRates {
		est.ResolveProduceRates(tabled, tables, 100*time.Second) // the table's whole span
	}
	in := &read.Input{Snap: snap, Index: idx, Estimates: est, Pairs: 15}
	for _, g := range []string{"a", "b", "c"} {
		in.Groups = append(in.Groups, read.Group{Name: g, Reported: true})
	}
	return in
}

// A scrape's tally counts its estimates by method, the pairs committed
// above their end offset (naming the first ten) and the aggregates left
// out by reason; its points are written.
func TestScrapeTallies(t *testing.T) {
	w, err := emit.New(emit.Settings{MetricsBuilderConfig: emit.DefaultMetricsBuilderConfig(), Replica: "test"}, receivertest.NewNopSettings(metadata.Type))
	require.NoError(t, err)
	in := tallyInput()
	out := w.Begin(t.Context(), in.Snap.At, in.Pairs)
	tally := (&compute.Computer{}).Scrape(in, out, time.Now())
	md, err := out.Finish()
	require.NoError(t, err)

	var methods lag.MethodCounts
	methods[lag.MethodCaughtUp], methods[lag.MethodTable], methods[lag.MethodNone] = 12, 1, 1
	require.Equal(t, methods, tally.Methods)
	require.Equal(t, int64(12), tally.BeyondEnd)
	require.Len(t, tally.BeyondEndExamples, compute.MaxBeyondEndExamples)
	require.Equal(t, "a beyond/0 committed 12, end 10", tally.BeyondEndExamples[0])
	require.Equal(t, int64(1), tally.EndOffsetUnread, "c's end offset on unread")
	require.Equal(t, int64(1), tally.TimeLagUnknown, "b's time lag on undated")

	points := map[string]int{}
	emit.EachMetric(md, func(m pmetric.Metric) {
		if m.Type() == pmetric.MetricTypeGauge {
			points[m.Name()] += m.Gauge().DataPoints().Len()
		}
	})
	require.Equal(t, map[string]int{
		"kafka.consumer_group.lag":          14, // but c's, whose end offset was not read
		"kafka.consumer_group.time_lag":     13, // and b's, undated
		"kafka.consumer_group.lag_sum":      3,  // (a, beyond), (a, dated), (b, undated)
		"kafka.consumer_group.lag_max":      3,
		"kafka.consumer_group.time_lag_max": 2, // (a, beyond), (a, dated)
		"kafka.partition.current_offset":    14,
	}, points)
}

// A reported group whose commits were not read leaves out every point
// folded over groups (here lag per topic): the group's part is missing from
// whichever of them it would have folded into. Points that keep the group
// are still sent.
func TestGroupUnreadWithholdsPointsFoldedOverGroups(t *testing.T) {
	cfg := emit.DefaultMetricsBuilderConfig()
	cfg.Metrics.KafkaConsumerGroupLag.EnabledAttributes = []metadata.KafkaConsumerGroupLagMetricAttributeKey{metadata.KafkaConsumerGroupLagMetricAttributeKeyTopic}
	w, err := emit.New(emit.Settings{MetricsBuilderConfig: cfg, Replica: "test"}, receivertest.NewNopSettings(metadata.Type))
	require.NoError(t, err)
	points := func(unread bool) map[string]int {
		in := tallyInput()
		in.Groups = append(in.Groups, read.Group{Name: "d", Reported: true, Unread: unread})
		out := w.Begin(t.Context(), in.Snap.At, in.Pairs)
		(&compute.Computer{}).Scrape(in, out, time.Now())
		md, err := out.Finish()
		require.NoError(t, err)
		n := map[string]int{}
		emit.EachMetric(md, func(m pmetric.Metric) {
			if m.Type() == pmetric.MetricTypeGauge {
				n[m.Name()] += m.Gauge().DataPoints().Len()
			}
		})
		return n
	}
	whole := points(false)
	require.Equal(t, 3, whole["kafka.consumer_group.lag"], "lag per topic: beyond, dated and undated (unread: its end offset was not read)")
	partial := points(true)
	require.NotContains(t, partial, "kafka.consumer_group.lag")
	require.Equal(t, whole["kafka.consumer_group.time_lag"], partial["kafka.consumer_group.time_lag"])
	require.Equal(t, whole["kafka.consumer_group.lag_sum"], partial["kafka.consumer_group.lag_sum"])
}

// kafka.share_group.members summed over share groups (its group attribute
// removed) is left out of a scrape that could not describe one of them:
// the sum would lack that group's members.
func TestShareGroupDescribeFailedWithholdsMembersSummedOverGroups(t *testing.T) {
	cfg := emit.DefaultMetricsBuilderConfig()
	cfg.Metrics.KafkaShareGroupMembers.EnabledAttributes = []metadata.KafkaShareGroupMembersMetricAttributeKey{}
	w, err := emit.New(emit.Settings{MetricsBuilderConfig: cfg, Replica: "test"}, receivertest.NewNopSettings(metadata.Type))
	require.NoError(t, err)
	members := func(failed bool) pmetric.NumberDataPointSlice {
		in := tallyInput()
		in.Shares = []read.ShareGroup{
			{Name: "mailers", Described: true, Description: kafka.ShareGroupDescription{State: kafka.GroupStateStable, Members: []kafka.ShareGroupMember{{MemberID: "m"}}}},
			{Name: "workers", Described: !failed, DescribeFailed: failed, Description: kafka.ShareGroupDescription{State: kafka.GroupStateStable, Members: []kafka.ShareGroupMember{{MemberID: "a"}, {MemberID: "b"}}}},
		}
		out := w.Begin(t.Context(), in.Snap.At, in.Pairs)
		(&compute.Computer{}).Scrape(in, out, time.Now())
		md, err := out.Finish()
		require.NoError(t, err)
		dps := pmetric.NewNumberDataPointSlice()
		emit.EachMetric(md, func(m pmetric.Metric) {
			if m.Name() == "kafka.share_group.members" {
				m.Gauge().DataPoints().CopyTo(dps)
			}
		})
		return dps
	}
	whole := members(false)
	require.Equal(t, 1, whole.Len())
	require.Equal(t, int64(3), whole.At(0).IntValue(), "both groups described: summed over them")
	require.Zero(t, members(true).Len(), "one group's describe failed: no sum over the other")
}

// The retention margins are computed from the read's plain limits and
// written as such: group a on "dated" sits at 150 of 200, the partition
// written at 1 record (1,000 bytes) a second and capped at 60,000 bytes,
// so 49,000 bytes follow the record and 11 s are left before they reach
// the cap, far sooner than its 7 days; per partition and per topic, both
// with retention size. Topics the limits do not name get none.
func TestRetentionMarginsComeFromTheReadsLimits(t *testing.T) {
	cfg := emit.DefaultMetricsBuilderConfig()
	cfg.Metrics.KafkaConsumerGroupPartitionRetentionMargin.Enabled = true
	w, err := emit.New(emit.Settings{MetricsBuilderConfig: cfg, Replica: "test"}, receivertest.NewNopSettings(metadata.Type))
	require.NoError(t, err)
	in := tallyInputRates(true)
	dated := kafka.TopicPartition{Topic: "dated", Partition: 0}
	in.Retention = retention.Limits{
		Topics:         map[string]kafka.TopicRetention{"dated": {Delete: true, RetentionMs: 604_800_000, RetentionBytes: 60_000}},
		BytesPerOffset: map[kafka.TopicPartition]float64{dated: 1000},
	}
	out := w.Begin(t.Context(), in.Snap.At, in.Pairs)
	(&compute.Computer{Retention: retention.NewTracker()}).Scrape(in, out, time.Now())
	md, err := out.Finish()
	require.NoError(t, err)

	got := map[string][]string{}
	emit.EachMetric(md, func(m pmetric.Metric) {
		if m.Name() != "kafka.consumer_group.retention_margin" && m.Name() != "kafka.consumer_group.partition_retention_margin" {
			return
		}
		for i := range m.Gauge().DataPoints().Len() {
			dp := m.Gauge().DataPoints().At(i)
			group, _ := dp.Attributes().Get("group")
			topic, _ := dp.Attributes().Get("topic")
			basis, _ := dp.Attributes().Get("retention")
			got[m.Name()] = append(got[m.Name()], group.Str()+" "+topic.Str()+" "+basis.Str())
			require.InDelta(t, 11, dp.DoubleValue(), 1e-9)
		}
	})
	require.Equal(t, map[string][]string{
		"kafka.consumer_group.retention_margin":           {"a dated size"},
		"kafka.consumer_group.partition_retention_margin": {"a dated size"},
	}, got)
}
