//go:build !unit

package kafkatimelagreceiver

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/emit"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/health"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadatatest"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/read"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// chunkTestSnapshot has groups x partitions pairs on topic "t"; every
// partition ends at offset 10 and group g commits partition p at (g+p) mod 11.
func chunkTestSnapshot(groups, partitions int) (*lag.Snapshot, []string) {
	snap := &lag.Snapshot{
		At:        time.Now().UnixNano(),
		Committed: map[string]kafka.Commits{},
		End:       map[kafka.TopicPartition]int64{},
		Start:     map[kafka.TopicPartition]int64{},
	}
	var names []string
	for p := range partitions {
		snap.End[kafka.TopicPartition{Topic: "t", Partition: int32(p)}] = 10
	}
	for g := range groups {
		name := fmt.Sprintf("group-%02d", g)
		names = append(names, name)
		offsets := map[kafka.TopicPartition]int64{}
		for p := range partitions {
			offsets[kafka.TopicPartition{Topic: "t", Partition: int32(p)}] = int64((g + p) % 11)
		}
		snap.Committed[name] = kafka.CommitsOf(offsets)
	}
	return snap, names
}

// chunkTestScraper is a scraper with every per-pair metric on, whose table
// estimates every append time as one second per offset before the read.
func chunkTestScraper(t *testing.T, snap *lag.Snapshot, push emit.PushFunc) *timeLagScraper {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.Metrics.KafkaPartitionOldestOffset.Enabled = true
	cfg.Metrics.KafkaConsumerGroupOffset.Enabled = true
	cfg.Metrics.KafkaConsumerGroupPartitionStatus.Enabled = true
	cfg.Metrics.KafkaConsumerGroupLostMessages.Enabled = true
	s, err := newTimeLagScraper(cfg, receivertest.NewNopSettings(metadata.Type), push)
	require.NoError(t, err)
	tracked := map[kafka.TopicPartition]struct{}{}
	for tp := range snap.End {
		tracked[tp] = struct{}{}
	}
	// The reads below carry made-up times: a store watching the wall clock
	// would take them for clock steps.
	s.reader.Tables = timetable.NewStore(s.cfg.MaxSamples, 0, nil)
	s.reader.Tables.Track(tracked, time.Now(), 0)
	for tp, end := range snap.End {
		at := time.Unix(0, snap.At-end*int64(time.Second))
		s.reader.Tables.Record(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{tp: 0}, Sent: at, Received: at})
	}
	return s
}

// chunkTestInput is what a scrape of snap would have read, every group
// listed.
func chunkTestInput(s *timeLagScraper, snap *lag.Snapshot, names []string) *read.Input {
	idx := lag.NewIndex(snap)
	tabled := idx.ResolveTables(s.reader.Tables)
	in := &read.Input{Snap: snap, Index: idx, Estimates: lag.Estimate(idx, lag.AppendTimes(tabled, s.reader.Tables, s.reader.Records, snap.At))}
	for _, name := range names {
		in.Groups = append(in.Groups, read.Group{Name: name, Reported: true})
		in.Pairs += len(snap.Committed[name])
	}
	return in
}

// pointsByMetric counts the points of each metric and the distinct
// (group, partition) pairs of kafka.consumer_group.offset in md.
func pointsByMetric(t *testing.T, md pmetric.Metrics, counts map[string]int, pairs map[string]bool) {
	t.Helper()
	for name, m := range metricsByName(md) {
		dps := m.Gauge().DataPoints()
		counts[name] += dps.Len()
		if name != "kafka.consumer_group.offset" {
			continue
		}
		for i := range dps.Len() {
			group, _ := dps.At(i).Attributes().Get("group")
			partition, _ := dps.At(i).Attributes().Get("partition")
			key := fmt.Sprintf("%s/%d", group.Str(), partition.Int())
			require.False(t, pairs[key], "pair %s sent twice", key)
			pairs[key] = true
		}
	}
}

// A scrape of more pairs than chunkPairs sends its per-pair gauges to the
// next consumer in chunks as it builds them; what goes with the scrape is
// the per-group and per-partition metrics. Nothing is lost or sent twice.
func TestLargeScrapeIsPushedInChunks(t *testing.T) {
	const groups, partitions = 3, 4000 // 12,000 pairs: chunks of 5,000, 5,000, 2,000
	snap, names := chunkTestSnapshot(groups, partitions)
	var chunks []pmetric.Metrics
	push := func(_ context.Context, md pmetric.Metrics) error {
		chunks = append(chunks, md)
		return nil
	}
	s := chunkTestScraper(t, snap, push)

	md, err := s.report(t.Context(), chunkTestInput(s, snap, names))
	require.NoError(t, err)

	require.Len(t, chunks, 3)
	counts, pairs := map[string]int{}, map[string]bool{}
	for i, chunk := range chunks {
		rm := chunk.ResourceMetrics()
		require.Equal(t, 1, rm.Len())
		require.Equal(t, metadata.ScopeName, rm.At(0).ScopeMetrics().At(0).Scope().Name())
		before := len(pairs)
		pointsByMetric(t, chunk, counts, pairs)
		require.LessOrEqual(t, len(pairs)-before, 5000, "chunk %d", i)
	}
	const n = groups * partitions
	require.Len(t, pairs, n)
	require.Equal(t, n, counts["kafka.consumer_group.offset"])
	require.Equal(t, n, counts["kafka.consumer_group.lag"])
	require.Equal(t, n, counts["kafka.consumer_group.time_lag"])
	require.Equal(t, n*len(health.Statuses), counts["kafka.consumer_group.partition_status"])

	rest := metricsByName(md)
	for _, perPair := range []string{"kafka.consumer_group.offset", "kafka.consumer_group.lag", "kafka.consumer_group.time_lag", "kafka.consumer_group.partition_status"} {
		require.NotContains(t, rest, perPair, "sent in the chunks, not again with the scrape")
	}
	require.Equal(t, partitions, rest["kafka.partition.current_offset"].Gauge().DataPoints().Len())
	require.Equal(t, groups, rest["kafka.consumer_group.lag_sum"].Gauge().DataPoints().Len())
	require.Equal(t, groups*len(health.Statuses), rest["kafka.consumer_group.status"].Gauge().DataPoints().Len())
}

