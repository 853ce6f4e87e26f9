//go:build !unit

package kafkatimelagreceiver

import (
	"context"
	"math"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/statestore"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/statestore/memorystorage"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kafkacount"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"
)

// ackLog remembers when each record of one partition was acknowledged, in
// offset order: by then it had been appended.
type ackLog struct {
	mu     sync.Mutex
	acked  []time.Time
	offset []int64
}

func (l *ackLog) add(offset int64, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.offset = append(l.offset, offset)
	l.acked = append(l.acked, at)
}

// end is the end offset as of the last acknowledgement.
func (l *ackLog) end() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.offset) == 0 {
		return 0
	}
	return l.offset[len(l.offset)-1] + 1
}

// appendedIn counts the records acknowledged in (from, to].
func (l *ackLog) appendedIn(from, to time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := sort.Search(len(l.acked), func(i int) bool { return l.acked[i].After(from) })
	last := sort.Search(len(l.acked), func(i int) bool { return l.acked[i].After(to) })
	return last - first
}

// rateConsumers are the groups of TestProgressAgainstKnownRates, each
// committing where its rate has taken it since start. Commits are
// serialised and computed at the instant they are sent, so that what the
// receiver reads is always on a group's line, however the goroutines are
// scheduled.
type rateConsumers struct {
	k          *testKafka
	start      time.Time
	logs       []*ackLog
	backlog    int64
	rates      map[string]float64 // records/s per partition
	stallAfter time.Duration

	mu         sync.Mutex
	lastCommit map[string]time.Time
	drained    time.Time // when "draining" first reached the end offsets
}

func (c *rateConsumers) commit() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	elapsed := now.Sub(c.start)
	for group, rate := range c.rates {
		if group == "stalled" && elapsed > c.stallAfter {
			continue
		}
		offsets, caughtUp := map[int32]int64{}, true
		for p, log := range c.logs {
			end := log.end()
			target := end // "stalled" keeps up until it stalls
			switch group {
			case "draining":
				target = int64(rate * elapsed.Seconds())
			case "behind":
				target = c.backlog + int64(rate*elapsed.Seconds())
			}
			offsets[int32(p)] = min(target, end)
			caughtUp = caughtUp && offsets[int32(p)] == end
		}
		c.k.Commit(group, "steady", offsets)
		c.lastCommit[group] = time.Now()
		if group == "draining" && caughtUp && c.drained.IsZero() {
			c.drained = time.Now()
		}
	}
}

func (c *rateConsumers) drainedAt() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.drained
}

func (c *rateConsumers) lastCommitOf(group string) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastCommit[group]
}

