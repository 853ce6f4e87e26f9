package kafkatimelagreceiver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadatatest"
)

// TestSelfTelemetry: one scrape reports its duration, the Kafka requests it
// sent by API and outcome, the tracked partitions, table points and how each
// time lag was estimated, through the component's MeterProvider.
func TestSelfTelemetry(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("observed", 2)
	old := time.Now().Add(-time.Hour)
	k.Produce("observed", 0, old, old)
	k.Produce("observed", 1, old)
	k.Commit("watcher", "observed", map[int32]int64{0: 0, 1: 1})

	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	cfg := k.testConfig()
	require.NoError(t, cfg.Validate())
	s, err := newTimeLagScraper(cfg, metadatatest.NewSettings(tt), nil)
	require.NoError(t, err)
	require.NoError(t, s.start(context.Background(), nil))
	t.Cleanup(func() { require.NoError(t, s.shutdown(context.Background())) })
	_, err = s.scrape(context.Background())
	require.NoError(t, err)

	got, err := tt.GetMetric("otelcol_kafka_time_lag_scrape_duration")
	require.NoError(t, err)
	require.Equal(t, uint64(1), got.Data.(metricdata.Histogram[float64]).DataPoints[0].Count)

	requests, err := tt.GetMetric("otelcol_kafka_time_lag_requests")
	require.NoError(t, err)
	byAPI := map[string]int64{}
	for _, dp := range requests.Data.(metricdata.Sum[int64]).DataPoints {
		api, _ := dp.Attributes.Value("api")
		outcome, _ := dp.Attributes.Value("outcome")
		require.Equal(t, "success", outcome.AsString())
		byAPI[api.AsString()] += dp.Value
	}
	require.Equal(t, int64(1), byAPI["ListOffsets"], "one broker: one ListOffsets")
	require.Equal(t, int64(1), byAPI["Fetch"], "one record read for the lagging partition")
	require.GreaterOrEqual(t, byAPI["OffsetFetch"], int64(1))

	metadatatest.AssertEqualKafkaTimeLagTrackedPartitions(t, tt,
		[]metricdata.DataPoint[int64]{{Value: 2}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualKafkaTimeLagTablePoints(t, tt,
		[]metricdata.DataPoint[int64]{{Value: 2}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualKafkaTimeLagEstimates(t, tt, []metricdata.DataPoint[int64]{
		{Attributes: attribute.NewSet(attribute.String("method", "caught_up")), Value: 1},
		{Attributes: attribute.NewSet(attribute.String("method", "record_timestamp")), Value: 1},
	}, metricdatatest.IgnoreTimestamp())
}
