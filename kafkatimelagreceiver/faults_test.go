//go:build !unit

package kafkatimelagreceiver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadatatest"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/statestore"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/statestore/memorystorage"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kafkacount"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// groupsOnEachNode names one group per broker, coordinated by that broker.
func groupsOnEachNode(t *testing.T, k *testKafka, brokers int) map[int32]string {
	t.Helper()
	out := map[int32]string{}
	for i := 0; len(out) < brokers; i++ {
		require.Less(t, i, 10000, "no group name hashes to every broker")
		g := fmt.Sprintf("group-%d", i)
		if node := k.Cluster.CoordinatorFor(g); out[node] == "" {
			out[node] = g
		}
	}
	return out
}

// requireTablesKept checks that every table that had points still has them,
// from the same oldest point.
func requireTablesKept(t *testing.T, s *timeLagScraper, before map[kafka.TopicPartition]timetable.Sample) {
	t.Helper()
	now := tableHeads(s)
	for tp, head := range before {
		require.Contains(t, now, tp, "table of %s/%d was dropped", tp.Topic, tp.Partition)
		require.Equal(t, head, now[tp], "table of %s/%d was reset", tp.Topic, tp.Partition)
	}
}

// buildTables produces between samples so that every tracked partition's
// table holds a few points.
func buildTables(t *testing.T, k *testKafka, s *timeLagScraper, topic string, partitions int32) {
	t.Helper()
	for range 3 {
		for p := range partitions {
			k.Produce(topic, p, time.Now())
		}
		require.NoError(t, s.sampler.Sample(context.Background(), true))
	}
	for tp, head := range tableHeads(s) {
		require.NotZero(t, head.At, "table of %v is empty", tp)
	}
}

// lagCount scrapes once and returns the lag points and the error.
func lagCount(s *timeLagScraper) (int, pmetric.Metrics, error) {
	md, err := s.scrape(context.Background())
	return len(pointsOf(md, "kafka.consumer_group.lag")), md, err
}

// scrapesUntilWhole scrapes until one returns every expected lag point
// without error and says how many scrapes that took.
func scrapesUntilWhole(t *testing.T, s *timeLagScraper, want int) int {
	t.Helper()
	n := 0
	var (
		got     int
		lastErr error
	)
	require.Eventually(t, func() bool {
		n++
		got, _, lastErr = lagCount(s)
		return lastErr == nil && got == want
	}, faultDeadline, 50*time.Millisecond, "last scrape: %d of %d lag points, error %v", got, want, lastErr)
	return n
}

// faultCluster is the common setup: brokers, one topic with a partition per
// two brokers, one group per broker committed on every partition, a
// started scraper with tables.
type faultCluster struct {
	k          *testKafka
	s          *timeLagScraper
	groups     map[int32]string
	partitions int32
	wantLag    int
}

func newFaultCluster(t *testing.T, brokers int, opts ...kfake.Opt) *faultCluster {
	t.Helper()
	k := newTestKafka(t, brokers, opts...)
	f := &faultCluster{k: k, partitions: int32(2 * brokers)}
	k.CreateTopic("orders", f.partitions)
	base := time.Now().Add(-10 * time.Minute)
	offsets := map[int32]int64{}
	for p := range f.partitions {
		k.Produce("orders", p, base, base.Add(time.Second), base.Add(2*time.Second))
		offsets[p] = 1
	}
	f.groups = groupsOnEachNode(t, k, brokers)
	for _, g := range f.groups {
		k.Commit(g, "orders", offsets)
	}
	f.wantLag = len(f.groups) * int(f.partitions)
	f.s = startScraper(t, faultConfig(k))
	got, _, err := lagCount(f.s)
	require.NoError(t, err)
	require.Equal(t, f.wantLag, got)
	buildTables(t, k, f.s, "orders", f.partitions)
	return f
}

// TestFaultBrokerRemovedAndAddedBack: a broker leaves the cluster (its
// partitions and groups move to the others) and comes back on its port.
func TestFaultBrokerRemovedAndAddedBack(t *testing.T) {
	requireNoLeakedGoroutines(t)
	f := newFaultCluster(t, 3)
	heads := tableHeads(f.s)

	_, portText, err := net.SplitHostPort(f.k.Addrs[2])
	require.NoError(t, err)
	port, err := strconv.Atoi(portText)
	require.NoError(t, err)
	require.NoError(t, f.k.Cluster.RemoveNode(2))
	n := scrapesUntilWhole(t, f.s, f.wantLag)
	t.Logf("broker 2 removed: whole again after %d scrapes", n)
	requireTablesKept(t, f.s, heads)

	_, _, err = f.k.Cluster.AddNode(2, port)
	require.NoError(t, err)
	n = scrapesUntilWhole(t, f.s, f.wantLag)
	t.Logf("broker 2 back: whole again after %d scrapes", n)
	requireTablesKept(t, f.s, heads)
	require.Eventually(t, func() bool {
		return f.s.sampler.Sample(context.Background(), true) == nil
	}, faultDeadline, 50*time.Millisecond, "the sampler recovers too")
}

