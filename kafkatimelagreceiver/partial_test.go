//go:build !unit

package kafkatimelagreceiver

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadatatest"
)

// lossyCluster fails a random share of what each call reads, as brokers and
// coordinators in trouble do: groups' committed offsets, partitions' end
// offsets and groups' descriptions go missing from the answer, with an
// error that says so. It keeps what the cluster really answered in the
// scrape's calls: the truth every aggregate sent is checked against.
type lossyCluster struct {
	kafka.Cluster
	mu   sync.Mutex
	rand *rand.Rand
	// failShare is the share of items each call drops.
	failShare float64

	committed map[string]kafka.Commits       // as read, before the drops
	end       map[kafka.TopicPartition]int64 // as read, before the drops
	dropped   struct{ groups, ends, describes int }
	keptEnd   map[kafka.TopicPartition]bool // the end offsets handed on
	keptGroup map[string]bool               // the commits handed on
}

var errLost = errors.New("lost by the test")

func (c *lossyCluster) fail() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rand.Float64() < c.failShare
}

func (c *lossyCluster) CommittedOffsets(ctx context.Context, groups []string) (map[string]kafka.Commits, error) {
	out, err := c.Cluster.CommittedOffsets(ctx, groups)
	c.committed = map[string]kafka.Commits{}
	c.keptGroup = map[string]bool{}
	var errs []error
	for g, commits := range out {
		c.committed[g] = append(kafka.Commits(nil), commits...)
		if c.fail() {
			delete(out, g)
			c.dropped.groups++
			errs = append(errs, &kafka.GroupError{Group: g, Err: errLost})
			continue
		}
		c.keptGroup[g] = true
	}
	return out, errors.Join(append(errs, err)...)
}

func (c *lossyCluster) EndOffsets(ctx context.Context, partitions []kafka.TopicPartition) (kafka.OffsetRead, error) {
	read, err := c.Cluster.EndOffsets(ctx, partitions)
	c.end = map[kafka.TopicPartition]int64{}
	c.keptEnd = map[kafka.TopicPartition]bool{}
	var errs []error
	for tp, offset := range read.Offsets {
		c.end[tp] = offset
		if c.fail() {
			delete(read.Offsets, tp)
			c.dropped.ends++
			errs = append(errs, &kafka.TopicError{Topic: tp.Topic, Operation: kafka.OperationDescribe, Err: errLost})
			continue
		}
		c.keptEnd[tp] = true
	}
	return read, errors.Join(append(errs, err)...)
}

func (c *lossyCluster) DescribeGroups(ctx context.Context, groups []string) (map[string]kafka.GroupDescription, error) {
	out, err := c.Cluster.DescribeGroups(ctx, groups)
	var errs []error
	for g := range out {
		if c.fail() {
			delete(out, g)
			c.dropped.describes++
			errs = append(errs, &kafka.GroupError{Group: g, Err: errLost})
		}
	}
	return out, errors.Join(append(errs, err)...)
}

type groupTopic struct{ group, topic string }

// truth is, per (group, topic) of the commits the cluster really answered,
// its lag sum and maximum over every partition, and whether every one of
// its partitions reached the receiver (its group's commits and each end
// offset).
type truthOf struct {
	lagSum, lagMax map[groupTopic]int64
	whole          map[groupTopic]bool
	groupWhole     map[string]bool
	pairs          map[pointKey]bool // the pairs whose lag must be sent
}

func (c *lossyCluster) truth() truthOf {
	t := truthOf{lagSum: map[groupTopic]int64{}, lagMax: map[groupTopic]int64{}, whole: map[groupTopic]bool{}, groupWhole: map[string]bool{}, pairs: map[pointKey]bool{}}
	for g, commits := range c.committed {
		t.groupWhole[g] = c.keptGroup[g] && len(commits) > 0
		for _, cm := range commits {
			key := groupTopic{g, cm.Topic}
			if _, seen := t.whole[key]; !seen {
				t.whole[key] = c.keptGroup[g]
			}
			end := c.end[cm.TopicPartition]
			l := max(0, end-cm.Offset)
			t.lagSum[key] += l
			t.lagMax[key] = max(t.lagMax[key], l)
			if !c.keptEnd[cm.TopicPartition] {
				t.whole[key] = false
				t.groupWhole[g] = false
			} else if c.keptGroup[g] {
				t.pairs[pointKey{g, cm.Topic, int64(cm.Partition)}] = true
			}
		}
	}
	return t
}