// TestProgressAgainstKnownRates is the acceptance check of the rate metrics
// against kfake, with a 5 s rate window so that a window passes quickly. A
// producer writes steadily to the two partitions of "steady" and four
// groups commit at known rates: "draining" starts 3,000 records behind on
// each partition and consumes 250/s against 100/s produced; "behind"
// consumes 50/s; "stalled" keeps up for 2 s, then stops committing;
// "idle" is caught up on a topic nobody writes to. The truth of production
// is what was acknowledged when, of consumption the rates the groups
// commit at, of the drain time when "draining" reached the end offsets, of
// the stuck time its last commit: a slow machine moves truth and
// measurement together, and only accuracy is asserted, never speed.
func TestProgressAgainstKnownRates(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for about 25 s")
	}
	const (
		partitions   = 2
		produceRate  = 100.0 // per partition
		drainRate    = 250.0
		behindRate   = 50.0
		backlog      = 3000 // per partition, for "draining"
		window       = 5 * time.Second
		scrapeEvery  = time.Second
		stallAfter   = 2 * time.Second
		commitEvery  = 50 * time.Millisecond
		produceEvery = 20 * time.Millisecond
	)
	k := newTestKafka(t, 1)
	k.CreateTopic("steady", partitions)
	k.CreateTopic("quiet", 1)
	logs := [partitions]*ackLog{{}, {}}
	produce := func(ctx context.Context, perPartition int) {
		var records []*kgo.Record
		for p := range int32(partitions) {
			for range perPartition {
				records = append(records, &kgo.Record{Topic: "steady", Partition: p, Value: []byte("x")})
			}
		}
		results := k.Client.ProduceSync(ctx, records...)
		if ctx.Err() != nil {
			return
		}
		require.NoError(t, results.FirstErr())
		acked := time.Now()
		for _, r := range results {
			logs[r.Record.Partition].add(r.Record.Offset, acked)
		}
	}
	produce(context.Background(), backlog)
	k.Produce("quiet", 0, make([]time.Time, 10)...)
	k.Commit("idle", "quiet", map[int32]int64{0: 10})

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	start := time.Now()
	wg.Add(1)
	go func() { // the producer, paced by the clock
		defer wg.Done()
		tick := time.NewTicker(produceEvery)
		defer tick.Stop()
		budget := 0.0
		last := start
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				budget += produceRate * now.Sub(last).Seconds()
				last = now
				if n := int(budget); n > 0 {
					budget -= float64(n)
					produce(ctx, n)
				}
			}
		}
	}()

	consumers := &rateConsumers{
		k: k, start: start, logs: logs[:], backlog: backlog, stallAfter: stallAfter,
		rates:      map[string]float64{"draining": drainRate, "behind": behindRate, "stalled": 0},
		lastCommit: map[string]time.Time{},
	}
	wg.Add(1)
	go func() { // between scrapes, the consumers commit as consumers do
		defer wg.Done()
		tick := time.NewTicker(commitEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				consumers.commit()
			}
		}
	}()

	cfg := k.testConfig()
	cfg.CollectionInterval = scrapeEvery
	cfg.SamplingInterval = 100 * time.Millisecond
	cfg.RateWindow = window
	cfg.Metrics.KafkaTopicProduceRate.Enabled = true
	cfg.Metrics.KafkaConsumerGroupPartitionTimeToDrain.Enabled = true
	s := startScraper(t, cfg)

	type drainEstimate struct {
		at       time.Time
		estimate float64
	}
	var drains []drainEstimate
	var produceErrs, consumeErrs []float64
	var lastScrape time.Time
	var longestGap time.Duration // between two scrapes: a collection interval, as the machine ran it
	for scrape := 0; scrape < 24; scrape++ {
		time.Sleep(scrapeEvery)
		// The consumers commit right before the scrape too, so that each
		// scrape reads where their rates have taken them by now, not where
		// a commit delayed by a busy machine left them.
		consumers.commit()
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		partitionRates := pointsOf(md, "kafka.partition.produce_rate")
		consume := pointsOf(md, "kafka.consumer_group.consume_rate")
		trend := pointsOf(md, "kafka.consumer_group.lag_trend")
		drain := pointsOf(md, "kafka.consumer_group.time_to_drain")
		partitionDrain := pointsOf(md, "kafka.consumer_group.partition_time_to_drain")
		stuck := pointsOf(md, "kafka.consumer_group.stuck_time")
		topicRate := pointsOf(md, "kafka.topic.produce_rate")
		key := func(group, topic string) pointKey { return pointKey{group, topic, -1} }
		now := partitionRates[pointKey{"", "steady", 0}].timestamp
		warm := now.Sub(start) > window+scrapeEvery
		if !lastScrape.IsZero() {
			longestGap = max(longestGap, now.Sub(lastScrape))
		}
		lastScrape = now
		drainedAt := consumers.drainedAt()

		// Production: per partition, against what was acknowledged in
		// the window; the topic's is their sum.
		var sum float64
		for p := range int64(partitions) {
			rate, ok := partitionRates[pointKey{"", "steady", p}]
			require.True(t, ok || !warm, "scrape %d: steady/%d has a production rate", scrape, p)
			sum += rate.doubleValue
			if warm {
				truth := float64(logs[p].appendedIn(now.Add(-window), now)) / window.Seconds()
				produceErrs = append(produceErrs, math.Abs(rate.doubleValue-truth)/truth)
				t.Logf("scrape %2d: steady/%d produce rate %.1f/s, truth %.1f/s", scrape, p, rate.doubleValue, truth)
			}
		}
		if warm {
			require.InDelta(t, sum, topicRate[pointKey{"", "steady", -1}].doubleValue, 1e-6)
			require.Zero(t, partitionRates[pointKey{"", "quiet", 0}].doubleValue, "nothing written to quiet")
		}

		// Consumption, against the rate each group consumes at: while the
		// whole window is before "draining" caught up, for it.
		for _, group := range []string{"draining", "behind"} {
			got, ok := consume[key(group, "steady")]
			if !warm {
				continue
			}
			require.True(t, ok, "scrape %d: %s has a consumption rate", scrape, group)
			truth := partitions * consumers.rates[group]
			t.Logf("scrape %2d: %-8s consume rate %.1f/s, truth %.1f/s, trend %+.1f/s", scrape, group, got.doubleValue, truth, trend[key(group, "steady")].doubleValue)
			if group == "behind" || drainedAt.IsZero() {
				consumeErrs = append(consumeErrs, math.Abs(got.doubleValue-truth)/truth)
			}
		}

		if d, ok := drain[key("draining", "steady")]; ok && warm && drainedAt.IsZero() {
			drains = append(drains, drainEstimate{at: now, estimate: d.doubleValue})
			_, perPartition := partitionDrain[pointKey{"draining", "steady", 0}]
			require.True(t, perPartition, "scrape %d: draining has a drain time per partition", scrape)
		}

		// Falling behind: never a drain time, a positive trend.
		_, hasDrain := drain[key("behind", "steady")]
		require.False(t, hasDrain, "scrape %d: behind is not catching up", scrape)
		for p := range int64(partitions) {
			_, hasDrain = partitionDrain[pointKey{"behind", "steady", p}]
			require.False(t, hasDrain, "scrape %d: behind/%d is not catching up", scrape, p)
		}
		if warm {
			require.Greater(t, trend[key("behind", "steady")].doubleValue, 0.0, "scrape %d", scrape)
		}

		// Stalled: stuck since its last commit, at scrape resolution.
		if now.Sub(start) > stallAfter+2*scrapeEvery {
			truth := now.Sub(consumers.lastCommitOf("stalled")).Seconds()
			got := stuck[key("stalled", "steady")].doubleValue
			t.Logf("scrape %2d: stalled stuck %.2f s, truth %.2f s", scrape, got, truth)
			require.InDelta(t, truth, got, longestGap.Seconds(), "scrape %d: within one collection interval", scrape)
			require.LessOrEqual(t, got, truth, "scrape %d: never more than the truth", scrape)
		}

		// Caught up on an idle topic: not stuck, nothing to drain, no trend.
		require.Zero(t, stuck[key("idle", "quiet")].doubleValue)
		idleDrain, ok := drain[key("idle", "quiet")]
		require.True(t, ok, "scrape %d: a caught-up group drains in 0 s", scrape)
		require.Zero(t, idleDrain.doubleValue)
		if warm {
			require.Zero(t, consume[key("idle", "quiet")].doubleValue)
			require.Zero(t, trend[key("idle", "quiet")].doubleValue)
		}
	}

	require.NotEmpty(t, produceErrs)
	require.NotEmpty(t, consumeErrs)
	sort.Float64s(produceErrs)
	sort.Float64s(consumeErrs)
	t.Logf("production rate: %d estimates, relative error median %.2f%%, max %.2f%%", len(produceErrs), 100*produceErrs[len(produceErrs)/2], 100*produceErrs[len(produceErrs)-1])
	t.Logf("consumption rate: %d estimates, relative error median %.2f%%, max %.2f%%", len(consumeErrs), 100*consumeErrs[len(consumeErrs)/2], 100*consumeErrs[len(consumeErrs)-1])
	require.LessOrEqual(t, produceErrs[len(produceErrs)-1], 0.05)
	require.LessOrEqual(t, consumeErrs[len(consumeErrs)-1], 0.05)

	drainedAt := consumers.drainedAt()
	require.False(t, drainedAt.IsZero(), "draining caught up during the test")
	asserted := 0
	for _, d := range drains {
		truth := drainedAt.Sub(d.at).Seconds()
		t.Logf("time to drain at %.1f s: estimate %.2f s, truth %.2f s", d.at.Sub(start).Seconds(), d.estimate, truth)
		// Near the end a scrape's instant against a commit every 50 ms
		// is a large part of the truth: judge estimates of 3 s and more.
		if truth >= 3 {
			require.InEpsilon(t, truth, d.estimate, 0.10)
			asserted++
		}
	}
	require.GreaterOrEqual(t, asserted, 3, "enough drain estimates were judged")
}

