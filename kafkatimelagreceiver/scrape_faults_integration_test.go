package kafkatimelagreceiver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadatatest"
)

// TestCommittedAboveEndOffsetIsFlagged: a group committed past the end of a
// partition (the topic was deleted and recreated, the log truncated by an
// unclean leader election, or the consumer committed offsets it never
// read). Its lag is still 0, but every scrape that sees it counts it in the
// receiver's own telemetry and says so in the debug log, naming the group
// and the partition, so that "caught up" is not all an SRE gets to see.
func TestCommittedAboveEndOffsetIsFlagged(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("short", 2)
	k.Produce("short", 0, time.Now())
	k.Produce("short", 1, time.Now())
	k.Commit("ahead", "short", map[int32]int64{0: 50, 1: 1})

	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	settings := metadatatest.NewSettings(tt)
	core, logs := observer.New(zapcore.DebugLevel)
	settings.Logger = zap.New(core)
	cfg := k.testConfig()
	require.NoError(t, cfg.Validate())
	s, err := newTimeLagScraper(cfg, settings, nil)
	require.NoError(t, err)
	require.NoError(t, s.start(context.Background(), nil))
	t.Cleanup(func() { require.NoError(t, s.shutdown(context.Background())) })

	for scrape := 1; scrape <= 2; scrape++ {
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		require.Equal(t, int64(0), pointsOf(md, "kafka.consumer_group.lag")[pointKey{"ahead", "short", 0}].intValue)

		got, err := tt.GetMetric("otelcol_kafka_time_lag_commits_beyond_end")
		require.NoError(t, err, "the receiver counts commits above the end offset")
		points := got.Data.(metricdata.Sum[int64]).DataPoints
		require.Len(t, points, 1)
		require.Equal(t, int64(scrape), points[0].Value, "one pair, seen by %d scrapes", scrape)

		flagged := logs.FilterMessageSnippet("above the end offset").All()
		require.Len(t, flagged, scrape, "one debug line per scrape")
		entry := flagged[scrape-1]
		require.Equal(t, zapcore.DebugLevel, entry.Level)
		fields := entry.ContextMap()
		require.EqualValues(t, 1, fields["pairs"])
		require.Equal(t, []any{"ahead short/0 committed 50, end 1"}, fields["examples"])
	}
}

// TestGroupWhoseOffsetFetchFailedHasNoStatus: the coordinator of one group
// fails its OffsetFetch for a scrape. Nothing is known of where the group
// is, so its status is left out (it used to be reported OK, from no
// partitions at all) and the debug log says which group and why; its state
// and rebalances, which were read, are still reported. When the read works
// again, the status comes back judged on the scrapes that did read the
// group: the failed one neither reset its history nor added to it.
func TestGroupWhoseOffsetFetchFailedHasNoStatus(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("work", 1)
	now := time.Now()
	k.Produce("work", 0, now, now, now)
	k.Commit("unlucky", "work", map[int32]int64{0: 1})
	k.Commit("fine", "work", map[int32]int64{0: 3})

	cfg := k.healthConfig(2)
	core, logs := observer.New(zapcore.DebugLevel)
	unreadable := &unreadableGroups{failing: map[string]bool{}}
	s := startScraperWith(t, cfg, zap.New(core), func(c kafka.Cluster) kafka.Cluster {
		unreadable.Cluster = c
		return unreadable
	})

	v := scrapeGroup(t, s, "unlucky")
	require.Equal(t, "OK", v.status, "one point: nothing to judge yet")

	unreadable.failing["unlucky"] = true
	md, err := s.scrape(context.Background())
	require.Error(t, err, "the failed read is the scrape's error")
	v = viewGroup(t, md, "unlucky")
	require.Empty(t, v.status, "no status for a group whose offsets were not read")
	for _, p := range healthPointsOf(md, "kafka.consumer_group.status") {
		require.NotEqual(t, "unlucky", p.attrs["group"], "no status point at all, not even a 0")
	}
	require.Empty(t, v.partitionStatus)
	require.Equal(t, "Empty", v.state, "its description was read")
	require.True(t, v.hasCount, "its rebalance count is known")
	require.Equal(t, "OK", viewGroup(t, md, "fine").status, "the other group is judged as usual")
	omitted := logs.FilterMessageSnippet("status omitted").All()
	require.Len(t, omitted, 1)
	require.Equal(t, zapcore.DebugLevel, omitted[0].Level)
	require.Equal(t, []any{"unlucky"}, omitted[0].ContextMap()["groups"])

	delete(unreadable.failing, "unlucky")
	v = scrapeGroup(t, s, "unlucky")
	require.Equal(t, "STOP", v.status, "two real points, lagging and unmoved with no members: the window survived the failed scrape")
}

// TestRebalanceCountOfReturningGroupRestartsWithNewStartTime: a group is
// deleted, missing from enough scrapes to be forgotten, and created again.
// Its kafka.consumer_group.rebalances count starts over from 0, and so does
// the sum's start time: a cumulative sum that drops to 0 under its old start
// time reads, to a backend, as a counter that went backwards.
func TestRebalanceCountOfReturningGroupRestartsWithNewStartTime(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("work", 1)
	k.Produce("work", 0, time.Now())
	k.Commit("phoenix", "work", map[int32]int64{0: 1})
	s := startScraper(t, k.testConfig())

	rebalances := func() (healthPoint, pcommon.Timestamp) {
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		var found []healthPoint
		for _, p := range healthPointsOf(md, "kafka.consumer_group.rebalances") {
			if p.attrs["group"] == "phoenix" {
				found = append(found, p)
			}
		}
		require.LessOrEqual(t, len(found), 1)
		if len(found) == 0 {
			return healthPoint{}, 0
		}
		return found[0], pcommon.Timestamp(pointsOf(md, "kafka.consumer_group.offset")[pointKey{"phoenix", "work", 0}].timestamp.UnixNano())
	}
	first, firstAt := rebalances()
	require.NotZero(t, firstAt)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	deleted, err := k.Admin.DeleteGroup(ctx, "phoenix")
	require.NoError(t, err)
	require.NoError(t, deleted.Err)
	for range 2 { // missing from two scrapes: forgotten
		p, _ := rebalances()
		require.Empty(t, p.attrs, "a deleted group has no count")
	}

	k.Commit("phoenix", "work", map[int32]int64{0: 1})
	again, againAt := rebalances()
	require.Equal(t, int64(0), again.value)
	require.Greater(t, again.start, firstAt, "the count starts over after its last point (start %v)", first.start)
	require.LessOrEqual(t, again.start, againAt)
}