// TestFaultPartitionLeadersMoved: leadership moves, one partition at a time
// and all at once. A request to the old leader fails with NOT_LEADER, which
// refreshes the metadata: the next scrape is whole again. The background
// metadata refresh (minutes) is not what recovers.
func TestFaultPartitionLeadersMoved(t *testing.T) {
	requireNoLeakedGoroutines(t)
	f := newFaultCluster(t, 3)
	heads := tableHeads(f.s)

	for round := range 5 {
		if round == 0 {
			leader := f.k.Cluster.LeaderFor("orders", 0)
			require.NoError(t, f.k.Cluster.MoveTopicPartition("orders", 0, (leader+1)%3))
		} else {
			f.k.Cluster.ShufflePartitionLeaders()
		}
		n := scrapesUntilWhole(t, f.s, f.wantLag)
		require.LessOrEqual(t, n, 3, "round %d: a leader move costs at most a scrape or two", round)
		// The sampler reads the same leaders and recovers the same way.
		require.Eventually(t, func() bool {
			return f.s.sampler.Sample(context.Background(), false) == nil
		}, faultDeadline, 50*time.Millisecond)
	}
	requireTablesKept(t, f.s, heads)
}

// TestFaultCoordinatorMoved: every group's coordinator is rehashed to a new
// broker. OffsetFetch at the old one answers NOT_COORDINATOR, which makes
// the client look the coordinator up again.
func TestFaultCoordinatorMoved(t *testing.T) {
	requireNoLeakedGoroutines(t)
	f := newFaultCluster(t, 3)
	heads := tableHeads(f.s)

	for round := range 3 {
		before := map[string]int32{}
		for _, g := range f.groups {
			before[g] = f.k.Cluster.CoordinatorFor(g)
		}
		moved := 0
		for attempt := 0; moved == 0; attempt++ {
			require.Less(t, attempt, 100, "rehashing never moved a coordinator")
			f.k.Cluster.RehashCoordinators()
			for _, g := range f.groups {
				if f.k.Cluster.CoordinatorFor(g) != before[g] {
					moved++
				}
			}
		}
		n := scrapesUntilWhole(t, f.s, f.wantLag)
		t.Logf("round %d: %d of %d coordinators moved, whole again after %d scrapes", round, moved, len(f.groups), n)
		require.LessOrEqual(t, n, 3, "a coordinator move costs at most a scrape or two")
	}
	requireTablesKept(t, f.s, heads)
}

// brokerSwitch makes one broker drop every connection while it is off, as a
// crashed broker that other brokers still list would.
type brokerSwitch struct {
	node int32
	down atomic.Bool
}

func (k *testKafka) addBrokerSwitch(node int32) *brokerSwitch {
	sw := &brokerSwitch{node: node}
	k.Cluster.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		k.Cluster.KeepControl()
		if sw.down.Load() && k.Cluster.CurrentNode() == sw.node {
			return nil, errors.New("broker is down"), true
		}
		return nil, nil, false
	})
	return sw
}

// TestFaultBrokerDownPartialData: while one broker is unreachable, a scrape
// reports every group and partition the other brokers serve, returns a
// partial-scrape error for the rest, and keeps the tables of partitions
// that only a group on the dead coordinator tracks.
func TestFaultBrokerDownPartialData(t *testing.T) {
	requireNoLeakedGoroutines(t)
	const brokers = 3
	f := newFaultCluster(t, brokers)
	// The dead broker must lead some partitions but not all, for the test
	// to mean anything; leaders are random.
	dead, livePartitions := int32(-1), 0
	for node := range int32(brokers) {
		live := 0
		for p := range f.partitions {
			if f.k.Cluster.LeaderFor("orders", p) != node {
				live++
			}
		}
		if live > 0 && live < int(f.partitions) {
			dead, livePartitions = node, live
			break
		}
	}
	if dead < 0 {
		f.k.Cluster.ShufflePartitionLeaders()
		require.NoError(t, f.k.Cluster.MoveTopicPartition("orders", 0, 0))
		require.NoError(t, f.k.Cluster.MoveTopicPartition("orders", 1, 1))
		dead = 0
		for p := range f.partitions {
			if f.k.Cluster.LeaderFor("orders", p) != dead {
				livePartitions++
			}
		}
		scrapesUntilWhole(t, f.s, f.wantLag)
	}
	// A topic only the dead broker's group reads: while the group cannot be
	// read, nothing says the topic is still wanted.
	f.k.CreateTopic("solo", 2)
	for p := range int32(2) {
		f.k.Produce("solo", p, time.Now())
	}
	f.k.Commit(f.groups[dead], "solo", map[int32]int64{0: 0, 1: 0})
	got, _, err := lagCount(f.s)
	require.NoError(t, err)
	require.Equal(t, f.wantLag+2, got)
	buildTables(t, f.k, f.s, "solo", 2)
	heads := tableHeads(f.s)
	require.Contains(t, heads, kafka.TopicPartition{Topic: "solo", Partition: 0})

	require.Positive(t, livePartitions)
	require.Less(t, livePartitions, int(f.partitions))

	sw := f.k.addBrokerSwitch(dead)
	sw.down.Store(true)
	for scrape := range 3 {
		got, md, err := lagCount(f.s)
		require.Error(t, err, "scrape %d", scrape)
		require.True(t, scrapererror.IsPartialScrapeError(err), "scrape %d: partial, not failed: %v", scrape, err)
		require.Equal(t, (brokers-1)*livePartitions, got,
			"scrape %d: the live coordinators' groups on the live leaders' partitions", scrape)
		for key := range pointsOf(md, "kafka.consumer_group.lag") {
			require.NotEqual(t, f.groups[dead], key.group)
		}
		requireTablesKept(t, f.s, heads)
	}
	require.Error(t, f.s.sampler.Sample(context.Background(), false), "the sampler cannot read the dead leader")
	requireTablesKept(t, f.s, heads)

	sw.down.Store(false)
	n := scrapesUntilWhole(t, f.s, f.wantLag+2)
	t.Logf("broker back: whole again after %d scrapes", n)
	requireTablesKept(t, f.s, heads)
}

