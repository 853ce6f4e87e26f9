package kafkatimelagreceiver

import (
	"context"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/statestore"
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
			}
		}
	}()

	store := newMemoryStorage()
	storageID := component.MustNewID("file_storage")
	host := hostWith{storageID: store}
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

	time.Sleep(7 * time.Second) // the group falls behind
	first := newScraper(defaultRecordReads)
	for range 5 {
		_, err := first.scrape(context.Background())
		require.NoError(t, err)
		time.Sleep(2 * time.Second)
	}
	require.NoError(t, first.shutdown(context.Background()))
	require.NotEmpty(t, store.values[statestore.TablesKey], "tables saved at shutdown")
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
	require.Equal(t, 2, store.opened)

	// Control: the same first scrape without the saved history has nothing
	// to estimate from.
	cfg := k.testConfig()
	cfg.MaxRecordReadsPerScrape = 0
	fresh := startScraper(t, cfg)
	md, err = fresh.scrape(context.Background())
	require.NoError(t, err)
	require.Empty(t, pointsOf(md, "kafka.consumer_group.time_lag"), "without storage and record reads there is no estimate yet")
}
