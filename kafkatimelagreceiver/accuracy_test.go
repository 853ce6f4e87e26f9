//go:build !unit

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

// accuracySample is one time lag point against the truth: the point's time
// minus the producer's stamp of the record at the committed offset.
type accuracySample struct {
	reported, truth float64 // seconds
}

func (s accuracySample) err() float64 { return s.reported - s.truth }

type accuracyErrors []accuracySample

func (a accuracyErrors) mean() float64 {
	var sum float64
	for _, s := range a {
		sum += s.err()
	}
	return sum / float64(len(a))
}

// absQuantile is the q-quantile of the absolute errors.
func (a accuracyErrors) absQuantile(q float64) float64 {
	abs := make([]float64, len(a))
	for i, s := range a {
		abs[i] = math.Abs(s.err())
	}
	sort.Float64s(abs)
	return abs[max(0, int(math.Ceil(q*float64(len(abs))))-1)]
}

// TestTimeLagAccuracyWorkloads measures the time lag against record
// timestamps on three workloads at 1 s sampling, scraped every second:
//
//   - sparse: on 32 partitions, one record every 1 to 3 s (at random, so
//     that appends fall anywhere between two samples), the group committed
//     right behind the newest record;
//   - bursty: on 2 partitions, 200 records appended at once every 6 to 8 s,
//     the group committed at the newest burst's first record or part way
//     through it;
//   - idle: one partition that saw 5 s of production and then nothing, the
//     group committed in the middle of it.
//
// Two receivers watch the same cluster: the default one, and one that may
// not read records (max_record_reads_per_scrape 0), which measures the
// interpolation table alone. The targets are relative to the sampling
// interval: the mean error on sparse partitions within ±0.1 of it (both
// receivers: the placement inside a bracket is unbiased), the p95 error on
// bursty ones at most 0.5 of it (the default receiver: no table can tell
// where inside a bracket a burst landed, so a bracket coarse against the
// time lag it yields is resolved by the record's timestamp). No time lag is
// ever negative. Only accuracy is asserted, never speed: every figure is an
// error against record timestamps, whatever the scrapes' timing.
func TestTimeLagAccuracyWorkloads(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for about 50 s")
	}
	const sampling = time.Second
	// Enough records that the mean error of the table-only receiver, whose
	// every error is anywhere within half a bracket, is known to about
	// ±0.015 s (one standard error).
	const sparsePartitions = 32
	k := newTestKafka(t, 1)
	k.CreateTopic("sparse", sparsePartitions)
	k.CreateTopic("bursty", 2)
	k.CreateTopic("idle", 1)
	// Committed before the receivers' first scrape, so that they track the
	// partition while it still sees production.
	k.Commit("idle-reader", "idle", map[int32]int64{0: 0})

	var mu sync.Mutex
	logs := map[pointKey]*producedLog{}
	logOf := func(key pointKey) *producedLog {
		mu.Lock()
		defer mu.Unlock()
		if logs[key] == nil {
			logs[key] = &producedLog{}
		}
		return logs[key]
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	sleep := func(d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	for p := range int32(sparsePartitions) {
		wg.Add(1)
		go func() { // sparse: one record every 1-3 s, committed right behind it
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(p), uint64(time.Now().UnixNano())))
			log := logOf(pointKey{"sparse-reader", "sparse", int64(p)})
			for sleep(time.Second + time.Duration(rng.Int64N(int64(2*time.Second)))) {
				ts := time.Now()
				offset := k.Produce("sparse", p, ts)
				log.add(offset, ts)
				k.Commit("sparse-reader", "sparse", map[int32]int64{p: offset})
			}
		}()
	}
	for p := range int32(2) {
		wg.Add(1)
		go func() { // bursty: 200 records at once every 6-8 s, read part way
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(p), uint64(time.Now().UnixNano())))
			log := logOf(pointKey{"bursty-reader", "bursty", int64(p)})
			stamps := make([]time.Time, 200)
			for next := time.Now(); ; {
				ts := time.Now()
				for i := range stamps {
					stamps[i] = ts
				}
				first := k.Produce("bursty", p, stamps...)
				for i := range stamps {
					log.add(first+int64(i), ts)
				}
				next = next.Add(6*time.Second + time.Duration(rng.Int64N(int64(2*time.Second))))
				for time.Now().Before(next) {
					// Half the time still at the burst's first record (not
					// started on it yet), half part way through.
					at := first
					if rng.IntN(2) == 1 {
						at += rng.Int64N(int64(len(stamps)))
					}
					k.Commit("bursty-reader", "bursty", map[int32]int64{p: at})
					if !sleep(200 * time.Millisecond) {
						return
					}
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // idle: 5 s of production, then none
		defer wg.Done()
		log := logOf(pointKey{"idle-reader", "idle", 0})
		for i := 0; i < 100 && sleep(50*time.Millisecond); i++ {
			ts := time.Now()
			offset := k.Produce("idle", 0, ts)
			log.add(offset, ts)
			if i == 50 {
				k.Commit("idle-reader", "idle", map[int32]int64{0: offset})
			}
		}
	}()

	newReceiver := func(recordReads int) *timeLagScraper {
		cfg := k.testConfig()
		cfg.SamplingInterval = sampling
		cfg.MaxRecordReadsPerScrape = recordReads
		return startScraper(t, cfg)
	}
	receivers := []struct {
		name string
		s    *timeLagScraper
		errs map[string]accuracyErrors // by workload (topic)
	}{
		{name: "default", s: newReceiver(defaultRecordReads), errs: map[string]accuracyErrors{}},
		{name: "table-only", s: newReceiver(0), errs: map[string]accuracyErrors{}},
	}
	// A first scrape tracks the partitions; tables then need a few samples
	// before they bracket anything.
	for _, r := range receivers {
		_, err := r.s.scrape(context.Background())
		require.NoError(t, err)
	}
	time.Sleep(8 * time.Second)
	for range 40 {
		for _, r := range receivers {
			md, err := r.s.scrape(context.Background())
			require.NoError(t, err)
			offsets := pointsOf(md, "kafka.consumer_group.offset")
			for key, tl := range pointsOf(md, "kafka.consumer_group.time_lag") {
				require.GreaterOrEqual(t, tl.doubleValue, 0.0, "%s %v", r.name, key)
				stamp, ok := logOf(key).stampOf(offsets[key].intValue)
				if !ok {
					continue // caught up: nothing unconsumed to date
				}
				truth := tl.timestamp.Sub(stamp).Seconds()
				r.errs[key.topic] = append(r.errs[key.topic], accuracySample{tl.doubleValue, truth})
			}
		}
		time.Sleep(time.Second)
	}

	s := sampling.Seconds()
	for _, r := range receivers {
		for _, topic := range []string{"sparse", "bursty", "idle"} {
			errs := r.errs[topic]
			require.NotEmpty(t, errs, "%s %s", r.name, topic)
			t.Logf("%-10s %-6s %3d points: mean error %+.3f s, |error| p50 %.3f s, p95 %.3f s, max %.3f s",
				r.name, topic, len(errs), errs.mean(), errs.absQuantile(0.5), errs.absQuantile(0.95), errs.absQuantile(1))
		}
	}
	for _, r := range receivers {
		require.InDelta(t, 0, r.errs["sparse"].mean(), 0.1*s, "%s: mean error on sparse partitions", r.name)
	}
	def := receivers[0].errs
	require.LessOrEqual(t, def["bursty"].absQuantile(0.95), 0.5*s, "default: p95 error on bursty partitions")
	require.LessOrEqual(t, def["idle"].absQuantile(0.95), 0.5*s, "default: p95 error on an idle partition")
}
