package kafkatimelagreceiver

import (
	"context"
	"testing"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

func TestCaughtUpGroupOnIdleTopicIsZero(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("idle", 1)
	k.Produce("idle", 0, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour))
	k.Commit("done", "idle", map[int32]int64{0: 2})

	s := startScraper(t, k.testConfig())
	for range 2 {
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		key := pointKey{"done", "idle", 0}
		require.Equal(t, int64(0), pointsOf(md, "kafka.consumer_group.lag")[key].intValue)
		tl, ok := pointsOf(md, "kafka.consumer_group.time_lag")[key]
		require.True(t, ok)
		require.Equal(t, 0.0, tl.doubleValue)
	}
}

// A producer that stopped leaves the table flat at the end: the time lag of
// a group behind it keeps growing with the clock, finite and correct.
func TestTimeLagGrowsAfterProducerStops(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("stopped", 1)
	stamp := time.Now().Add(-3 * time.Second).Truncate(time.Millisecond)
	k.Produce("stopped", 0, stamp, stamp.Add(time.Second))
	k.Commit("late", "stopped", map[int32]int64{0: 1})

	cfg := k.testConfig()
	cfg.SamplingInterval = 200 * time.Millisecond
	s := startScraper(t, cfg)
	key := pointKey{"late", "stopped", 0}
	var previous float64
	for i := range 4 {
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		tl := pointsOf(md, "kafka.consumer_group.time_lag")[key]
		truth := tl.timestamp.Sub(stamp.Add(time.Second)).Seconds()
		require.InDelta(t, truth, tl.doubleValue, 1.0, "scrape %d", i)
		require.Greater(t, tl.doubleValue, previous)
		previous = tl.doubleValue
		time.Sleep(600 * time.Millisecond)
	}
}

// startOnOldTopic creates "phoenix", whose ten records are two hours old,
// commits the group "reader" at offset 2 and starts a scraper, whose first
// scrape reads (and caches) that record's timestamp.
func startOnOldTopic(t *testing.T) (*testKafka, *timeLagScraper) {
	t.Helper()
	k := newTestKafka(t, 1)
	k.CreateTopic("phoenix", 1)
	old := time.Now().Add(-2 * time.Hour)
	var stamps []time.Time
	for i := range 10 {
		stamps = append(stamps, old.Add(time.Duration(i)*time.Minute))
	}
	k.Produce("phoenix", 0, stamps...)
	k.Commit("reader", "phoenix", map[int32]int64{0: 2})

	s := startScraper(t, k.testConfig())
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	require.Greater(t, pointsOf(md, "kafka.consumer_group.time_lag")[pointKey{"reader", "phoenix", 0}].doubleValue, 3600.0,
		"the old record at offset 2 is two hours old")
	return k, s
}

// recreateOldTopic deletes "phoenix" and creates it again with records
// stamped fresh, fresh+step, ...; the group starts again at offset 2.
func recreateOldTopic(t *testing.T, k *testKafka, records int, step time.Duration) (stamps []time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := k.Admin.DeleteTopics(ctx, "phoenix")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		resp, err := k.Admin.CreateTopic(ctx, 1, 1, nil, "phoenix")
		return err == nil && resp.Err == nil
	}, 20*time.Second, 100*time.Millisecond)
	k.Client.PurgeTopicsFromClient("phoenix") // forget the old topic id
	fresh := time.Now().Add(-5 * time.Second)
	for i := range records {
		stamps = append(stamps, fresh.Add(time.Duration(i)*step))
	}
	k.Produce("phoenix", 0, stamps...)
	k.Commit("reader", "phoenix", map[int32]int64{0: 2})
	return stamps
}

// scrapeRecreatedTopic scrapes until the receiver reads the new topic's end
// offset (sarama learns of it when the old leader answers for it) and
// returns the scrape and the group's time lag.
func scrapeRecreatedTopic(t *testing.T, s *timeLagScraper, end int64) (md pmetric.Metrics, timeLag point) {
	t.Helper()
	require.Eventually(t, func() bool {
		var err error
		md, err = s.scrape(context.Background())
		var ok bool
		timeLag, ok = pointsOf(md, "kafka.consumer_group.time_lag")[pointKey{"reader", "phoenix", 0}]
		return err == nil && ok && pointsOf(md, "kafka.partition.current_offset")[pointKey{"", "phoenix", 0}].intValue == end
	}, 20*time.Second, 200*time.Millisecond)
	return md, timeLag
}

// A topic deleted and recreated starts its offsets again: the old table and
// what was read about old records must not leak into the new topic's values.
func TestTopicRecreatedResetsTable(t *testing.T) {
	k, s := startOnOldTopic(t)
	stamps := recreateOldTopic(t, k, 4, time.Second)
	md, tl := scrapeRecreatedTopic(t, s, 4)
	require.Equal(t, int64(2), pointsOf(md, "kafka.consumer_group.lag")[pointKey{"reader", "phoenix", 0}].intValue)
	truth := tl.timestamp.Sub(stamps[2]).Seconds()
	require.InDelta(t, truth, tl.doubleValue, 1.0, "time lag comes from the new topic's records, not the old table")
	// One backward read only suspends the old table (a new leader of an old
	// broker can lag for a moment); the next confirms the reset.
	_, err := s.scrape(context.Background())
	require.NoError(t, err)
	oldest := tableHeads(s)[kafka.TopicPartition{Topic: "phoenix", Partition: 0}]
	require.LessOrEqual(t, oldest.Offset, int64(4), "the table was reset: nothing left of the old log's end offset 10")
}

