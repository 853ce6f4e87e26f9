package kafkatimelagreceiver

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

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
	k.CreateTopic("orders", partitions)
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
	rcvr, err := NewFactory().CreateMetrics(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, sink)
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
	time.Sleep(intervals * cfg.CollectionInterval)
	elapsed := time.Since(started)
	exports := sink.AllMetrics()

	var summary []string
	for _, md := range exports {
		summary = append(summary, fmt.Sprintf("%d/%d", len(pointsOf(md, "kafka.consumer_group.lag")), len(pointsOf(md, "kafka.consumer_group.time_lag"))))
	}
	t.Logf("%d exports in %s, lag/time-lag points each (of %d): %v", len(exports), elapsed, wantPairs, summary)
	// The controller scrapes once per interval; a scrape that ran past
	// its interval would skip ticks. One tick either side is the start.
	due := int(elapsed/cfg.CollectionInterval) - 1
	require.GreaterOrEqual(t, len(exports), due, "an export every collection interval (%d in %s)", len(exports), elapsed)
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