// TestAggregatesUnderRandomPartialReads: over many scrapes that each lose a
// random share of the committed offsets, end offsets and group
// descriptions, every per-(group, topic) aggregate sent is the aggregate
// over every partition its group committed on in the topic, as the cluster
// really answered; every one whose partitions were all read is sent; every
// pair whose offsets were read is sent; and a group's status is sent only
// when every one of its partitions was read.
func TestAggregatesUnderRandomPartialReads(t *testing.T) {
	requireNoLeakedGoroutines(t)
	k := newTestKafka(t, 3)
	topics := map[string]int32{"orders": 6, "payments": 3, "audit": 2}
	for topic, n := range topics {
		k.CreateTopic(topic, n)
	}
	rng := rand.New(rand.NewPCG(32, 1))
	stamp := time.Now().Add(-time.Hour)
	produce := func() {
		for topic, n := range topics {
			for p := range n {
				times := make([]time.Time, 1+rng.IntN(4))
				for i := range times {
					stamp = stamp.Add(time.Second)
					times[i] = stamp
				}
				k.Produce(topic, p, times...)
			}
		}
	}
	groups := []string{"billing", "shipping", "fraud", "ledger"}
	commit := func() {
		for _, g := range groups {
			for topic, n := range topics {
				if rng.IntN(3) == 0 {
					continue
				}
				offsets := map[int32]int64{}
				for p := range n {
					if rng.IntN(4) > 0 {
						offsets[p] = int64(rng.IntN(3))
					}
				}
				if len(offsets) > 0 {
					k.Commit(g, topic, offsets)
				}
			}
		}
	}
	produce()
	commit()

	cfg := k.healthConfig(3)
	lossy := &lossyCluster{rand: rand.New(rand.NewPCG(7, 7)), failShare: 0.15}
	s := startScraperWith(t, cfg, zap.NewNop(), func(c kafka.Cluster) kafka.Cluster {
		lossy.Cluster = c
		return lossy
	})

	ctx := context.Background()
	var withheld, sent int
	for scrape := range 40 {
		if scrape%5 == 4 {
			produce()
			commit()
		}
		md, _ := s.scrape(ctx)
		truth := lossy.truth()

		lagSums := intValues(pointsOf(md, "kafka.consumer_group.lag_sum"))
		lagMaxes := intValues(pointsOf(md, "kafka.consumer_group.lag_max"))
		timeLagMaxes := pointsOf(md, "kafka.consumer_group.time_lag_max")
		timeLags := pointsOf(md, "kafka.consumer_group.time_lag")
		margins := pointsOf(md, "kafka.consumer_group.retention_margin")
		stuck := pointsOf(md, "kafka.consumer_group.stuck_time")
		lags := intValues(pointsOf(md, "kafka.consumer_group.lag"))
		for key, whole := range truth.whole {
			pk := pointKey{key.group, key.topic, -1}
			sum, hasSum := lagSums[pk]
			if !whole {
				withheld++
				require.False(t, hasSum, "scrape %d: lag_sum of %v sent over part of its partitions", scrape, key)
				require.NotContains(t, lagMaxes, pk, "scrape %d: lag_max of %v", scrape, key)
				require.NotContains(t, timeLagMaxes, pk, "scrape %d: time_lag_max of %v", scrape, key)
				require.NotContains(t, margins, pk, "scrape %d: retention_margin of %v", scrape, key)
				require.NotContains(t, stuck, pk, "scrape %d: stuck_time of %v", scrape, key)
				continue
			}
			sent++
			require.True(t, hasSum, "scrape %d: lag_sum of %v, every partition read, is missing", scrape, key)
			require.Equal(t, truth.lagSum[key], sum, "scrape %d: lag_sum of %v", scrape, key)
			require.Equal(t, truth.lagMax[key], lagMaxes[pk], "scrape %d: lag_max of %v", scrape, key)
			if tlm, ok := timeLagMaxes[pk]; ok {
				// The maximum is over every partition's time lag: each
				// one is sent, and none is above it.
				worst := 0.0
				for p := range topics[key.topic] {
					if !truth.pairs[pointKey{key.group, key.topic, int64(p)}] {
						continue
					}
					tl, ok := timeLags[pointKey{key.group, key.topic, int64(p)}]
					require.True(t, ok, "scrape %d: time_lag_max of %v sent without %d's time lag", scrape, key, p)
					worst = max(worst, tl.doubleValue)
				}
				require.Equal(t, worst, tlm.doubleValue, "scrape %d: time_lag_max of %v", scrape, key)
			}
		}
		for pair := range truth.pairs {
			require.Contains(t, lags, pair, "scrape %d: the lag of a pair read is missing", scrape)
		}
		for _, p := range healthPointsOf(md, "kafka.consumer_group.status") {
			require.True(t, truth.groupWhole[p.attrs["group"]], "scrape %d: status of %s sent from a partial read", scrape, p.attrs["group"])
		}
	}
	t.Logf("dropped %d groups' commits, %d end offsets, %d descriptions; %d aggregates withheld, %d sent and checked",
		lossy.dropped.groups, lossy.dropped.ends, lossy.dropped.describes, withheld, sent)
	require.Positive(t, withheld, "the faults reached some aggregate")
	require.Positive(t, sent)
}