// A scrape that fits in one chunk, or one without a consumer to push to,
// goes out whole with the scrape.
func TestSmallScrapeGoesOutWhole(t *testing.T) {
	snap, names := chunkTestSnapshot(2, 50)
	push := func(context.Context, pmetric.Metrics) error {
		t.Fatal("a scrape of 100 pairs must not be pushed in chunks")
		return nil
	}
	s := chunkTestScraper(t, snap, push)
	md, err := s.report(t.Context(), chunkTestInput(s, snap, names))
	require.NoError(t, err)
	require.Equal(t, 100, metricsByName(md)["kafka.consumer_group.offset"].Gauge().DataPoints().Len())

	snap, names = chunkTestSnapshot(3, 4000)
	s = chunkTestScraper(t, snap, nil)
	md, err = s.report(t.Context(), chunkTestInput(s, snap, names))
	require.NoError(t, err)
	require.Equal(t, 12000, metricsByName(md)["kafka.consumer_group.offset"].Gauge().DataPoints().Len())
}

// A chunk the pipeline refuses is reported with the scrape's error, with
// how many points it held; the other chunks are still sent.
func TestRefusedChunkIsReported(t *testing.T) {
	snap, names := chunkTestSnapshot(3, 4000)
	calls := 0
	push := func(_ context.Context, md pmetric.Metrics) error {
		calls++
		if calls == 2 {
			return fmt.Errorf("sending queue is full (%d points)", md.DataPointCount())
		}
		return nil
	}
	s := chunkTestScraper(t, snap, push)
	md, err := s.report(t.Context(), chunkTestInput(s, snap, names))
	require.Equal(t, 3, calls)
	require.ErrorContains(t, err, "send per-pair metrics")
	require.ErrorContains(t, err, "sending queue is full")
	require.NotEmpty(t, metricsByName(md), "the scrape's own metrics still go out")
}

// The chunks a scrape pushes itself count in the receiver's accepted and
// refused points, as what the scraper controller sends does.
func TestPushCountsReceiverTelemetry(t *testing.T) {
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	snap, names := chunkTestSnapshot(1, 10)
	s := chunkTestScraper(t, snap, nil)
	md, err := s.report(t.Context(), chunkTestInput(s, snap, names))
	require.NoError(t, err)
	points := md.DataPointCount()

	sink := new(consumertest.MetricsSink)
	push, err := emit.NewPush(metadatatest.NewSettings(tt), sink)
	require.NoError(t, err)
	require.NoError(t, push(t.Context(), md))
	require.Equal(t, points, sink.DataPointCount())
	accepted, err := tt.GetMetric("otelcol_receiver_accepted_metric_points")
	require.NoError(t, err)
	require.Equal(t, int64(points), accepted.Data.(metricdata.Sum[int64]).DataPoints[0].Value)

	refusing, err := emit.NewPush(metadatatest.NewSettings(tt), consumertest.NewErr(errors.New("refused")))
	require.NoError(t, err)
	require.Error(t, refusing(t.Context(), md))
	var notAccepted int64
	for _, name := range []string{"otelcol_receiver_refused_metric_points", "otelcol_receiver_failed_metric_points"} {
		if m, err := tt.GetMetric(name); err == nil {
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				notAccepted += dp.Value
			}
		}
	}
	require.Equal(t, int64(points), notAccepted)
}

// A pipeline that never takes a chunk holds the scrape at most one
// collection interval (the write's deadline, when the scrape has no
// `timeout`): the chunk it holds is refused with the context's error, and
// the write stops at the next chunk instead of building the rest.
func TestStuckPipelineDoesNotHoldTheScrape(t *testing.T) {
	snap, names := chunkTestSnapshot(3, 4000)
	var deadlines []time.Duration
	push := func(ctx context.Context, _ pmetric.Metrics) error {
		deadline, ok := ctx.Deadline()
		require.True(t, ok, "pushed without a deadline")
		deadlines = append(deadlines, time.Until(deadline))
		<-ctx.Done()
		return ctx.Err()
	}
	s := chunkTestScraper(t, snap, push)
	s.cfg.CollectionInterval = 50 * time.Millisecond
	ctx, cancel := s.scrapeContext(context.Background())
	defer cancel()
	_, err := s.report(ctx, chunkTestInput(s, snap, names))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "stopped writing after")
	require.Regexp(t, `send per-pair metrics: (\d+) of (\d+) points refused: context deadline exceeded`, err.Error())
	require.Less(t, len(deadlines), 3, "the last chunk is not built")
	require.LessOrEqual(t, deadlines[0], s.cfg.CollectionInterval)
}
