//go:build !unit

package kafkatimelagreceiver

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/statestore"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/statestore/memorystorage"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/collector/scraper/scrapererror"
)

// TestRestartKeepsHistory: a receiver with storage samples a steady workload,
// shuts down (saving its tables), and a new receiver on the same storage
// reports time lag for every lagging partition at its first scrape, from the
// restored tables alone (record reads are off for the second receiver so that
// nothing else can answer), with p95 error <= 1.5 s.
func TestRestartKeepsHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for about 25 s")
	}
	const partitions = 3
	k := newTestKafka(t, 1)
	k.CreateTopic("steady", partitions)
	logs := make([]*producedLog, partitions)
	for p := range logs {
		logs[p] = &producedLog{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	for p := range int32(partitions) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(p), 7))
			for ctx.Err() == nil {
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Duration(float64(30*time.Millisecond) * (0.5 + rng.Float64()))):
				}
				ts := time.Now()
				logs[p].add(k.Produce("steady", p, ts), ts)
			}
		}()
	}
	var behind atomic.Bool // the group has committed 6 s behind
	wg.Add(1)
	go func() { // the group stays 6 s behind on every partition
		defer wg.Done()
		for ctx.Err() == nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(250 * time.Millisecond):
			}
			offsets := map[int32]int64{}
			for p := range int32(partitions) {
				if o, ok := logs[p].firstAfter(time.Now().Add(-6 * time.Second)); ok {
					offsets[p] = o
				}
			}
			if len(offsets) == partitions {
				k.Commit("patient", "steady", offsets)
				behind.Store(true)
			}
		}
	}()

	store := memorystorage.New()
	storageID := component.MustNewID("file_storage")
	host := memorystorage.Host{storageID: store}
	newScraper := func(recordReads int) *timeLagScraper {
		cfg := k.testConfig()
		cfg.SamplingInterval = 500 * time.Millisecond
		cfg.Storage = &storageID
		cfg.StorageInterval = time.Hour // only the shutdown save matters here
		cfg.MaxRecordReadsPerScrape = recordReads
		s, err := newTimeLagScraper(cfg, receivertest.NewNopSettings(metadata.Type), nil)
		require.NoError(t, err)
		require.NoError(t, s.start(context.Background(), host))
		return s
	}

	// The group falls behind: after 6 s of production, its first commit.
	require.Eventually(t, behind.Load, time.Minute, 50*time.Millisecond, "the group committed 6 s behind")
	first := newScraper(defaultRecordReads)
	for range 5 {
		_, err := first.scrape(context.Background())
		require.NoError(t, err)
		time.Sleep(2 * time.Second)
	}
	require.NoError(t, first.shutdown(context.Background()))
	require.NotEmpty(t, store.Value(statestore.TablesKey), "tables saved at shutdown")
	time.Sleep(2 * time.Second) // the collector is down; production goes on

	second := newScraper(0)
	defer func() { require.NoError(t, second.shutdown(context.Background())) }()
	md, err := second.scrape(context.Background())
	require.NoError(t, err)
	timeLags := pointsOf(md, "kafka.consumer_group.time_lag")
	offsets := pointsOf(md, "kafka.consumer_group.offset")
	var errs []float64
	for p := range int64(partitions) {
		key := pointKey{"patient", "steady", p}
		tl, ok := timeLags[key]
		require.True(t, ok, "partition %d has a time lag at the first scrape after restart", p)
		stamp, ok := logs[p].stampOf(offsets[key].intValue)
		require.True(t, ok)
		truth := tl.timestamp.Sub(stamp).Seconds()
		errs = append(errs, math.Abs(tl.doubleValue-truth))
		t.Logf("partition %d: time lag %.3f s, truth %.3f s", p, tl.doubleValue, truth)
	}
	sort.Float64s(errs)
	p95 := errs[int(math.Ceil(0.95*float64(len(errs))))-1]
	t.Logf("first scrape after restart: p95 error %.3f s over %d partitions", p95, len(errs))
	require.LessOrEqual(t, p95, 1.5)
	require.Equal(t, 2, store.Opened())

	// Control: the same first scrape without the saved history has nothing
	// to estimate from.
	cfg := k.testConfig()
	cfg.MaxRecordReadsPerScrape = 0
	fresh := startScraper(t, cfg)
	md, err = fresh.scrape(context.Background())
	require.NoError(t, err)
	require.Empty(t, pointsOf(md, "kafka.consumer_group.time_lag"), "without storage and record reads there is no estimate yet")
}

