package kafkatimelagreceiver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/goleak"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// Fault tests never wait on the clock for an outcome: they poll with
// generous deadlines, or count scrapes.
const faultDeadline = 60 * time.Second

// requireNoLeakedGoroutines checks, after the test and all its cleanups,
// that the goroutines the test started are gone. Call it first, so that its
// cleanup runs last.
func requireNoLeakedGoroutines(t *testing.T) {
	t.Helper()
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		goleak.VerifyNone(t, before, goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick"))
	})
}

// faultConfig is a receiver configuration with timeouts small enough that a
// dead broker costs seconds, not the default ten.
func faultConfig(k *testKafka) *Config {
	cfg := k.testConfig()
	cfg.Timeout = 2 * time.Second
	return cfg
}

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

// tableHeads is the oldest point of every table: a reset or dropped table
// changes it.
func tableHeads(s *timeLagScraper) map[kafka.TopicPartition]timetable.Sample {
	out := map[kafka.TopicPartition]timetable.Sample{}
	tps := s.tables.Partitions()
	for i, ref := range s.tables.Refs(tps) {
		if head, ok := s.tables.Oldest(ref); ok {
			out[tps[i]] = head
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
	require.Eventually(t, func() bool {
		n++
		got, _, err := lagCount(s)
		return err == nil && got == want
	}, faultDeadline, 50*time.Millisecond)
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
	points := f.s.tables.Points()
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
		start := time.Now()
		md, err := f.s.scrape(context.Background())
		require.Error(t, err, "scrape %d", scrape)
		require.False(t, scrapererror.IsPartialScrapeError(err), "nothing was read: %v", err)
		require.Zero(t, md.DataPointCount())
		require.Less(t, time.Since(start), 30*time.Second, "a down cluster must not hold a scrape")
		require.Error(t, f.s.sampler.Sample(context.Background(), true))
	}
	requireTablesKept(t, f.s, heads)
	require.Equal(t, points, f.s.tables.Points(), "nothing was learned, nothing was lost")

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
	require.Greater(t, f.s.tables.Points(), points, "the tables grow again")
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

func (h *hookedCluster) CommittedOffsets(ctx context.Context, groups []string) (map[string]map[kafka.TopicPartition]int64, error) {
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
	require.Equal(t, []kafka.TopicPartition{{Topic: "keep", Partition: 0}, {Topic: "keep", Partition: 1}}, s.tables.Partitions())
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
	require.Len(t, s.tables.Partitions(), total)
	require.NoError(t, s.sampler.Sample(context.Background(), true))
	require.Equal(t, 2*total, s.tables.Points(), "a point per partition from the scrape and one from the sample")
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