// A topic deleted and recreated whose new log grows past the old end offset
// before the next sample never goes backwards: only its topic ID tells it
// from the old topic. The old table and the record timestamps read from the
// old log must not date the new log's records.
func TestTopicRecreatedPastOldEndIsNotTheOldTopic(t *testing.T) {
	k, s := startOnOldTopic(t)
	require.NoError(t, s.sampler.Sample(context.Background(), true))
	stamps := recreateOldTopic(t, k, 12, 100*time.Millisecond) // end offset 12, past the old 10
	require.NoError(t, s.sampler.Sample(context.Background(), true))
	_, tl := scrapeRecreatedTopic(t, s, 12)
	truth := tl.timestamp.Sub(stamps[2]).Seconds()
	require.InDelta(t, truth, tl.doubleValue, 1.0, "time lag comes from the new topic's record at offset 2, not the old one's")
}

// Retention deleted records the group never read: lag still counts from the
// committed offset, time lag comes from the oldest record still there, and
// lost_messages says how many are gone.
func TestCommittedBelowLogStart(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("retained", 1)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var stamps []time.Time
	for i := range 10 {
		stamps = append(stamps, base.Add(time.Duration(i)*time.Minute))
	}
	k.Produce("retained", 0, stamps...)
	k.Commit("slowpoke", "retained", map[int32]int64{0: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := k.Admin.DeleteRecords(ctx, kadm.Offsets{"retained": {0: {Topic: "retained", Partition: 0, At: 6}}})
	require.NoError(t, err)
	require.NoError(t, resp.Error())

	s := startScraper(t, k.testConfig())
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	key := pointKey{"slowpoke", "retained", 0}
	require.Equal(t, int64(8), pointsOf(md, "kafka.consumer_group.lag")[key].intValue)
	require.Equal(t, int64(4), pointsOf(md, "kafka.consumer_group.lost_messages")[key].intValue)
	tl := pointsOf(md, "kafka.consumer_group.time_lag")[key]
	require.InDelta(t, tl.timestamp.Sub(stamps[6]).Seconds(), tl.doubleValue, 1.0)
}

func TestCommittedAboveEndOffset(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("short", 1)
	k.Produce("short", 0, time.Now())
	k.Commit("ahead", "short", map[int32]int64{0: 50})

	s := startScraper(t, k.testConfig())
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	key := pointKey{"ahead", "short", 0}
	require.Equal(t, int64(0), pointsOf(md, "kafka.consumer_group.lag")[key].intValue)
	tl, ok := pointsOf(md, "kafka.consumer_group.time_lag")[key]
	require.True(t, ok)
	require.Equal(t, 0.0, tl.doubleValue)
}

// TestRecordReadsAreBoundedAndCached: out-of-table groups cost one Fetch per
// broker per scrape while their commits move, none while they stand still, and
// never more records than max_record_reads_per_scrape.
func TestRecordReadsAreBoundedAndCached(t *testing.T) {
	k := newTestKafka(t, 3)
	k.CreateTopic("history", 30)
	old := time.Now().Add(-30 * time.Minute)
	offsets := map[int32]int64{}
	for p := range int32(30) {
		k.Produce("history", p, old, old.Add(time.Second), old.Add(2*time.Second))
		offsets[p] = 1
	}
	k.Commit("behind", "history", offsets)

	cfg := k.testConfig()
	cfg.MaxRecordReadsPerScrape = 20
	s := startScraper(t, cfg)
	fetchesBefore := k.Requests(int16(kmsg.Fetch))
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	fetches := k.Requests(int16(kmsg.Fetch)) - fetchesBefore
	t.Logf("first scrape: %d Fetch requests for 20 capped record reads over 3 brokers", fetches)
	require.LessOrEqual(t, fetches, int64(3))
	require.Len(t, pointsOf(md, "kafka.consumer_group.time_lag"), 20, "the cap bounds the estimates of this scrape")

	md, err = s.scrape(context.Background())
	require.NoError(t, err)
	require.Len(t, pointsOf(md, "kafka.consumer_group.time_lag"), 30, "the rest are read on the next scrape")

	fetchesBefore = k.Requests(int16(kmsg.Fetch))
	md, err = s.scrape(context.Background())
	require.NoError(t, err)
	require.Equal(t, fetchesBefore, k.Requests(int16(kmsg.Fetch)), "unchanged commits cost no Fetch")
	require.Len(t, pointsOf(md, "kafka.consumer_group.time_lag"), 30)
}