// Saved tables name the cluster they were sampled from. A receiver pointed
// at another cluster whose topics have the same names must not date that
// cluster's records with the first one's history.
func TestStateFromAnotherClusterIsNotRestored(t *testing.T) {
	storageID := component.MustNewID("file_storage")
	store := memorystorage.New()
	host := memorystorage.Host{storageID: store}
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
	// A table keeps a millisecond's reads as one point, the newest: each
	// read below lands in a millisecond of its own, so that the table
	// starts at offset 0.
	nextMillisecond()
	produceN(a, 10, time.Now())
	require.NoError(t, first.sampler.Sample(ctx, true))
	nextMillisecond()
	produceN(a, 10, time.Now())
	require.NoError(t, first.sampler.Sample(ctx, true))
	require.Equal(t, int64(0), tableHeads(first)[tp].Offset)
	require.NoError(t, first.shutdown(ctx))
	require.NotEmpty(t, store.Value(statestore.TablesKey))

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

// While one group's coordinator fails every read, every scrape is partial,
// and a partial scrape cannot tell a partition no group commits on any more
// from one only that group commits on. Kept until a complete scrape, which
// never comes, the tables, the saved state and the sampler's work would
// grow without bound while groups and topics churn. A table is kept for
// unwantedTableLifetime after the last scrape that wanted it, however
// partial the scrapes.
func TestTablesOfChurnedGroupsDroppedWhileCoordinatorDown(t *testing.T) {
	requireNoLeakedGoroutines(t)
	const rounds = 6
	k := newTestKafka(t, 1)
	stuck := kafka.TopicPartition{Topic: "stuck", Partition: 0}
	k.CreateTopic(stuck.Topic, 1)
	for i := range rounds {
		k.CreateTopic(fmt.Sprintf("churn-%d", i), 1)
	}
	k.Produce(stuck.Topic, 0, time.Now())
	k.Commit("stuck-group", stuck.Topic, map[int32]int64{0: 0})

	s := startScraper(t, faultConfig(k))
	clock := time.Unix(1_700_000_000, 0)
	s.reader.Now = func() time.Time { return clock }
	ctx := context.Background()
	_, err := s.scrape(ctx)
	require.NoError(t, err)
	require.Equal(t, []kafka.TopicPartition{stuck}, s.reader.Tables.Partitions())

	// From now on the stuck group's coordinator fails every read of it.
	k.Cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetFetch}, Group: "stuck-group", Err: kerr.CoordinatorNotAvailable, Count: -1})
	churn := func(i int) kafka.TopicPartition {
		return kafka.TopicPartition{Topic: fmt.Sprintf("churn-%d", i), Partition: 0}
	}
	for i := range rounds {
		// Every half hour a group commits on a topic of its own, is
		// scraped once, and is deleted.
		clock = clock.Add(30 * time.Minute)
		group := fmt.Sprintf("churn-group-%d", i)
		k.Commit(group, churn(i).Topic, map[int32]int64{0: 0})
		_, err := s.scrape(ctx)
		require.Error(t, err, "round %d", i)
		require.True(t, scrapererror.IsPartialScrapeError(err), "round %d: %v", i, err)

		want := []kafka.TopicPartition{churn(i)}
		if i > 0 {
			want = append([]kafka.TopicPartition{churn(i - 1)}, want...)
		} else {
			want = append(want, stuck) // half an hour of outage: its history is kept
		}
		require.Equal(t, want, s.reader.Tables.Partitions(), "round %d: only tables wanted within the last hour", i)

		resp, err := k.Admin.DeleteGroup(ctx, group)
		require.NoError(t, err)
		require.NoError(t, resp.Err)
	}
}

// nextMillisecond returns once the wall clock is in a millisecond after the
// one it was in when called.
func nextMillisecond() {
	for start := time.Now().Truncate(time.Millisecond); !time.Now().Truncate(time.Millisecond).After(start); {
		runtime.Gosched()
	}
}