// TestStuckTimeSurvivesRestart: a receiver with storage sees a group stuck,
// shuts down (saving its stuck clocks under their own key, beside the
// tables), and a new receiver on the same storage reports the stuck time
// counted from the first receiver's first sight at its first scrape. A
// group whose offset moved while the collector was down starts from 0, and
// so does everything without storage.
func TestStuckTimeSurvivesRestart(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("t", 1)
	k.Produce("t", 0, make([]time.Time, 5)...)
	k.Commit("stuck", "t", map[int32]int64{0: 2})
	k.Commit("moves", "t", map[int32]int64{0: 2})

	store := memorystorage.New()
	storageID := component.MustNewID("file_storage")
	newScraper := func(withStorage bool) *timeLagScraper {
		cfg := k.testConfig()
		if withStorage {
			cfg.Storage = &storageID
			cfg.StorageInterval = time.Hour // only the shutdown save matters here
		}
		s, err := newTimeLagScraper(cfg, receivertest.NewNopSettings(metadata.Type), nil)
		require.NoError(t, err)
		require.NoError(t, s.start(context.Background(), memorystorage.Host{storageID: store}))
		return s
	}
	stuckOf := func(s *timeLagScraper, group string) point {
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		p, ok := pointsOf(md, "kafka.consumer_group.stuck_time")[pointKey{group, "t", -1}]
		require.True(t, ok, "%s has a stuck time", group)
		return p
	}

	first := newScraper(true)
	firstSight := stuckOf(first, "stuck")
	require.Zero(t, firstSight.doubleValue)
	require.Eventually(t, func() bool { return stuckOf(first, "stuck").doubleValue > 0 }, time.Minute, 50*time.Millisecond,
		"the stuck time grows with the clock")
	require.NoError(t, first.shutdown(context.Background()))
	require.NotEmpty(t, store.Value(statestore.TablesKey), "tables saved")
	require.NotEmpty(t, store.Value(statestore.ProgressKey), "stuck clocks saved")

	k.Commit("moves", "t", map[int32]int64{0: 3}) // while the collector is down
	second := newScraper(true)
	defer func() { require.NoError(t, second.shutdown(context.Background())) }()
	md, err := second.scrape(context.Background())
	require.NoError(t, err)
	stuck := pointsOf(md, "kafka.consumer_group.stuck_time")
	resumed := stuck[pointKey{"stuck", "t", -1}]
	require.InDelta(t, resumed.timestamp.Sub(firstSight.timestamp).Seconds(), resumed.doubleValue, 1e-6,
		"counted from the first receiver's first sight")
	require.Zero(t, stuck[pointKey{"moves", "t", -1}].doubleValue, "its offset moved while the collector was down")

	fresh := newScraper(false)
	defer func() { require.NoError(t, fresh.shutdown(context.Background())) }()
	require.Zero(t, stuckOf(fresh, "stuck").doubleValue, "without storage the clock starts at the first scrape")
}

