package kafkatimelagreceiver

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/collector/scraper/scrapererror"
)

// TestScrapeAgainstKafka checks lag exactly and time lag against the record
// timestamps, on the very first scrape (the records predate any table).
func TestScrapeAgainstKafka(t *testing.T) {
	k := newTestKafka(t, 3)
	k.CreateTopic("orders", 3)
	k.CreateTopic("__internal", 1)
	base := time.Now().Add(-90 * time.Minute).Truncate(time.Millisecond)
	var stamps []time.Time
	for i := range 20 {
		stamps = append(stamps, base.Add(time.Duration(i)*time.Minute))
	}
	k.Produce("orders", 0, stamps...)     // offsets 0..19
	k.Produce("orders", 1, stamps[:5]...) // offsets 0..4
	k.Produce("orders", 2, stamps[:3]...) // offsets 0..2
	k.Produce("__internal", 0, stamps[:2]...)

	k.Commit("billing", "orders", map[int32]int64{0: 0, 1: 4, 2: 3}) // p2 caught up
	k.Commit("billing", "__internal", map[int32]int64{0: 0})         // excluded topic
	k.Commit("ignored-batch", "orders", map[int32]int64{0: 1})       // excluded group

	cfg := k.testConfig()
	cfg.Groups.Exclude = []string{"^ignored-"}
	s := startScraper(t, cfg)
	md, err := s.scrape(context.Background())
	require.NoError(t, err)

	lag := pointsOf(md, "kafka.consumer_group.lag")
	timeLag := pointsOf(md, "kafka.consumer_group.time_lag")
	offset := pointsOf(md, "kafka.consumer_group.offset")
	require.Len(t, lag, 3, "only billing on orders: other group and topic are filtered")
	require.Equal(t, int64(20), lag[pointKey{"billing", "orders", 0}].intValue)
	require.Equal(t, int64(1), lag[pointKey{"billing", "orders", 1}].intValue)
	require.Equal(t, int64(0), lag[pointKey{"billing", "orders", 2}].intValue)
	require.Equal(t, int64(4), offset[pointKey{"billing", "orders", 1}].intValue)

	at := lag[pointKey{"billing", "orders", 0}].timestamp
	for key, p := range lag {
		require.Equal(t, at, p.timestamp, "every point of a scrape carries the end-offset read time: %v", key)
	}
	truth := func(recordTime time.Time) float64 { return at.Sub(recordTime).Seconds() }
	require.InDelta(t, truth(stamps[0]), timeLag[pointKey{"billing", "orders", 0}].doubleValue, 1.0)
	require.InDelta(t, truth(stamps[4]), timeLag[pointKey{"billing", "orders", 1}].doubleValue, 1.0)
	require.Equal(t, 0.0, timeLag[pointKey{"billing", "orders", 2}].doubleValue)

	sum := pointsOf(md, "kafka.consumer_group.lag_sum")
	maxLag := pointsOf(md, "kafka.consumer_group.lag_max")
	maxTime := pointsOf(md, "kafka.consumer_group.time_lag_max")
	require.Equal(t, int64(21), sum[pointKey{"billing", "orders", -1}].intValue)
	require.Equal(t, int64(20), maxLag[pointKey{"billing", "orders", -1}].intValue)
	require.InDelta(t, truth(stamps[0]), maxTime[pointKey{"billing", "orders", -1}].doubleValue, 1.0)

	current := pointsOf(md, "kafka.partition.current_offset")
	require.Equal(t, int64(20), current[pointKey{"", "orders", 0}].intValue)
	require.Equal(t, int64(3), current[pointKey{"", "orders", 2}].intValue)
	require.Empty(t, pointsOf(md, "kafka.partition.oldest_offset"), "disabled by default")

	// A second scrape with unchanged commits reuses the record timestamps it
	// read: no Fetch.
	fetches := k.Requests(int16(kmsg.Fetch))
	_, err = s.scrape(context.Background())
	require.NoError(t, err)
	require.Equal(t, fetches, k.Requests(int16(kmsg.Fetch)), "cached record timestamps are not read again")
}

// TestGroupWithoutCommitOnPartition: a partition the group never committed on
// gets no lag point at all.
func TestGroupWithoutCommitOnPartition(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("events", 2)
	now := time.Now()
	k.Produce("events", 0, now, now)
	k.Produce("events", 1, now, now)
	k.Commit("reader", "events", map[int32]int64{0: 1})

	s := startScraper(t, k.testConfig())
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	lag := pointsOf(md, "kafka.consumer_group.lag")
	require.Len(t, lag, 1)
	require.Equal(t, int64(1), lag[pointKey{"reader", "events", 0}].intValue)
}

// TestListOffsetsPerScrapeAtMostBrokers: 3 brokers, 3,000 partitions: one
// ListOffsets request per leader broker, however many partitions.
func TestListOffsetsPerScrapeAtMostBrokers(t *testing.T) {
	k := newTestKafka(t, 3)
	const partitions = 3000
	k.CreateTopic("wide", partitions)
	offsets := make(map[int32]int64, partitions)
	for p := range int32(partitions) {
		offsets[p] = 0
	}
	k.Commit("wide-reader", "wide", offsets)
	k.Commit("wide-reader-2", "wide", offsets)

	s := startScraper(t, k.testConfig())
	before := k.Requests(int16(kmsg.ListOffsets))
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	listOffsets := k.Requests(int16(kmsg.ListOffsets)) - before
	t.Logf("3 brokers, %d partitions, 2 groups: %d ListOffsets requests in one scrape", partitions, listOffsets)
	require.LessOrEqual(t, listOffsets, int64(3))
	require.Len(t, pointsOf(md, "kafka.consumer_group.lag"), 2*partitions)

	// The sampler reads the same partitions with the same bound.
	before = k.Requests(int16(kmsg.ListOffsets))
	require.NoError(t, s.sampler.Sample(context.Background(), false))
	require.LessOrEqual(t, k.Requests(int16(kmsg.ListOffsets))-before, int64(3))
}

// TestKafkaDownThenUp: the receiver starts with no Kafka, scrapes fail with
// an error, and it recovers when Kafka comes up.
func TestKafkaDownThenUp(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())

	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.Brokers = []string{fmt.Sprintf("127.0.0.1:%d", port)}
	cfg.Timeout = 2 * time.Second
	s := startScraper(t, cfg)
	_, err = s.scrape(context.Background())
	require.Error(t, err)
	require.False(t, scrapererror.IsPartialScrapeError(err))

	k := newTestKafka(t, 1, kfake.Ports(port))
	k.CreateTopic("back", 1)
	k.Produce("back", 0, time.Now())
	k.Commit("g", "back", map[int32]int64{0: 0})
	require.Eventually(t, func() bool {
		md, err := s.scrape(context.Background())
		return err == nil && len(pointsOf(md, "kafka.consumer_group.lag")) == 1
	}, 30*time.Second, 200*time.Millisecond)
}
