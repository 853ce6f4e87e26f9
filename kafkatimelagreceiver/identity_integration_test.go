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
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/statestore"
)

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
		k.Produce("orders", 0, stamps...)
	}

	a := newTestKafka(t, 1, kfake.ClusterID("cluster-a"))
	a.CreateTopic("orders", 1)
	a.Commit("reader", "orders", map[int32]int64{0: 0})
	first := startWithStorage(a, defaultRecordReads)
	_, err := first.scrape(ctx)
	require.NoError(t, err)
	produceN(a, 10, time.Now())
	require.NoError(t, first.sampler.Sample(ctx, true))
	produceN(a, 10, time.Now())
	require.NoError(t, first.sampler.Sample(ctx, true))
	require.Equal(t, int64(0), tableHeads(first)[tp].Offset)
	require.NoError(t, first.shutdown(ctx))
	require.NotEmpty(t, store.values[statestore.TablesKey])

	b := newTestKafka(t, 1, kfake.ClusterID("cluster-b"))
	b.CreateTopic("orders", 1)
	produceN(b, 30, time.Now().Add(-time.Hour))
	b.Commit("reader", "orders", map[int32]int64{0: 15}) // inside cluster-a's table
	second := startWithStorage(b, 0)
	defer func() { require.NoError(t, second.shutdown(ctx)) }()
	md, err := second.scrape(ctx)
	require.NoError(t, err)
	require.NotContains(t, pointsOf(md, "kafka.consumer_group.time_lag"), pointKey{"reader", "orders", 0},
		"cluster-b's record at offset 15 is an hour old; cluster-a's table knows nothing of it")
	require.Equal(t, int64(30), tableHeads(second)[tp].Offset, "the table starts from cluster-b's own read")
}