// TestFaultKafkaDownForScrapesThenBack: the whole cluster stops for several
// scrapes and comes back on the same ports with its data. Every scrape in
// between fails fast with an error, the tables stay as they were, and the
// receiver reports again without a restart.
func TestFaultKafkaDownForScrapesThenBack(t *testing.T) {
	requireNoLeakedGoroutines(t)
	dir := t.TempDir()
	f := newFaultCluster(t, 2, kfake.DataDir(dir))
	_, before, err := lagCount(f.s)
	require.NoError(t, err)
	heads := tableHeads(f.s)
	points := f.s.reader.Tables.Points()
	wantLag := intValues(pointsOf(before, "kafka.consumer_group.lag"))

	var ports []int
	for _, addr := range f.k.Addrs {
		_, p, err := net.SplitHostPort(addr)
		require.NoError(t, err)
		port, err := strconv.Atoi(p)
		require.NoError(t, err)
		ports = append(ports, port)
	}
	f.k.Client.Close()
	f.k.Cluster.Close()

	for scrape := range 4 {
		// A down cluster must not hold a scrape: its requests fail as they
		// are refused, not at a deadline, this one's or a request's.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		md, err := f.s.scrape(ctx)
		cancel()
		require.Error(t, err, "scrape %d", scrape)
		require.False(t, scrapererror.IsPartialScrapeError(err), "nothing was read: %v", err)
		require.Zero(t, md.DataPointCount())
		require.NotErrorIs(t, err, context.DeadlineExceeded, "a down cluster must not hold a scrape")
		require.NotErrorIs(t, err, os.ErrDeadlineExceeded, "a down cluster must not hold a scrape")
		require.Error(t, f.s.sampler.Sample(context.Background(), true))
	}
	requireTablesKept(t, f.s, heads)
	require.Equal(t, points, f.s.reader.Tables.Points(), "nothing was learned, nothing was lost")

	back := newTestKafka(t, 2, kfake.DataDir(dir), kfake.Ports(ports...))
	require.Eventually(t, func() bool {
		md, err := f.s.scrape(context.Background())
		if err != nil {
			t.Log(err)
			return false
		}
		require.Equal(t, wantLag, intValues(pointsOf(md, "kafka.consumer_group.lag")), "the same lag as before the outage")
		return true
	}, faultDeadline, 100*time.Millisecond)
	requireTablesKept(t, f.s, heads)
	for p := range f.partitions {
		back.Produce("orders", p, time.Now())
	}
	require.NoError(t, f.s.sampler.Sample(context.Background(), true))
	require.Greater(t, f.s.reader.Tables.Points(), points, "the tables grow again")
}

// hookedCluster runs test code between the scraper's calls to Kafka, to
// change the cluster in the middle of a scrape.
type hookedCluster struct {
	kafka.Cluster
	afterGroups    func()
	afterCommitted func()
}

func (h *hookedCluster) ConsumerGroups(ctx context.Context) ([]string, error) {
	groups, err := h.Cluster.ConsumerGroups(ctx)
	if h.afterGroups != nil {
		h.afterGroups()
	}
	return groups, err
}

func (h *hookedCluster) CommittedOffsets(ctx context.Context, groups []string) (map[string]kafka.Commits, error) {
	out, err := h.Cluster.CommittedOffsets(ctx, groups)
	if h.afterCommitted != nil {
		h.afterCommitted()
	}
	return out, err
}