// TestLeaderRefusingListOffsetsSendsNoPartialAggregate: one broker answers
// every ListOffsets partition with NOT_LEADER_OR_FOLLOWER while its
// Metadata still names it leader, as during a leader election. No
// aggregate of a topic with a partition on it is sent, so none understates
// (here the lag sum of 11 would read 1 and the time lag of an hour 0); the
// pairs on the other brokers, and the aggregates of a topic wholly on them,
// are still sent; and all is back within two scrapes of the broker
// answering again.
func TestLeaderRefusingListOffsetsSendsNoPartialAggregate(t *testing.T) {
	requireNoLeakedGoroutines(t)
	k := newTestKafka(t, 3)
	k.CreateTopic("pe", 2)
	k.CreateTopic("elsewhere", 2)
	require.NoError(t, k.Cluster.MoveTopicPartition("pe", 0, 1))
	require.NoError(t, k.Cluster.MoveTopicPartition("pe", 1, 0))
	require.NoError(t, k.Cluster.MoveTopicPartition("elsewhere", 0, 1))
	require.NoError(t, k.Cluster.MoveTopicPartition("elsewhere", 1, 2))
	hourAgo := time.Now().Add(-time.Hour)
	stamps := func(from time.Time, n int) []time.Time {
		out := make([]time.Time, n)
		for i := range out {
			out[i] = from.Add(time.Duration(i) * time.Second)
		}
		return out
	}
	k.Produce("pe", 0, stamps(time.Now().Add(-time.Second), 2)...)
	k.Produce("pe", 1, stamps(hourAgo, 10)...)
	k.Produce("elsewhere", 0, stamps(hourAgo, 3)...)
	k.Produce("elsewhere", 1, stamps(hourAgo, 3)...)
	k.Commit("g", "pe", map[int32]int64{0: 1, 1: 0})
	k.Commit("g", "elsewhere", map[int32]int64{0: 1, 1: 3})

	cfg := k.healthConfig(3)
	// The records were stamped in the past: their stamps date them, as an
	// operator who knows their producers says (trusted_timestamp_topics).
	cfg.TrustedTimestampTopics = []string{"."}
	s := startScraper(t, cfg)
	ctx := context.Background()
	whole := func(md pmetric.Metrics) {
		t.Helper()
		lagSum := intValues(pointsOf(md, "kafka.consumer_group.lag_sum"))
		require.Equal(t, map[pointKey]int64{{"g", "pe", -1}: 11, {"g", "elsewhere", -1}: 2}, lagSum)
		require.Equal(t, int64(10), intValues(pointsOf(md, "kafka.consumer_group.lag_max"))[pointKey{"g", "pe", -1}])
		require.Greater(t, pointsOf(md, "kafka.consumer_group.time_lag_max")[pointKey{"g", "pe", -1}].doubleValue, 3500.0)
	}
	md, err := s.scrape(ctx)
	require.NoError(t, err)
	whole(md)

	refusal := k.Cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.ListOffsets}, Nodes: []int32{0}, Err: kerr.NotLeaderForPartition, Count: -1})
	for scrape := range 4 {
		md, err = s.scrape(ctx)
		require.Error(t, err, "scrape %d: pe/1's end offset is not read", scrape)
		for _, name := range []string{"kafka.consumer_group.lag_sum", "kafka.consumer_group.lag_max", "kafka.consumer_group.time_lag_max",
			"kafka.consumer_group.retention_margin", "kafka.consumer_group.stuck_time", "kafka.consumer_group.time_to_drain"} {
			require.NotContains(t, pointsOf(md, name), pointKey{"g", "pe", -1}, "scrape %d: %s over pe/0 alone", scrape, name)
		}
		require.Equal(t, int64(2), intValues(pointsOf(md, "kafka.consumer_group.lag_sum"))[pointKey{"g", "elsewhere", -1}],
			"scrape %d: a topic wholly on the other brokers", scrape)
		lags := intValues(pointsOf(md, "kafka.consumer_group.lag"))
		require.Equal(t, map[pointKey]int64{{"g", "pe", 0}: 1, {"g", "elsewhere", 0}: 2, {"g", "elsewhere", 1}: 0}, lags,
			"scrape %d: every pair on the other brokers", scrape)
		for _, p := range healthPointsOf(md, "kafka.consumer_group.status") {
			require.NotEqual(t, "g", p.attrs["group"], "scrape %d: a status judged on part of the partitions", scrape)
		}
	}
	refusal.Remove()
	for scrape := 1; ; scrape++ {
		md, err = s.scrape(ctx)
		if err == nil {
			whole(md)
			break
		}
		require.Less(t, scrape, 2, "still partial two scrapes after: %v", err)
	}
}

