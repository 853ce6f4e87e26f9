//go:build !unit

package kafkatimelagreceiver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadatatest"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// maintenanceLoad is steady production on every partition of a topic and
// groups held a few seconds behind, with a log of every record's timestamp.
type maintenanceLoad struct {
	k          *testKafka
	topic      string
	partitions int32
	groups     []string
	logs       []*producedLog
	// behind is set once the groups have committed maintenanceLag behind.
	behind atomic.Bool
}

const maintenanceLag = 4 * time.Second

// run produces a record to every partition every 100 ms and commits each
// group maintenanceLag behind every 500 ms, until ctx ends.
func (l *maintenanceLoad) run(ctx context.Context, wg *sync.WaitGroup) {
	wg.Go(func() {
		for ctx.Err() == nil {
			ts := time.Now()
			records := make([]*kgo.Record, l.partitions)
			for p := range l.partitions {
				records[p] = &kgo.Record{Topic: l.topic, Partition: p, Timestamp: ts, Value: []byte("x")}
			}
			pctx, cancel := context.WithTimeout(ctx, time.Minute)
			results := l.k.Client.ProduceSync(pctx, records...)
			cancel()
			for _, r := range results {
				if r.Err == nil {
					l.logs[r.Record.Partition].add(r.Record.Offset, r.Record.Timestamp)
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	wg.Go(func() {
		for ctx.Err() == nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
			offsets := map[int32]int64{}
			for p := range l.partitions {
				if o, ok := l.logs[p].firstAfter(time.Now().Add(-maintenanceLag)); ok {
					offsets[p] = o
				}
			}
			if len(offsets) < int(l.partitions) {
				continue
			}
			for _, g := range l.groups {
				l.k.Commit(g, l.topic, offsets)
			}
			l.behind.Store(true)
		}
	})
}

// startMaintenanceLoad runs steady production on the six partitions of
// "orders" with three groups held maintenanceLag behind (run), until the
// test ends, and returns once the groups have fallen behind.
func startMaintenanceLoad(t *testing.T, k *testKafka) *maintenanceLoad {
	load := &maintenanceLoad{k: k, topic: "orders", partitions: 6, groups: []string{"billing", "search", "audit"}}
	for range load.partitions {
		load.logs = append(load.logs, &producedLog{})
	}
	k.CreateTopic(load.topic, load.partitions)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	load.run(ctx, &wg)
	// The groups fall behind: after maintenanceLag of production, their
	// first commits.
	require.Eventually(t, load.behind.Load, time.Minute, 50*time.Millisecond, "the groups committed %s behind", maintenanceLag)
	return load
}

// maintenanceScore is what a scrape showed of the load.
type maintenanceScore struct {
	pairs, lags, lagging, timeLags int
	errs                           []float64
}

func (l *maintenanceLoad) score(t *testing.T, s *timeLagScraper, into *maintenanceScore) string {
	md, err := s.scrape(context.Background())
	if err != nil {
		t.Logf("scrape: %v", err)
	}
	offsets := pointsOf(md, "kafka.consumer_group.offset")
	lags := pointsOf(md, "kafka.consumer_group.lag")
	timeLags := pointsOf(md, "kafka.consumer_group.time_lag")
	var sc maintenanceScore
	for _, g := range l.groups {
		for p := range l.partitions {
			key := pointKey{g, l.topic, int64(p)}
			sc.pairs++
			lag, ok := lags[key]
			if !ok {
				continue
			}
			sc.lags++
			if lag.intValue <= 0 {
				continue
			}
			sc.lagging++
			tl, ok := timeLags[key]
			if !ok {
				continue
			}
			sc.timeLags++
			if stamp, ok := l.logs[p].stampOf(offsets[key].intValue); ok {
				sc.errs = append(sc.errs, math.Abs(tl.doubleValue-tl.timestamp.Sub(stamp).Seconds()))
			}
		}
	}
	into.pairs += sc.pairs
	into.lags += sc.lags
	into.lagging += sc.lagging
	into.timeLags += sc.timeLags
	into.errs = append(into.errs, sc.errs...)
	return fmt.Sprintf("lag %d/%d, time lag %d/%d, table points %d", sc.lags, sc.pairs, sc.timeLags, sc.lagging, s.reader.Tables.Points())
}

// TestRollingLeaderMoveKeepsSeriesAndTables is a broker maintenance: every
// partition's leader moves every 4 s for 20 s, one partition after the
// other, while the cluster answers the
// receiver's Metadata requests 1.5 s late, sampling every 1 s. Nothing
// touches the clock. The receiver must not mistake the late answers for
// clock steps, its tables must keep every point, and lag and time lag must
// stay reported (each moved partition is read again from its new leader in
// the same scrape and sample) and accurate against the records' timestamps.
func TestRollingLeaderMoveKeepsSeriesAndTables(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for about 40 s")
	}
	requireNoLeakedGoroutines(t)
	k := newTestKafka(t, 3)
	slowMetadata, delayed := delayReceiverMetadata(t, k, 1500*time.Millisecond)
	load := startMaintenanceLoad(t, k)

	core, logs := observer.New(zap.InfoLevel)
	settings := receivertest.NewNopSettings(metadata.Type)
	settings.Logger = zap.New(core)
	cfg := k.testConfig()
	cfg.SamplingInterval = time.Second
	require.NoError(t, cfg.Validate())
	s, err := newTimeLagScraper(cfg, settings, nil)
	require.NoError(t, err)
	require.NoError(t, s.start(context.Background(), nil))
	t.Cleanup(func() { require.NoError(t, s.shutdown(context.Background())) })

	// Healthy first: every pair reported, the tables cover the lag.
	var warmup maintenanceScore
	require.Eventually(t, func() bool {
		var sc maintenanceScore
		line := load.score(t, s, &sc)
		t.Logf("warm-up: %s", line)
		return sc.lags == sc.pairs && sc.lagging == sc.pairs && sc.timeLags == sc.lagging && s.reader.Tables.Points() >= 6*int(load.partitions)
	}, faultDeadline, time.Second)
	_ = warmup

	slowMetadata.Store(true)
	var run maintenanceScore
	// No history is lost: each table's oldest point stays where it was (a
	// table emptied after a supposed clock jump loses it, one shifted after
	// a supposed step back moves it). The point count is no measure: a
	// table merges points a straight line predicts.
	tracked := make([]kafka.TopicPartition, load.partitions)
	for p := range load.partitions {
		tracked[p] = kafka.TopicPartition{Topic: load.topic, Partition: p}
	}
	oldest := func() []timetable.Sample {
		out := make([]timetable.Sample, len(tracked))
		for i, ref := range s.reader.Tables.Refs(tracked) {
			sample, ok := s.reader.Tables.Oldest(ref)
			require.True(t, ok, "%v has a table", tracked[i])
			out[i] = sample
		}
		return out
	}
	before := oldest()
	const maintenance = 20 * time.Second
	moves, moverDone := load.moveLeadersRolling(t, maintenance)
	for start := time.Now(); time.Since(start) < maintenance; {
		line := load.score(t, s, &run)
		t.Logf("%5.1f s: %s", time.Since(start).Seconds(), line)
		require.Equal(t, before, oldest(), "no table lost or shifted its history")
		time.Sleep(time.Second)
	}
	<-moverDone
	slowMetadata.Store(false)

	var clockWarnings []string
	for _, e := range logs.All() {
		if strings.Contains(e.Message, "wall clock") {
			clockWarnings = append(clockWarnings, e.Message)
		}
	}
	sort.Float64s(run.errs)
	require.NotEmpty(t, run.errs)
	p95 := run.errs[int(math.Ceil(0.95*float64(len(run.errs))))-1]
	lagPresence := float64(run.lags) / float64(run.pairs)
	coverage := float64(run.timeLags) / float64(run.lagging)
	t.Logf("%d partition leader moves, %d Metadata answers delayed; lag presence %.3f (%d/%d), time-lag coverage %.3f (%d/%d), time-lag error p50 %.3f s p95 %.3f s max %.3f s; clock warnings %d",
		moves.Load(), delayed.Load(), lagPresence, run.lags, run.pairs, coverage, run.timeLags, run.lagging,
		run.errs[len(run.errs)/2], p95, run.errs[len(run.errs)-1], len(clockWarnings))
	require.Positive(t, delayed.Load(), "the receiver's Metadata was delayed")
	require.Empty(t, clockWarnings, "nothing touched the clock")
	require.GreaterOrEqual(t, lagPresence, 0.99)
	require.GreaterOrEqual(t, coverage, 0.99)
	require.LessOrEqual(t, p95, 1.5)
}

// delayReceiverMetadata makes the cluster answer the receiver's Metadata
// requests late by delay while the returned switch is on; the count is of
// the answers delayed. Only the receiver's are late: sarama asks at version
// 11 at most, the test's franz-go client at the newest kfake speaks.
func delayReceiverMetadata(t *testing.T, k *testKafka, delay time.Duration) (on *atomic.Bool, delayed *atomic.Int64) {
	on, delayed = new(atomic.Bool), new(atomic.Int64)
	stopDelays := make(chan struct{})
	t.Cleanup(func() { close(stopDelays) }) // before the cluster closes
	k.Cluster.ControlKey(int16(kmsg.Metadata), func(req kmsg.Request) (kmsg.Response, error, bool) {
		k.Cluster.KeepControl()
		if on.Load() && req.GetVersion() <= 11 {
			delayed.Add(1)
			k.Cluster.SleepControl(func() {
				select {
				case <-time.After(delay):
				case <-stopDelays:
				}
			})
		}
		return nil, nil, false
	})
	return on, delayed
}

// moveLeadersRolling moves every partition's leader of the load's topic to
// the next broker of three once every 4 s, one partition after the other,
// for the given time, so that reads find some leaders moved and others not.
// done is closed once it stops.
func (l *maintenanceLoad) moveLeadersRolling(t *testing.T, total time.Duration) (moves *atomic.Int64, done <-chan struct{}) {
	moves = new(atomic.Int64)
	moverDone := make(chan struct{})
	stopMoves := make(chan struct{})
	t.Cleanup(func() { // before the cluster closes, also when the test fails early
		close(stopMoves)
		<-moverDone
	})
	go func() {
		defer close(moverDone)
		for start := time.Now(); time.Since(start) < total; {
			for p := range l.partitions {
				select {
				case <-stopMoves:
					return
				default:
				}
				leader := l.k.Cluster.LeaderFor(l.topic, p)
				if err := l.k.Cluster.MoveTopicPartition(l.topic, p, (leader+1)%3); err != nil {
					t.Errorf("move %d: %v", p, err)
				}
				moves.Add(1)
				time.Sleep(4 * time.Second / time.Duration(l.partitions))
			}
		}
	}()
	return moves, moverDone
}

// TestRollingLeaderMoveWithSlowMetadataAtTheScrapeInterval: the rolling
// leader move above (every partition's leader moved every 4 s, here for
// three rounds), the cluster answering Metadata 1.5 s late, with scrapes
// bounded by a 2 s collection interval (a 20 s answer at a 30 s interval)
// and sampling every second. A broker that answers within the scrape's
// time is slow, not silent: it is waited for, so that the late answers
// cost neither the scrape that asked nor the reads from the other brokers,
// and at least 95 % of the pairs keep their lag and time lag in the
// exports of the window.
func TestRollingLeaderMoveWithSlowMetadataAtTheScrapeInterval(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for about 30 s")
	}
	requireNoLeakedGoroutines(t)
	k := newTestKafka(t, 3)
	slowMetadata, delayed := delayReceiverMetadata(t, k, 1500*time.Millisecond)
	load := startMaintenanceLoad(t, k)

	cfg := k.testConfig()
	cfg.Timeout = 0 // the default: a scrape is bounded by its interval
	const interval = 2 * time.Second
	cfg.CollectionInterval = interval
	cfg.SamplingInterval = time.Second
	require.NoError(t, cfg.Validate())
	s, err := newTimeLagScraper(cfg, receivertest.NewNopSettings(metadata.Type), nil)
	require.NoError(t, err)
	require.NoError(t, s.start(context.Background(), nil))
	t.Cleanup(func() { require.NoError(t, s.shutdown(context.Background())) })
	require.Eventually(t, func() bool {
		var sc maintenanceScore
		line := load.score(t, s, &sc)
		t.Logf("warm-up: %s", line)
		return sc.lags == sc.pairs && sc.lagging == sc.pairs && sc.timeLags == sc.lagging
	}, faultDeadline, time.Second)

	slowMetadata.Store(true)
	const maintenance = 12 * time.Second // three rounds of moves
	moves, moverDone := load.moveLeadersRolling(t, maintenance)
	// As the collector's controller does, a scrape starts at each tick of
	// the interval; a tick that comes while a scrape runs waits for it,
	// and the ticks after it are dropped: those intervals export nothing,
	// and their pairs count, absent.
	var run maintenanceScore
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	start := time.Now()
	intervals := int(maintenance / interval)
	scrapes := 0
	for {
		tick := <-ticker.C
		if int(tick.Sub(start).Round(interval)/interval) > intervals {
			break
		}
		began := time.Now()
		line := load.score(t, s, &run)
		scrapes++
		t.Logf("%5.1f s: %s (%s)", time.Since(start).Seconds(), line, time.Since(began).Round(time.Millisecond))
	}
	run.pairs += (intervals - scrapes) * len(load.groups) * int(load.partitions)
	<-moverDone
	slowMetadata.Store(false)

	// Every pair lags (the groups stay maintenanceLag behind): each export
	// should have its lag and time lag.
	presence := float64(run.lags) / float64(run.pairs)
	coverage := float64(run.timeLags) / float64(run.pairs)
	t.Logf("%d partition leader moves, %d Metadata answers delayed; lag presence %.3f (%d/%d), time-lag coverage %.3f (%d/%d)",
		moves.Load(), delayed.Load(), presence, run.lags, run.pairs, coverage, run.timeLags, run.pairs)
	require.Positive(t, delayed.Load(), "the receiver's Metadata was delayed")
	require.GreaterOrEqual(t, presence, 0.95)
	require.GreaterOrEqual(t, coverage, 0.95)
}

// crash stops broker node the way a crashed broker does: every open
// connection to it is dropped (kfake's RemoveNode alone only closes its
// listener, and goes on serving the connections already open), its
// listener closes and its partitions get new leaders.
func (k *testKafka) crash(t *testing.T, node int32) {
	t.Helper()
	k.Cluster.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		k.Cluster.KeepControl()
		if k.Cluster.CurrentNode() == node {
			return nil, errors.New("broker crashed"), true
		}
		return nil, nil, false
	})
	require.NoError(t, k.Cluster.RemoveNode(node))
}

