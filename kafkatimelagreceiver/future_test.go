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

// TestRecordStampedInTheFutureGivesNoTimeLag: a producer whose clock is 5
// minutes ahead wrote the record a group waits on. Read at the first
// scrape (no table dates it yet), its stamp, after the read, gives no time:
// the pair's time lag is omitted rather than reported as 0 s, and the
// record is counted.
func TestRecordStampedInTheFutureGivesNoTimeLag(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("skewed", 1)
	ahead := time.Now().Add(5 * time.Minute)
	k.Produce("skewed", 0, ahead, ahead)
	k.Commit("reader", "skewed", map[int32]int64{0: 0})

	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	s, err := newTimeLagScraper(k.testConfig(), metadatatest.NewSettings(tt), nil)
	require.NoError(t, err)
	require.NoError(t, s.start(context.Background(), nil))
	t.Cleanup(func() { require.NoError(t, s.shutdown(context.Background())) })
	md, err := s.scrape(context.Background())
	require.NoError(t, err)

	require.Len(t, pointsOf(md, "kafka.consumer_group.lag"), 1, "the pair is reported")
	require.Empty(t, pointsOf(md, "kafka.consumer_group.time_lag"), "no time lag from a stamp after the read")
	metadatatest.AssertEqualKafkaTimeLagEstimates(t, tt, []metricdata.DataPoint[int64]{
		{Attributes: attribute.NewSet(attribute.String("method", "none")), Value: 1},
	}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualKafkaTimeLagUntimedRecords(t, tt, []metricdata.DataPoint[int64]{
		{Attributes: attribute.NewSet(attribute.String("timestamp", "future")), Value: 1},
	}, metricdatatest.IgnoreTimestamp())
}