// TestGroupAndTopicDeletedMidScrape deletes a group after it was listed and
// a topic after its commits were read. The scrape reports the rest; the next
// one is clean and no longer mentions either.
func TestGroupAndTopicDeletedMidScrape(t *testing.T) {
	requireNoLeakedGoroutines(t)
	k := newTestKafka(t, 3)
	k.CreateTopic("keep", 2)
	k.CreateTopic("doomed", 2)
	now := time.Now().Add(-time.Minute)
	for p := range int32(2) {
		k.Produce("keep", p, now, now)
		k.Produce("doomed", p, now, now, now)
	}
	k.Commit("stays", "keep", map[int32]int64{0: 1, 1: 0})
	k.Commit("stays", "doomed", map[int32]int64{0: 1})
	k.Commit("goes", "keep", map[int32]int64{0: 0})
	k.Commit("reader", "doomed", map[int32]int64{0: 0, 1: 2})

	s, err := newTimeLagScraper(faultConfig(k), receivertest.NewNopSettings(metadata.Type), nil)
	require.NoError(t, err)
	hooks := &hookedCluster{}
	newCluster := s.newCluster
	s.newCluster = func(ctx context.Context, host component.Host) (kafka.Cluster, error) {
		c, err := newCluster(ctx, host)
		hooks.Cluster = c
		return hooks, err
	}
	require.NoError(t, s.start(context.Background(), nil))
	t.Cleanup(func() { require.NoError(t, s.shutdown(context.Background())) })

	ctx := context.Background()
	hooks.afterGroups = func() {
		resp, err := k.Admin.DeleteGroup(ctx, "goes")
		require.NoError(t, err)
		require.NoError(t, resp.Err)
	}
	hooks.afterCommitted = func() {
		resp, err := k.Admin.DeleteTopic(ctx, "doomed")
		require.NoError(t, err)
		require.NoError(t, resp.Err)
	}
	md, err := s.scrape(ctx)
	t.Logf("scrape during the deletes: %v", err)
	if err != nil {
		require.True(t, scrapererror.IsPartialScrapeError(err), "the rest is still reported: %v", err)
	}
	lag := intValues(pointsOf(md, "kafka.consumer_group.lag"))
	require.Equal(t, int64(1), lag[pointKey{"stays", "keep", 0}])
	require.Equal(t, int64(2), lag[pointKey{"stays", "keep", 1}])

	hooks.afterGroups, hooks.afterCommitted = nil, nil
	require.Eventually(t, func() bool {
		md, err = s.scrape(ctx)
		return err == nil
	}, faultDeadline, 50*time.Millisecond)
	require.Equal(t, map[pointKey]int64{
		{"stays", "keep", 0}: 1,
		{"stays", "keep", 1}: 2,
	}, intValues(pointsOf(md, "kafka.consumer_group.lag")))
	for tp := range tableHeads(s) {
		require.NotEqual(t, "doomed", tp.Topic, "the deleted topic's tables are dropped")
	}
	require.Equal(t, []kafka.TopicPartition{{Topic: "keep", Partition: 0}, {Topic: "keep", Partition: 1}}, s.reader.Tables.Partitions())
}

// TestGroupWithThousandsOfPartitions: one group committed on 6,000
// partitions of three topics is reported whole in one scrape.
func TestGroupWithThousandsOfPartitions(t *testing.T) {
	requireNoLeakedGoroutines(t)
	k := newTestKafka(t, 3)
	sizes := map[string]int32{"wide-a": 4000, "wide-b": 1500, "wide-c": 500}
	total := 0
	for topic, n := range sizes {
		k.CreateTopic(topic, n)
		offsets := make(map[int32]int64, n)
		for p := range n {
			offsets[p] = 0
		}
		k.Commit("huge", topic, offsets)
		total += int(n)
	}
	k.Produce("wide-a", 7, time.Now(), time.Now())

	s := startScraper(t, faultConfig(k))
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	lag := pointsOf(md, "kafka.consumer_group.lag")
	require.Len(t, lag, total)
	require.Equal(t, int64(2), lag[pointKey{"huge", "wide-a", 7}].intValue)
	require.Equal(t, int64(2), pointsOf(md, "kafka.consumer_group.lag_sum")[pointKey{"huge", "wide-a", -1}].intValue)
	require.Len(t, s.reader.Tables.Partitions(), total)
	require.NoError(t, s.sampler.Sample(context.Background(), true))
	require.Equal(t, 2*total, s.reader.Tables.Points(), "a point per partition from the scrape and one from the sample")
}

