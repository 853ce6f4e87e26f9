//go:build !unit

package kafkatimelagreceiver

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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

	s, tt := startTelemetryScraper(t, k.testConfig())
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

// TestProducerClockAheadAtColdStartStaysWithinWhatIsProven: a fresh start,
// an idempotent producer whose clock runs 1 s ahead wrote 16 records just
// before the receiver's first scrape, and 16 groups then commit on them.
// The records are older than the tables' first point (that scrape's read)
// and stamped after it, so every read bounds the producer's clock from
// above only: no time lag may come from the middle of a range open below,
// and every one exported lies between 0 and the records' age by the
// test's clock. Nothing the tables bound shows the partition's stamps are
// append times, so the records, which only their stamps could date, are
// withheld and counted.
func TestProducerClockAheadAtColdStartStaysWithinWhatIsProven(t *testing.T) {
	const ahead = time.Second
	k := newTestKafka(t, 1)
	k.CreateTopic("ahead", 1)
	before := time.Now()
	stamp := before.Add(ahead)
	for range 16 {
		k.Produce("ahead", 0, stamp)
	}
	// A group at the end has the partition tracked from the first scrape.
	k.Commit("caught-up", "ahead", map[int32]int64{0: 16})
	s, tt := startTelemetryScraper(t, k.testConfig())
	_, err := s.scrape(context.Background())
	require.NoError(t, err)
	require.Less(t, time.Now(), stamp, "the table's first point precedes the records' stamps")

	for o := range int64(16) {
		k.Commit(fmt.Sprintf("reader-%02d", o), "ahead", map[int32]int64{0: o})
	}
	// Scraped once the stamps are in the past, so that the records give a
	// time (a stamp after the scrape's read gives none).
	time.Sleep(time.Until(stamp.Add(200 * time.Millisecond)))
	var withheld int64
	for scrape := range 3 {
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		oldest := time.Since(before).Seconds()
		timeLags := pointsOf(md, "kafka.consumer_group.time_lag")
		require.Contains(t, timeLags, pointKey{"caught-up", "ahead", 0}, "scrape %d", scrape)
		for key, p := range timeLags {
			require.GreaterOrEqual(t, p.doubleValue, 0.0, "scrape %d, %s", scrape, key.group)
			require.LessOrEqual(t, p.doubleValue, oldest, "scrape %d, %s: a time lag of %.0f s for a record at most %.1f s old", scrape, key.group, p.doubleValue, oldest)
		}
		for key, p := range pointsOf(md, "kafka.consumer_group.time_lag_max") {
			require.LessOrEqual(t, p.doubleValue, oldest, "scrape %d, %s: time_lag_max", scrape, key.group)
		}
		withheld += int64(16 - (len(timeLags) - 1))
		require.Equal(t, withheld, estimatesBy(t, tt, "unproven"), "scrape %d: each pair not dated is counted unproven", scrape)
	}
}