// TestCrashedLeaderPartitionsReadFromNewLeaders: a broker that led a third
// of the partitions crashes. The first request to it fails at the
// transport; that refreshes the metadata, and its partitions are read from
// their new leaders in the same scrape and sample, not after the
// background refresh (10 min by default).
func TestCrashedLeaderPartitionsReadFromNewLeaders(t *testing.T) {
	requireNoLeakedGoroutines(t)
	k := newTestKafka(t, 3)
	const partitions = 6
	k.CreateTopic("orders", partitions)
	for p := range int32(partitions) {
		require.NoError(t, k.Cluster.MoveTopicPartition("orders", p, p%3))
	}
	base := time.Now().Add(-time.Minute)
	offsets := map[int32]int64{}
	for p := range int32(partitions) {
		k.Produce("orders", p, base, base.Add(time.Second))
		offsets[p] = 1
	}
	// Coordinated by brokers that stay: a coordinator's move is a
	// different fault.
	groups := groupsCoordinatedBy(t, k, 2, 0)
	for _, g := range groups {
		k.Commit(g, "orders", offsets)
	}
	s := startScraper(t, faultConfig(k))
	want := len(groups) * partitions
	got, _, err := lagCount(s)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.NoError(t, s.sampler.Sample(t.Context(), false))
	points := s.reader.Tables.Points()

	k.crash(t, 2)
	for p := range int32(partitions) {
		require.NotEqual(t, int32(2), k.Cluster.LeaderFor("orders", p))
	}
	for p := range int32(partitions) {
		k.Produce("orders", p, time.Now())
	}
	require.NoError(t, s.sampler.Sample(t.Context(), false), "the sample reads the crashed broker's partitions from their new leaders")
	require.Equal(t, points+partitions, s.reader.Tables.Points(), "a point for every partition")
	got, md, err := lagCount(s)
	require.Equal(t, want, got, "every partition's lag in the first scrape after the crash: %v", err)
	for key, p := range pointsOf(md, "kafka.consumer_group.lag") {
		require.Equal(t, int64(2), p.intValue, "%v", key)
	}
}