// TestOddNames: group ids and topic names at the edges of what Kafka allows
// come through as attributes unchanged.
func TestOddNames(t *testing.T) {
	requireNoLeakedGoroutines(t)
	k := newTestKafka(t, 2)
	longTopic := strings.Repeat("t", 249) // Kafka's longest topic name
	topics := []string{"a.b.c", "under_score-and-dash", "..dots..", longTopic, "0"}
	groups := []string{
		"グループ.日本語",
		"group with spaces",
		"dots.in.the.name",
		"emoji-🚀-group",
		`quotes "and" back\slash`,
		"tab\tand\nnewline",
		strings.Repeat("g", 5000),
		"-",
	}
	for _, topic := range topics {
		k.CreateTopic(topic, 1)
		k.Produce(topic, 0, time.Now(), time.Now(), time.Now())
	}
	want := map[pointKey]int64{}
	for i, g := range groups {
		topic := topics[i%len(topics)]
		k.Commit(g, topic, map[int32]int64{0: int64(i % 3)})
		want[pointKey{g, topic, 0}] = 3 - int64(i%3)
	}

	s := startScraper(t, faultConfig(k))
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	require.Equal(t, want, intValues(pointsOf(md, "kafka.consumer_group.lag")))
	current := pointsOf(md, "kafka.partition.current_offset")
	for _, topic := range topics {
		require.Equal(t, int64(3), current[pointKey{"", topic, 0}].intValue, topic)
	}

	// Filters see the names as they are: a dot in an include regex is a
	// regex dot, so an anchored literal is how to select one name.
	cfg := faultConfig(k)
	cfg.Groups = FilterConfig{Include: []string{`^dots\.in\.the\.name$`, "^グループ"}}
	md, err = startScraper(t, cfg).scrape(context.Background())
	require.NoError(t, err)
	got := intValues(pointsOf(md, "kafka.consumer_group.lag"))
	require.Len(t, got, 2)
	require.Contains(t, got, pointKey{"dots.in.the.name", topics[2%len(topics)], 0})
	require.Contains(t, got, pointKey{"グループ.日本語", topics[0], 0})
}

// TestCommittedAboveEndOffsetIsFlagged: a group committed past the end of a
// partition (the topic was deleted and recreated, the log truncated by an
// unclean leader election, or the consumer committed offsets it never
// read). Its lag is still 0, but every scrape that sees it counts it in the
// receiver's own telemetry and says so in the debug log, naming the group
// and the partition, so that "caught up" is not all an SRE gets to see.
func TestCommittedAboveEndOffsetIsFlagged(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("short", 2)
	k.Produce("short", 0, time.Now())
	k.Produce("short", 1, time.Now())
	k.Commit("ahead", "short", map[int32]int64{0: 50, 1: 1})

	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	settings := metadatatest.NewSettings(tt)
	core, logs := observer.New(zapcore.DebugLevel)
	settings.Logger = zap.New(core)
	cfg := k.testConfig()
	require.NoError(t, cfg.Validate())
	s, err := newTimeLagScraper(cfg, settings, nil)
	require.NoError(t, err)
	require.NoError(t, s.start(context.Background(), nil))
	t.Cleanup(func() { require.NoError(t, s.shutdown(context.Background())) })

	for scrape := 1; scrape <= 2; scrape++ {
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		require.Equal(t, int64(0), pointsOf(md, "kafka.consumer_group.lag")[pointKey{"ahead", "short", 0}].intValue)

		got, err := tt.GetMetric("otelcol_kafka_time_lag_commits_beyond_end")
		require.NoError(t, err, "the receiver counts commits above the end offset")
		points := got.Data.(metricdata.Sum[int64]).DataPoints
		require.Len(t, points, 1)
		require.Equal(t, int64(scrape), points[0].Value, "one pair, seen by %d scrapes", scrape)

		flagged := logs.FilterMessageSnippet("above the end offset").All()
		require.Len(t, flagged, scrape, "one debug line per scrape")
		entry := flagged[scrape-1]
		require.Equal(t, zapcore.DebugLevel, entry.Level)
		fields := entry.ContextMap()
		require.EqualValues(t, 1, fields["pairs"])
		require.Equal(t, []any{"ahead short/0 committed 50, end 1"}, fields["examples"])
	}
}

// TestGroupWhoseOffsetFetchFailedHasNoStatus: the coordinator of one group
// fails its OffsetFetch for a scrape. Nothing is known of where the group
// is, so its status is left out (not judged OK from no partitions at
// all) and the debug log says which group and why; its state
// and rebalances, which were read, are still reported. When the read works
// again, the status comes back judged on the scrapes that did read the
// group: the failed one neither reset its history nor added to it.
func TestGroupWhoseOffsetFetchFailedHasNoStatus(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("work", 1)
	now := time.Now()
	k.Produce("work", 0, now, now, now)
	k.Commit("unlucky", "work", map[int32]int64{0: 1})
	k.Commit("fine", "work", map[int32]int64{0: 3})

	cfg := k.healthConfig(2)
	core, logs := observer.New(zapcore.DebugLevel)
	unreadable := &unreadableGroups{failing: map[string]bool{}}
	s := startScraperWith(t, cfg, zap.New(core), func(c kafka.Cluster) kafka.Cluster {
		unreadable.Cluster = c
		return unreadable
	})

	v := scrapeGroup(t, s, "unlucky")
	require.Equal(t, "OK", v.status, "one point: nothing to judge yet")

	unreadable.failing["unlucky"] = true
	md, err := s.scrape(context.Background())
	require.Error(t, err, "the failed read is the scrape's error")
	v = viewGroup(t, md, "unlucky")
	require.Empty(t, v.status, "no status for a group whose offsets were not read")
	for _, p := range healthPointsOf(md, "kafka.consumer_group.status") {
		require.NotEqual(t, "unlucky", p.attrs["group"], "no status point at all, not even a 0")
	}
	require.Empty(t, v.partitionStatus)
	require.Equal(t, "Empty", v.state, "its description was read")
	require.True(t, v.hasCount, "its rebalance count is known")
	require.Equal(t, "OK", viewGroup(t, md, "fine").status, "the other group is judged as usual")
	omitted := logs.FilterMessageSnippet("status omitted").All()
	require.Len(t, omitted, 1)
	require.Equal(t, zapcore.DebugLevel, omitted[0].Level)
	require.Equal(t, []any{"unlucky"}, omitted[0].ContextMap()["groups"])

	delete(unreadable.failing, "unlucky")
	v = scrapeGroup(t, s, "unlucky")
	require.Equal(t, "STOP", v.status, "two real points, lagging and unmoved with no members: the window survived the failed scrape")
}

