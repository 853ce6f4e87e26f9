package kafkatimelagreceiver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/collector/scraper/scrapererror"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kafkacount"
)

// TestScrapeAgainstBlackHoledBrokerEndsAtItsDeadline: with the default
// `timeout: 0` the controller gives a scrape no deadline, and each request
// waits 10 s for an answer. A broker that swallows ListOffsets then held
// the scrape for as long as its requests took, one after the other. The
// scrape now ends at its own deadline, one collection_interval: the request
// in flight is cut, nothing more is asked, and what was read (the committed
// offsets) is reported with an error that says the deadline passed.
func TestScrapeAgainstBlackHoledBrokerEndsAtItsDeadline(t *testing.T) {
	requireNoLeakedGoroutines(t)
	k := newTestKafka(t, 1)
	k.CreateTopic("quiet", 1)
	k.Produce("quiet", 0, time.Now())
	k.Commit("waiting", "quiet", map[int32]int64{0: 1})
	hole := kafkacount.NewBlackHole(k.Cluster, int16(kmsg.ListOffsets))

	cfg := k.testConfig()
	cfg.Timeout = 0 // the default: each request waits defaultRequestTimeout
	cfg.CollectionInterval = time.Second
	require.Less(t, cfg.CollectionInterval, defaultRequestTimeout)
	s := startScraper(t, cfg)
	_, err := s.scrape(context.Background())
	require.NoError(t, err)

	hole.Set(true)
	md, err := s.scrape(context.Background())
	require.Error(t, err)
	require.True(t, scrapererror.IsPartialScrapeError(err))
	require.ErrorContains(t, err, context.DeadlineExceeded.Error(), "the scrape's own deadline ended it, not a request's read timeout")
	require.Equal(t, int64(1), hole.Swallowed(), "nothing more was asked after the deadline")
	require.Contains(t, pointsOf(md, "kafka.consumer_group.offset"), pointKey{"waiting", "quiet", 0})

	hole.Set(false)
	md, err = s.scrape(context.Background())
	require.NoError(t, err, "the cut connection is opened again")
	require.Equal(t, int64(0), pointsOf(md, "kafka.consumer_group.lag")[pointKey{"waiting", "quiet", 0}].intValue)
}

// TestShutdownWithBlackHoledBrokerSavesAndReturnsByDeadline: every broker
// stops answering while a scrape and a sample are waiting on it, with a
// request timeout of minutes, and the collector shuts the receiver down
// with a 5 s grace period, as Kubernetes does before its SIGKILL. Shutdown
// used to wait for the scrape, then the sample, then save the tables:
// minutes here, so the SIGKILL lost them. Now it saves first, cuts the
// requests, returns within the grace period without error, and leaves no
// goroutine behind.
func TestShutdownWithBlackHoledBrokerSavesAndReturnsByDeadline(t *testing.T) {
	requireNoLeakedGoroutines(t)
	k := newTestKafka(t, 1)
	k.CreateTopic("orders", 2)
	k.Produce("orders", 0, time.Now())
	k.Produce("orders", 1, time.Now())
	k.Commit("group", "orders", map[int32]int64{0: 0, 1: 1})
	listGroups := kafkacount.NewBlackHole(k.Cluster, int16(kmsg.ListGroups))
	listOffsets := kafkacount.NewBlackHole(k.Cluster, int16(kmsg.ListOffsets))

	store := newMemoryStorage()
	storageID := component.MustNewID("file_storage")
	cfg := k.testConfig()
	cfg.Timeout = 5 * time.Minute
	cfg.CollectionInterval = 100 * time.Millisecond
	cfg.SamplingInterval = 100 * time.Millisecond
	cfg.Storage = &storageID
	cfg.StorageInterval = time.Hour // only the shutdown save
	require.NoError(t, cfg.Validate())
	sink := new(consumertest.MetricsSink)
	rcvr, err := NewFactory().CreateMetrics(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, rcvr.Start(context.Background(), hostWith{storageID: store}))
	require.Eventually(t, func() bool { return sink.DataPointCount() > 0 }, faultDeadline, 10*time.Millisecond, "a first scrape tracks the partitions")

	listGroups.Set(true)
	listOffsets.Set(true)
	// One request is swallowed; sarama holds the others to the broker
	// (the scrape's, the sampler's) until the connection is free.
	require.Eventually(t, func() bool {
		return listGroups.Swallowed()+listOffsets.Swallowed() > 0
	}, faultDeadline, 10*time.Millisecond)
	time.Sleep(3 * cfg.CollectionInterval) // a scrape and a sample are due and waiting

	const grace = 5 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- rcvr.Shutdown(ctx) }()
	select {
	case err := <-done:
		require.NoError(t, err, "everything stopped within the grace period")
	case <-time.After(grace + faultDeadline):
		t.Fatalf("Shutdown still running %s after its %s deadline", faultDeadline, grace)
	}

	saved := store.values[stateKey]
	require.NotEmpty(t, saved, "tables saved at shutdown")
	restored, err := timetable.NewStore(cfg.MaxSamples, time.Minute, nil).RestoreState(saved)
	require.NoError(t, err)
	require.Equal(t, 2, restored.Tables, "both partitions' tables")
}