// TestRateMetricsAddNoRequests: the rates, stuck times and drain times come
// from what a scrape reads anyway (committed offsets, end offsets, the
// tables): a steady scrape with every one of them on sends exactly the
// requests of a scrape with all of them off.
func TestRateMetricsAddNoRequests(t *testing.T) {
	k := newTestKafka(t, 3)
	k.CreateTopic("wide", 30)
	now := time.Now()
	for p := range int32(30) {
		k.Produce("wide", p, now, now)
	}
	for _, g := range []string{"g-0", "g-1", "g-2", "g-3"} {
		offsets := map[int32]int64{}
		for p := range int32(30) {
			offsets[p] = 1
		}
		k.Commit(g, "wide", offsets)
	}
	configure := func(on bool) *Config {
		cfg := k.testConfig()
		m := &cfg.Metrics
		m.KafkaPartitionProduceRate.Enabled = on
		m.KafkaTopicProduceRate.Enabled = on
		m.KafkaConsumerGroupConsumeRate.Enabled = on
		m.KafkaConsumerGroupLagTrend.Enabled = on
		m.KafkaConsumerGroupTimeToDrain.Enabled = on
		m.KafkaConsumerGroupPartitionTimeToDrain.Enabled = on
		m.KafkaConsumerGroupStuckTime.Enabled = on
		return cfg
	}
	steadyRequests := func(s *timeLagScraper) (kafkacount.Counts, pmetric.Metrics) {
		for range 2 { // connections, metadata and record reads
			_, err := s.scrape(context.Background())
			require.NoError(t, err)
		}
		before := k.Counts.Snapshot()
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		return k.Counts.Snapshot().Since(before), md
	}
	off, _ := steadyRequests(startScraper(t, configure(false)))
	on, md := steadyRequests(startScraper(t, configure(true)))
	t.Logf("steady scrape, rate metrics off: %s; on: %s", off, on)
	require.Equal(t, off, on)
	require.Len(t, pointsOf(md, "kafka.consumer_group.stuck_time"), 4, "the metrics were there to be paid for")
	require.Len(t, pointsOf(md, "kafka.consumer_group.time_to_drain"), 0, "no rates yet, and every group has lag")
}