// TestRebalanceCountOfReturningGroupRestartsWithNewStartTime: a group is
// deleted, missing from enough scrapes to be forgotten, and created again.
// Its kafka.consumer_group.rebalances count starts over from 0, and so does
// the sum's start time: a cumulative sum that drops to 0 under its old start
// time reads, to a backend, as a counter that went backwards.
func TestRebalanceCountOfReturningGroupRestartsWithNewStartTime(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("work", 1)
	k.Produce("work", 0, time.Now())
	k.Commit("phoenix", "work", map[int32]int64{0: 1})
	s := startScraper(t, k.testConfig())

	rebalances := func() (healthPoint, pcommon.Timestamp) {
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		var found []healthPoint
		for _, p := range healthPointsOf(md, "kafka.consumer_group.rebalances") {
			if p.attrs["group"] == "phoenix" {
				found = append(found, p)
			}
		}
		require.LessOrEqual(t, len(found), 1)
		if len(found) == 0 {
			return healthPoint{}, 0
		}
		return found[0], pcommon.Timestamp(pointsOf(md, "kafka.consumer_group.offset")[pointKey{"phoenix", "work", 0}].timestamp.UnixNano())
	}
	first, firstAt := rebalances()
	require.NotZero(t, firstAt)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	deleted, err := k.Admin.DeleteGroup(ctx, "phoenix")
	require.NoError(t, err)
	require.NoError(t, deleted.Err)
	for range 2 { // missing from two scrapes: forgotten
		p, _ := rebalances()
		require.Empty(t, p.attrs, "a deleted group has no count")
	}

	k.Commit("phoenix", "work", map[int32]int64{0: 1})
	again, againAt := rebalances()
	require.Equal(t, int64(0), again.value)
	require.Greater(t, again.start, firstAt, "the count starts over after its last point (start %v)", first.start)
	require.LessOrEqual(t, again.start, againAt)
}

// TestScrapeAgainstBlackHoledBrokerEndsAtItsDeadline: with the default
// `timeout: 0` the controller gives a scrape no deadline, and each request
// waits 10 s for an answer. A broker that swallows ListOffsets then held
// the scrape for as long as its requests took, one after the other. Now
// the request is cut within the scrape's deadline (one collection_interval)
// and the broker is skipped for the rest of it: nothing more is asked, and
// what was read (the committed offsets) is reported with an error that says
// the deadline passed. Once the broker's skip is over it is asked again.
func TestScrapeAgainstBlackHoledBrokerEndsAtItsDeadline(t *testing.T) {
	requireNoLeakedGoroutines(t)
	k := newTestKafka(t, 1)
	k.CreateTopic("quiet", 1)
	k.Produce("quiet", 0, time.Now())
	k.Commit("waiting", "quiet", map[int32]int64{0: 1})
	hole := kafkacount.NewBlackHole(k.Cluster, int16(kmsg.ListOffsets))

	cfg := k.testConfig()
	cfg.Timeout = 0 // the default: each request waits defaultRequestTimeout
	cfg.CollectionInterval = time.Second
	require.Less(t, cfg.CollectionInterval, defaultRequestTimeout)
	s := startScraper(t, cfg)
	_, err := s.scrape(context.Background())
	require.NoError(t, err)

	hole.Set(true)
	md, err := s.scrape(context.Background())
	require.Error(t, err)
	require.True(t, scrapererror.IsPartialScrapeError(err))
	require.ErrorContains(t, err, context.DeadlineExceeded.Error(), "a deadline within the scrape's ended it, not a request's read timeout")
	require.Equal(t, int64(1), hole.Swallowed(), "nothing more was asked after the deadline")
	require.Contains(t, pointsOf(md, "kafka.consumer_group.offset"), pointKey{"waiting", "quiet", 0})

	hole.Set(false)
	require.Eventually(t, func() bool {
		md, err = s.scrape(context.Background())
		return err == nil
	}, faultDeadline, 50*time.Millisecond, "the cut connection is opened again")
	require.Equal(t, int64(0), pointsOf(md, "kafka.consumer_group.lag")[pointKey{"waiting", "quiet", 0}].intValue)
}

