package kafkatimelagreceiver

import (
	"context"
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
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

// maintenanceLoad is steady production on every partition of a topic and
// groups held a few seconds behind, with a log of every record's timestamp.
type maintenanceLoad struct {
	k          *testKafka
	topic      string
	partitions int32
	groups     []string
	logs       []*producedLog
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
		}
	})
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
	return fmt.Sprintf("lag %d/%d, time lag %d/%d, table points %d", sc.lags, sc.pairs, sc.timeLags, sc.lagging, s.tables.Points())
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
	load := &maintenanceLoad{k: k, topic: "orders", partitions: 6, groups: []string{"billing", "search", "audit"}}
	for range load.partitions {
		load.logs = append(load.logs, &producedLog{})
	}
	k.CreateTopic(load.topic, load.partitions)

	// Only the receiver's Metadata is late: sarama asks at version 11 at
	// most, the test's franz-go client at the newest kfake speaks, so that
	// the records' timestamps stay the times they were appended.
	var slowMetadata atomic.Bool
	var delayed atomic.Int64
	stopDelays := make(chan struct{})
	t.Cleanup(func() { close(stopDelays) }) // before the cluster closes
	k.Cluster.ControlKey(int16(kmsg.Metadata), func(req kmsg.Request) (kmsg.Response, error, bool) {
		k.Cluster.KeepControl()
		if slowMetadata.Load() && req.GetVersion() <= 11 {
			delayed.Add(1)
			k.Cluster.SleepControl(func() {
				select {
				case <-time.After(1500 * time.Millisecond):
				case <-stopDelays:
				}
			})
		}
		return nil, nil, false
	})

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	load.run(ctx, &wg)
	time.Sleep(maintenanceLag + 2*time.Second) // the groups fall behind

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
		return sc.lags == sc.pairs && sc.lagging == sc.pairs && sc.timeLags == sc.lagging && s.tables.Points() >= 6*int(load.partitions)
	}, faultDeadline, time.Second)
	_ = warmup

	slowMetadata.Store(true)
	var run maintenanceScore
	points := s.tables.Points()
	const maintenance = 20 * time.Second
	// A rolling move: every partition's leader moves once every 4 s, one
	// partition after the other, so that reads find some leaders moved and
	// others not.
	moves := 0
	moverDone := make(chan struct{})
	go func() {
		defer close(moverDone)
		for start := time.Now(); time.Since(start) < maintenance; {
			for p := range load.partitions {
				leader := k.Cluster.LeaderFor(load.topic, p)
				if err := k.Cluster.MoveTopicPartition(load.topic, p, (leader+1)%3); err != nil {
					t.Errorf("move %d: %v", p, err)
				}
				moves++
				time.Sleep(4 * time.Second / time.Duration(load.partitions))
			}
		}
	}()
	for start := time.Now(); time.Since(start) < maintenance; {
		line := load.score(t, s, &run)
		now := s.tables.Points()
		t.Logf("%5.1f s: %s", time.Since(start).Seconds(), line)
		require.GreaterOrEqual(t, now, points, "table points never drop")
		points = now
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
		moves, delayed.Load(), lagPresence, run.lags, run.pairs, coverage, run.timeLags, run.lagging,
		run.errs[len(run.errs)/2], p95, run.errs[len(run.errs)-1], len(clockWarnings))
	require.Positive(t, delayed.Load(), "the receiver's Metadata was delayed")
	require.Empty(t, clockWarnings, "nothing touched the clock")
	require.GreaterOrEqual(t, lagPresence, 0.99)
	require.GreaterOrEqual(t, coverage, 0.99)
	require.LessOrEqual(t, p95, 1.5)
}
