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
)

// producedLog remembers when each produced record was stamped, by offset.
type producedLog struct {
	mu      sync.Mutex
	offsets []int64
	stamps  []time.Time
}

func (l *producedLog) add(offset int64, ts time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.offsets = append(l.offsets, offset)
	l.stamps = append(l.stamps, ts)
}

// firstAfter returns the offset of the first record stamped after t.
func (l *producedLog) firstAfter(t time.Time) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := sort.Search(len(l.stamps), func(i int) bool { return l.stamps[i].After(t) })
	if i == len(l.stamps) {
		return 0, false
	}
	return l.offsets[i], true
}

func (l *producedLog) stampOf(offset int64) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := sort.Search(len(l.offsets), func(i int) bool { return l.offsets[i] >= offset })
	if i == len(l.offsets) || l.offsets[i] != offset {
		return time.Time{}, false
	}
	return l.stamps[i], true
}

// TestTimeLagAccuracySteadyProduction is the acceptance check for the
// interpolation: steady production with ±50% jitter in the gap between
// records, a group held 10 s behind, sampling every 1 s and scraping every
// 2 s. The error is |reported time lag - truth|, where truth is the data
// point's time minus the timestamp of the record at the committed offset.
// Only accuracy is asserted, never speed.
func TestTimeLagAccuracySteadyProduction(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for about 55 s")
	}
	k := newTestKafka(t, 1)
	k.CreateTopic("steady", 1)
	var log producedLog

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	wg.Add(2)
	go func() { // producer: about 50 records/s, each gap 10-30 ms
		defer wg.Done()
		rng := rand.New(rand.NewPCG(1, 2))
		for ctx.Err() == nil {
			gap := time.Duration(float64(20*time.Millisecond) * (0.5 + rng.Float64()))
			select {
			case <-ctx.Done():
				return
			case <-time.After(gap):
			}
			ts := time.Now()
			offset := k.Produce("steady", 0, ts)
			log.add(offset, ts)
		}
	}()
	go func() { // consumer held 10 s behind
		defer wg.Done()
		for ctx.Err() == nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(250 * time.Millisecond):
			}
			if offset, ok := log.firstAfter(time.Now().Add(-10 * time.Second)); ok {
				k.Commit("held-back", "steady", map[int32]int64{0: offset})
			}
		}
	}()

	// Let the group fall 10 s behind before the receiver starts.
	time.Sleep(11 * time.Second)
	// Two receivers watch the same workload: the default one, and one that
	// may not read record timestamps, so that the interpolation table alone
	// is measured once it covers the 10 s of lag.
	cfg := k.testConfig()
	cfg.SamplingInterval = time.Second
	withRecords := startScraper(t, cfg)
	tableCfg := k.testConfig()
	tableCfg.SamplingInterval = time.Second
	tableCfg.MaxRecordReadsPerScrape = 0
	tableOnly := startScraper(t, tableCfg)

	key := pointKey{"held-back", "steady", 0}
	measure := func(name string, s *timeLagScraper, scrape int) (float64, bool) {
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		tl, ok := pointsOf(md, "kafka.consumer_group.time_lag")[key]
		if !ok {
			t.Logf("%s scrape %2d: no time lag yet (table points %d)", name, scrape, s.tables.Points())
			return 0, false
		}
		committed := pointsOf(md, "kafka.consumer_group.offset")[key].intValue
		stamp, ok := log.stampOf(committed)
		require.True(t, ok)
		truth := tl.timestamp.Sub(stamp).Seconds()
		e := math.Abs(tl.doubleValue - truth)
		t.Logf("%s scrape %2d: time lag %.3f s, truth %.3f s, error %.3f s, table points %d",
			name, scrape, tl.doubleValue, truth, e, s.tables.Points())
		return e, true
	}
	var recordErrs, tableErrs []float64
	for scrape := range 20 {
		e, ok := measure("default   ", withRecords, scrape)
		require.True(t, ok, "the default receiver has a time lag from the first scrape")
		if scrape >= 3 {
			recordErrs = append(recordErrs, e)
		}
		e, ok = measure("table-only", tableOnly, scrape)
		// 10 s of lag at 2 s per scrape: the table covers it from the 6th scrape.
		require.True(t, ok || scrape < 6, "table-only receiver has a time lag from scrape 6 on")
		if ok {
			tableErrs = append(tableErrs, e)
		}
		time.Sleep(2 * time.Second)
	}
	for _, m := range []struct {
		name string
		errs []float64
	}{{"default", recordErrs}, {"table-only", tableErrs}} {
		sort.Float64s(m.errs)
		p95 := m.errs[int(math.Ceil(0.95*float64(len(m.errs))))-1]
		t.Logf("%s: time lag error over %d scrapes: p50 %.3f s, p95 %.3f s, max %.3f s",
			m.name, len(m.errs), m.errs[len(m.errs)/2], p95, m.errs[len(m.errs)-1])
		require.LessOrEqual(t, p95, 1.5, m.name)
		// Not worse than the straight line was (p50 0.011 s default, 0.012 s
		// table only, at 750720b): the bracket placement must not cost steady
		// partitions what it gains sparse ones.
		require.LessOrEqual(t, m.errs[len(m.errs)/2], 0.05, "%s: median error", m.name)
	}
}