// TestShutdownWithBlackHoledBrokerSavesAndReturnsByDeadline: every broker
// stops answering while a scrape and a sample are waiting on it, with a
// request timeout of minutes, and the collector shuts the receiver down
// with a 5 s grace period, as Kubernetes does before its SIGKILL. Waiting
// for the scrape, then the sample, then saving the tables would take
// minutes here, and the SIGKILL would lose them: shutdown saves first,
// cuts the requests, returns within the grace period without error, and
// leaves no goroutine behind.
func TestShutdownWithBlackHoledBrokerSavesAndReturnsByDeadline(t *testing.T) {
	requireNoLeakedGoroutines(t)
	k := newTestKafka(t, 1)
	k.CreateTopic("orders", 2)
	k.Produce("orders", 0, time.Now())
	k.Produce("orders", 1, time.Now())
	k.Commit("group", "orders", map[int32]int64{0: 0, 1: 1})
	listGroups := kafkacount.NewBlackHole(k.Cluster, int16(kmsg.ListGroups))
	listOffsets := kafkacount.NewBlackHole(k.Cluster, int16(kmsg.ListOffsets))

	store := memorystorage.New()
	storageID := component.MustNewID("file_storage")
	cfg := k.testConfig()
	cfg.Timeout = 5 * time.Minute
	cfg.CollectionInterval = time.Second // the floor
	cfg.SamplingInterval = 100 * time.Millisecond
	cfg.Storage = &storageID
	cfg.StorageInterval = time.Hour // only the shutdown save
	require.NoError(t, cfg.Validate())
	sink := new(consumertest.MetricsSink)
	rcvr, err := NewFactory().CreateMetrics(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, rcvr.Start(context.Background(), memorystorage.Host{storageID: store}))
	require.Eventually(t, func() bool { return sink.DataPointCount() > 0 }, faultDeadline, 10*time.Millisecond, "a first scrape tracks the partitions")

	listGroups.Set(true)
	listOffsets.Set(true)
	// One request is swallowed; sarama holds the others to the broker
	// (the scrape's, the sampler's) until the connection is free.
	require.Eventually(t, func() bool {
		return listGroups.Swallowed()+listOffsets.Swallowed() > 0
	}, faultDeadline, 10*time.Millisecond)
	time.Sleep(3 * cfg.CollectionInterval) // a scrape and a sample are due and waiting

	const grace = 5 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- rcvr.Shutdown(ctx) }()
	select {
	case err := <-done:
		require.NoError(t, err, "everything stopped within the grace period")
	case <-time.After(grace + faultDeadline):
		t.Fatalf("Shutdown still running %s after its %s deadline", faultDeadline, grace)
	}

	saved := store.Value(statestore.TablesKey)
	require.NotEmpty(t, saved, "tables saved at shutdown")
	restored, err := timetable.NewStore(cfg.MaxSamples, time.Minute, nil).RestoreState(saved)
	require.NoError(t, err)
	require.Equal(t, 2, restored.Tables, "both partitions' tables")
}

// TestShutdownWithHungStorageReturnsByDeadline: a storage extension whose
// writes hang (an NFS mount gone away) and ignore their context holds
// neither Shutdown past its deadline nor the Kafka connections: Shutdown
// returns by the deadline with an error that says the state was not saved,
// and once the storage answers again nothing is left running.
func TestShutdownWithHungStorageReturnsByDeadline(t *testing.T) {
	requireNoLeakedGoroutines(t)
	k := newTestKafka(t, 1)
	k.CreateTopic("orders", 1)
	k.Produce("orders", 0, time.Now())
	k.Commit("group", "orders", map[int32]int64{0: 0})

	store := memorystorage.New()
	storageID := component.MustNewID("file_storage")
	cfg := k.testConfig()
	cfg.CollectionInterval = time.Second
	cfg.Storage = &storageID
	cfg.StorageInterval = time.Second // the floor: a periodic save hangs too
	require.NoError(t, cfg.Validate())
	sink := new(consumertest.MetricsSink)
	rcvr, err := NewFactory().CreateMetrics(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, rcvr.Start(context.Background(), memorystorage.Host{storageID: store}))
	require.Eventually(t, func() bool { return sink.DataPointCount() > 0 }, faultDeadline, 10*time.Millisecond)

	release := store.Hang()
	defer release() // before the leak check: the hung calls return then
	time.Sleep(2 * cfg.StorageInterval)

	const grace = time.Second
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- rcvr.Shutdown(ctx) }()
	select {
	case err := <-done:
		t.Logf("Shutdown: %v", err)
		require.ErrorContains(t, err, "saving the state to storage")
		require.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(grace + faultDeadline):
		release()
		<-done
		t.Fatalf("Shutdown still running %s after its %s deadline: it waited for the storage", faultDeadline, grace)
	}
	release()
	require.Eventually(t, func() bool { return store.Closed() == 1 }, faultDeadline, 10*time.Millisecond,
		"the client is closed once the storage answers")
}

