package kafkatimelagreceiver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

// A topic deleted and recreated whose new log grows past the old end offset
// before the next sample never goes backwards: only its topic ID tells it
// from the old topic. The old table and the record timestamps read from the
// old log must not date the new log's records.
func TestTopicRecreatedPastOldEndIsNotTheOldTopic(t *testing.T) {
	k := newTestKafka(t, 1)
	k.createTopic("phoenix", 1)
	old := time.Now().Add(-2 * time.Hour)
	var stamps []time.Time
	for i := range 10 {
		stamps = append(stamps, old.Add(time.Duration(i)*time.Minute))
	}
	k.produce("phoenix", 0, stamps...)
	k.commit("reader", "phoenix", map[int32]int64{0: 2})

	s := startScraper(t, k.testConfig())
	ctx := context.Background()
	md, err := s.scrape(ctx)
	require.NoError(t, err)
	require.Greater(t, pointsOf(md, "kafka.consumer_group.time_lag")[pointKey{"reader", "phoenix", 0}].doubleValue, 3600.0,
		"the old record at offset 2 is two hours old")
	require.NoError(t, s.sampler.Sample(ctx, true))

	deleteCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = k.admin.DeleteTopics(deleteCtx, "phoenix")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		resp, err := k.admin.CreateTopic(deleteCtx, 1, 1, nil, "phoenix")
		return err == nil && resp.Err == nil
	}, 20*time.Second, 100*time.Millisecond)
	k.client.PurgeTopicsFromClient("phoenix")
	fresh := time.Now().Add(-5 * time.Second)
	stamps = stamps[:0]
	for i := range 12 {
		stamps = append(stamps, fresh.Add(time.Duration(i)*100*time.Millisecond))
	}
	k.produce("phoenix", 0, stamps...) // end offset 12, past the old 10
	k.commit("reader", "phoenix", map[int32]int64{0: 2})

	require.NoError(t, s.sampler.Sample(ctx, true))
	var tl point
	require.Eventually(t, func() bool {
		md, err = s.scrape(ctx)
		var ok bool
		tl, ok = pointsOf(md, "kafka.consumer_group.time_lag")[pointKey{"reader", "phoenix", 0}]
		return err == nil && ok && pointsOf(md, "kafka.partition.current_offset")[pointKey{"", "phoenix", 0}].intValue == 12
	}, 20*time.Second, 200*time.Millisecond)
	truth := tl.timestamp.Sub(stamps[2]).Seconds()
	require.InDelta(t, truth, tl.doubleValue, 1.0, "time lag comes from the new topic's record at offset 2, not the old one's")
}

// Saved tables name the cluster they were sampled from. A receiver pointed
// at another cluster whose topics have the same names must not date that
// cluster's records with the first one's history.
func TestStateFromAnotherClusterIsNotRestored(t *testing.T) {
	storageID := component.MustNewID("file_storage")
	store := newMemoryStorage()
	host := hostWith{storageID: store}
	startWithStorage := func(k *testKafka, recordReads int) *timeLagScraper {
		cfg := k.testConfig()
		cfg.Storage = &storageID
		cfg.StorageInterval = time.Hour
		cfg.MaxRecordReadsPerScrape = recordReads
		s, err := newTimeLagScraper(cfg, receivertest.NewNopSettings(metadata.Type), nil)
		require.NoError(t, err)
		require.NoError(t, s.start(context.Background(), host))
		return s
	}
	ctx := context.Background()
	tp := kafka.TopicPartition{Topic: "orders", Partition: 0}
	produceN := func(k *testKafka, n int, at time.Time) {
		stamps := make([]time.Time, n)
		for i := range stamps {
			stamps[i] = at
		}
		k.produce("orders", 0, stamps...)
	}

	a := newTestKafka(t, 1, kfake.ClusterID("cluster-a"))
	a.createTopic("orders", 1)
	a.commit("reader", "orders", map[int32]int64{0: 0})
	first := startWithStorage(a, defaultRecordReads)
	_, err := first.scrape(ctx)
	require.NoError(t, err)
	produceN(a, 10, time.Now())
	require.NoError(t, first.sampler.Sample(ctx, true))
	produceN(a, 10, time.Now())
	require.NoError(t, first.sampler.Sample(ctx, true))
	require.Equal(t, int64(0), tableHeads(first)[tp].Offset)
	require.NoError(t, first.shutdown(ctx))
	require.NotEmpty(t, store.values[stateKey])

	b := newTestKafka(t, 1, kfake.ClusterID("cluster-b"))
	b.createTopic("orders", 1)
	produceN(b, 30, time.Now().Add(-time.Hour))
	b.commit("reader", "orders", map[int32]int64{0: 15}) // inside cluster-a's table
	second := startWithStorage(b, 0)
	defer func() { require.NoError(t, second.shutdown(ctx)) }()
	md, err := second.scrape(ctx)
	require.NoError(t, err)
	require.NotContains(t, pointsOf(md, "kafka.consumer_group.time_lag"), pointKey{"reader", "orders", 0},
		"cluster-b's record at offset 15 is an hour old; cluster-a's table knows nothing of it")
	require.Equal(t, int64(30), tableHeads(second)[tp].Offset, "the table starts from cluster-b's own read")
}