// A group's committed offsets read but for one partition: the coordinator
// answers OffsetFetch with an error on orders/2 alone. The pairs read are
// reported; the pair not read has no offset, and the group's (group,
// topic) lag sum, maximum and time lag maximum are withheld rather than
// folded over two partitions of three, and counted.
func TestCommitPartitionErrorWithholdsItsTopicsAggregates(t *testing.T) {
	const group, topic = "billing", "orders"
	k := newTestKafka(t, 1)
	k.CreateTopic(topic, 3)
	old := time.Now().Add(-time.Hour)
	for p := range int32(3) {
		k.Produce(topic, p, old, old, old, old, old)
	}
	k.Commit(group, topic, map[int32]int64{0: 1, 1: 2, 2: 0})
	k.Cluster.ControlKey(kmsg.OffsetFetch.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		k.Cluster.KeepControl()
		r := req.(*kmsg.OffsetFetchRequest)
		resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
		partitions := func() []kmsg.OffsetFetchResponseGroupTopicPartition {
			var out []kmsg.OffsetFetchResponseGroupTopicPartition
			for p, offset := range []int64{1, 2, -1} {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch = int32(p), offset, -1
				if p == 2 {
					rp.ErrorCode = kerr.UnknownServerError.Code
				}
				out = append(out, rp)
			}
			return out
		}
		if r.Version >= 8 {
			for _, g := range r.Groups {
				rg := kmsg.NewOffsetFetchResponseGroup()
				rg.Group = g.Group
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic, rt.Partitions = topic, partitions()
				rg.Topics = append(rg.Topics, rt)
				resp.Groups = append(resp.Groups, rg)
			}
			return resp, nil, true
		}
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = topic
		for _, p := range partitions() {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.ErrorCode
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
		return resp, nil, true
	})

	cfg := k.testConfig()
	// The records were stamped in the past: their stamps date them, as an
	// operator who knows their producers says (trusted_timestamp_topics).
	cfg.TrustedTimestampTopics = []string{"."}
	s, tt := startTelemetryScraper(t, cfg)
	md, err := s.scrape(context.Background())
	require.Error(t, err, "the partition's error is reported")
	require.True(t, scrapererror.IsPartialScrapeError(err), "%v", err)

	require.Equal(t, map[pointKey]int64{{group, topic, 0}: 1, {group, topic, 1}: 2}, intValues(pointsOf(md, "kafka.consumer_group.offset")))
	require.Equal(t, map[pointKey]int64{{group, topic, 0}: 4, {group, topic, 1}: 3}, intValues(pointsOf(md, "kafka.consumer_group.lag")))
	require.Len(t, pointsOf(md, "kafka.consumer_group.time_lag"), 2)
	for _, name := range []string{"kafka.consumer_group.lag_sum", "kafka.consumer_group.lag_max", "kafka.consumer_group.time_lag_max"} {
		require.Empty(t, pointsOf(md, name), "%s: not over two partitions of three", name)
	}
	// The (group, topic) aggregates, and the group's status.
	metadatatest.AssertEqualKafkaTimeLagAggregatesWithheld(t, tt, []metricdata.DataPoint[int64]{
		{Attributes: attribute.NewSet(attribute.String("reason", "commit_unread")), Value: 2},
		{Attributes: attribute.NewSet(attribute.String("reason", "end_offset_unread")), Value: 0},
		{Attributes: attribute.NewSet(attribute.String("reason", "time_lag_unknown")), Value: 0},
		// The (group, topic) retention margin, over the partition not read.
		{Attributes: attribute.NewSet(attribute.String("reason", "retention_margin_unknown")), Value: 1},
	}, metricdatatest.IgnoreTimestamp())
}
