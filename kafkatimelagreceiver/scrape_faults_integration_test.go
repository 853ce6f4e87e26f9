package kafkatimelagreceiver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

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
	k.createTopic("short", 2)
	k.produce("short", 0, time.Now())
	k.produce("short", 1, time.Now())
	k.commit("ahead", "short", map[int32]int64{0: 50, 1: 1})

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