// TestSilentBrokerDoesNotStallScrapeOrSampler: a broker that accepts
// ListOffsets and never answers costs a scrape one request deadline (from
// `timeout`), not the pipeline: the scrape returns a partial error with the
// committed offsets it did read, the sampler's cycle returns too, and both
// recover when the broker answers again. Nothing here measures speed: the
// test only needs the calls to return at all.
func TestSilentBrokerDoesNotStallScrapeOrSampler(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("quiet", 1)
	k.Produce("quiet", 0, time.Now(), time.Now())
	k.Commit("waiting", "quiet", map[int32]int64{0: 1})

	var silent atomic.Bool
	k.Cluster.ControlKey(int16(kmsg.ListOffsets), func(kmsg.Request) (kmsg.Response, error, bool) {
		k.Cluster.KeepControl()
		// Handled with neither response nor error: the broker keeps the
		// connection open and says nothing.
		return nil, nil, silent.Load()
	})

	cfg := k.testConfig()
	cfg.Timeout = time.Second
	s := startScraper(t, cfg)
	_, err := s.scrape(context.Background()) // connect and learn the leader first
	require.NoError(t, err)

	silent.Store(true)
	md, err := s.scrape(context.Background())
	require.Error(t, err)
	require.True(t, scrapererror.IsPartialScrapeError(err), "what was read is still reported: %v", err)
	require.Contains(t, pointsOf(md, "kafka.consumer_group.offset"), pointKey{"waiting", "quiet", 0})
	require.Empty(t, pointsOf(md, "kafka.consumer_group.lag"), "no end offset, no lag: nothing is invented")
	require.Error(t, s.sampler.Sample(context.Background(), false))

	silent.Store(false)
	require.Eventually(t, func() bool {
		md, err := s.scrape(context.Background())
		if err != nil {
			t.Log(err)
		}
		return err == nil && pointsOf(md, "kafka.consumer_group.lag")[pointKey{"waiting", "quiet", 0}].intValue == 1
	}, 30*time.Second, 100*time.Millisecond)
	require.NoError(t, s.sampler.Sample(context.Background(), false))
}

// TestConnIdleTimeoutReopensConnections: a connection that carried nothing
// for conn_idle_timeout is reopened before the next request, so a broker,
// load balancer or NAT that dropped it meanwhile costs nothing. Each new
// connection starts with an ApiVersions request.
func TestConnIdleTimeoutReopensConnections(t *testing.T) {
	k := newTestKafka(t, 2)
	secFixture(k)

	steady := startScraper(t, k.testConfig()) // conn_idle_timeout 9m
	requireBillingLag(t, steady)
	opened := k.Requests(int16(kmsg.ApiVersions))
	requireBillingLag(t, steady)
	require.Equal(t, opened, k.Requests(int16(kmsg.ApiVersions)), "busy connections are kept")

	const idle = time.Second // the floor
	cfg := k.testConfig()
	cfg.ConnIdleTimeout = idle
	s := startScraper(t, cfg)
	requireBillingLag(t, s)
	opened = k.Requests(int16(kmsg.ApiVersions))
	time.Sleep(2 * idle)
	requireBillingLag(t, s)
	require.Greater(t, k.Requests(int16(kmsg.ApiVersions)), opened, "idle connections are reopened")
}

// TestRackIDReadsFromPreferredReplica: with rack_id set, record reads carry
// the rack, and a leader that points them at a replica in that rack
// (KIP-392; kfake has no replica selector, so the test answers for the
// leader) has them read there.
func TestRackIDReadsFromPreferredReplica(t *testing.T) {
	k := newTestKafka(t, 2)
	secFixture(k)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topics, err := k.Admin.ListTopics(ctx, "orders")
	require.NoError(t, err)
	leader := topics["orders"].Partitions[0].Leader
	replica := 1 - leader
	k.Cluster.SetFollowers("orders", 0, []int32{replica})

	var (
		mu      sync.Mutex
		fetches = map[int32][]string{} // node -> racks of the Fetch requests it got
	)
	k.Cluster.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		k.Cluster.KeepControl()
		fetch := req.(*kmsg.FetchRequest)
		node := k.Cluster.CurrentNode()
		mu.Lock()
		fetches[node] = append(fetches[node], fetch.Rack)
		mu.Unlock()
		if node != leader || fetch.Rack != "rack-b" {
			return nil, nil, false
		}
		resp := fetch.ResponseKind().(*kmsg.FetchResponse)
		for _, rt := range fetch.Topics {
			topic := kmsg.NewFetchResponseTopic()
			topic.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				p := kmsg.NewFetchResponseTopicPartition()
				p.Partition = rp.Partition
				p.HighWatermark = 2
				p.PreferredReadReplica = replica
				p.RecordBatches = []byte{} // as Kafka sends it: empty, not null
				topic.Partitions = append(topic.Partitions, p)
			}
			resp.Topics = append(resp.Topics, topic)
		}
		return resp, nil, true
	})

	cfg := k.testConfig()
	cfg.RackID = "rack-b"
	require.NoError(t, cfg.Validate())
	requireBillingLag(t, startScraper(t, cfg))
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"rack-b"}, fetches[leader], "the leader is asked once, with the rack")
	require.Equal(t, []string{"rack-b"}, fetches[replica], "and the record is read from the replica it names")
}