// wedge makes broker node accept connections and read requests but answer
// none, until the test ends: a broker stuck on its disk, a half-open path.
// Each request sleeps in kfake (SleepControl) and is then dropped.
func (k *testKafka) wedge(t *testing.T, node int32) {
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	k.Cluster.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		k.Cluster.KeepControl()
		if k.Cluster.CurrentNode() != node {
			return nil, nil, false
		}
		k.Cluster.SleepControl(func() { <-release })
		return nil, nil, true
	})
}

// groupsCoordinatedBy names n groups whose coordinator is one of nodes.
func groupsCoordinatedBy(t *testing.T, k *testKafka, n int, nodes ...int32) []string {
	t.Helper()
	var out []string
	for i := 0; len(out) < n; i++ {
		require.Less(t, i, 10000)
		g := fmt.Sprintf("g-%d", i)
		node := k.Cluster.CoordinatorFor(g)
		for _, want := range nodes {
			if node == want {
				out = append(out, g)
			}
		}
	}
	return out
}

// TestWedgedBrokerCostsOnlyWhatItHolds: one broker of three accepts
// connections and answers nothing, after the partitions it led moved away;
// it coordinates no monitored group. With `timeout` at its default, every
// collection interval still exports, and every export has the lag and time
// lag of every partition of every group the other brokers coordinate.
func TestWedgedBrokerCostsOnlyWhatItHolds(t *testing.T) {
	requireNoLeakedGoroutines(t)
	const wedged = int32(2)
	k := newTestKafka(t, 3)
	const partitions = 6
	// LogAppendTime: the records' stamps date them from the first scrape.
	k.CreateAppendTimeTopic("orders", partitions)
	for p := range int32(partitions) {
		if k.Cluster.LeaderFor("orders", p) == wedged {
			require.NoError(t, k.Cluster.MoveTopicPartition("orders", p, p%2))
		}
	}
	groups := groupsCoordinatedBy(t, k, 4, 0, 1)
	base := time.Now().Add(-time.Minute)
	for p := range int32(partitions) {
		k.Produce("orders", p, base, base.Add(time.Second), base.Add(2*time.Second))
	}
	for _, g := range groups {
		k.Commit(g, "orders", map[int32]int64{0: 1, 1: 1, 2: 1, 3: 1, 4: 1, 5: 1})
	}

	cfg := k.testConfig()
	cfg.Timeout = 0 // the default
	cfg.CollectionInterval = 2 * time.Second
	cfg.SamplingInterval = time.Second
	require.NoError(t, cfg.Validate())
	sink := new(consumertest.MetricsSink)
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	rcvr, err := NewFactory().CreateMetrics(context.Background(), metadatatest.NewSettings(tt), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, rcvr.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, rcvr.Shutdown(context.Background())) })
	wantPairs := len(groups) * partitions
	require.Eventually(t, func() bool {
		all := sink.AllMetrics()
		return len(all) > 0 && len(pointsOf(all[len(all)-1], "kafka.consumer_group.time_lag")) == wantPairs
	}, faultDeadline, 50*time.Millisecond, "healthy exports before the wedge")

	k.wedge(t, wedged)
	sink.Reset()
	started := time.Now()
	const intervals = 10
	require.Eventually(t, func() bool { return len(sink.AllMetrics()) >= intervals }, faultDeadline, 50*time.Millisecond,
		"%d exports with a broker wedged", intervals)
	elapsed := time.Since(started)
	exports := sink.AllMetrics()

	var summary []string
	for _, md := range exports {
		summary = append(summary, fmt.Sprintf("%d/%d", len(pointsOf(md, "kafka.consumer_group.lag")), len(pointsOf(md, "kafka.consumer_group.time_lag"))))
	}
	t.Logf("%d exports in %s, lag/time-lag points each (of %d): %v", len(exports), elapsed, wantPairs, summary)
	// The controller scrapes once per interval, and skips the ticks that
	// come while a scrape runs: an export every interval is every scrape
	// ending within its interval, which the receiver measures itself.
	durations, err := tt.GetMetric("otelcol_kafka_time_lag_scrape_duration")
	require.NoError(t, err)
	longest, ok := durations.Data.(metricdata.Histogram[float64]).DataPoints[0].Max.Value()
	require.True(t, ok, "the scrape duration histogram keeps its maximum")
	require.Less(t, longest, cfg.CollectionInterval.Seconds(), "every scrape ended within its collection interval: none skipped a tick")
	for i, md := range exports {
		lags := pointsOf(md, "kafka.consumer_group.lag")
		timeLags := pointsOf(md, "kafka.consumer_group.time_lag")
		require.Len(t, lags, wantPairs, "export %d: lag of every pair the healthy brokers coordinate", i)
		require.Len(t, timeLags, wantPairs, "export %d: time lag of every lagging pair", i)
		for key, p := range lags {
			require.Equal(t, int64(2), p.intValue, "export %d: %v", i, key)
		}
	}
}
