//go:build !unit

package kafkatimelagreceiver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/emit"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// groupConsumer is a franz-go group member that polls in the background
// until it is closed.
type groupConsumer struct {
	client *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// joinGroup starts a member of group consuming topic. It is closed at the
// end of the test if the test does not close it first.
func (k *testKafka) joinGroup(group, topic, clientID string, opts ...kgo.Opt) *groupConsumer {
	k.TB.Helper()
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(k.Addrs...),
		kgo.ClientID(clientID),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// Eager: one join makes one rebalance, where cooperative-sticky
		// makes two whenever it moves partitions.
		kgo.Balancers(kgo.RangeBalancer()),
		// Members learn of a rebalance from their heartbeat: make them
		// learn fast.
		kgo.HeartbeatInterval(100 * time.Millisecond),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	require.NoError(k.TB, err)
	ctx, cancel := context.WithCancel(context.Background())
	c := &groupConsumer{client: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for ctx.Err() == nil {
			if fs := cl.PollFetches(ctx); fs.IsClientClosed() {
				return
			}
		}
	}()
	k.TB.Cleanup(c.close)
	return c
}

// close leaves the group (a static member does not: it only goes away) and
// releases the client.
func (c *groupConsumer) close() {
	c.once.Do(func() {
		c.cancel()
		<-c.done
		c.client.Close()
	})
}

// groupView is what one scrape said about one group.
type groupView struct {
	described  bool
	state      string
	members    int64
	protocol   string
	rebalances int64
	hasCount   bool
	status     string
	// partitionStatus is keyed by partition.
	partitionStatus map[int64]string
	// assigned is keyed by member (client id) then instance.
	assigned map[string]map[string]int64
}

// settled scrapes until the group is Stable with n members.
func settled(t *testing.T, s *timeLagScraper, group string, n int64) groupView {
	t.Helper()
	var v groupView
	require.Eventually(t, func() bool {
		v = scrapeGroup(t, s, group)
		return v.state == "Stable" && v.members == n
	}, 60*time.Second, 50*time.Millisecond, "group %s never settled with %d members; last seen %+v", group, n, v)
	return v
}

// TestRebalancesOnJoinAndLeave: a member joining and a member leaving are
// one rebalance each, however many scrapes see them in progress.
func TestRebalancesOnJoinAndLeave(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("work", 4)
	s := startScraper(t, k.healthConfig(3))

	const group = "rebalancing"
	k.joinGroup(group, "work", "member-a")
	before := settled(t, s, group, 1)
	require.True(t, before.hasCount)
	require.Equal(t, "range", before.protocol)
	require.Equal(t, map[string]map[string]int64{"member-a": {"": 4}}, before.assigned)

	b := k.joinGroup(group, "work", "member-b")
	joined := settled(t, s, group, 2)
	require.Equal(t, map[string]map[string]int64{"member-a": {"": 2}, "member-b": {"": 2}}, joined.assigned)
	for range 3 {
		require.Equal(t, before.rebalances+1, scrapeGroup(t, s, group).rebalances, "the join is one rebalance")
	}

	b.close()
	settled(t, s, group, 1)
	for range 3 {
		require.Equal(t, before.rebalances+2, scrapeGroup(t, s, group).rebalances, "the leave is one more")
	}
}

// TestStaticMemberRestartIsNotARebalance: a static member that restarts
// within its session timeout takes its place back without a rebalance, and
// is reported with its group.instance.id.
func TestStaticMemberRestartIsNotARebalance(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("work", 4)
	s := startScraper(t, k.healthConfig(3))

	const group = "static"
	k.joinGroup(group, "work", "dynamic")
	settled(t, s, group, 1)
	static := kgo.InstanceID("static-1")
	first := k.joinGroup(group, "work", "static", static, kgo.SessionTimeout(30*time.Second))
	settled(t, s, group, 2)
	first.close()
	// The closed static member stays in the group until its session ends.
	before := settled(t, s, group, 2)
	require.Equal(t, map[string]int64{"static-1": 2}, before.assigned["static"])
	oldID := staticMemberID(t, k, group, "static-1")

	k.joinGroup(group, "work", "static", static, kgo.SessionTimeout(30*time.Second))
	require.Eventually(t, func() bool {
		id := staticMemberID(t, k, group, "static-1")
		return id != "" && id != oldID
	}, 60*time.Second, 50*time.Millisecond, "the restarted static member never replaced the old one")
	for range 3 {
		v := scrapeGroup(t, s, group)
		require.Equal(t, "Stable", v.state)
		require.Equal(t, int64(2), v.members)
		require.Equal(t, before.rebalances, v.rebalances, "a static member's restart is not a rebalance")
		require.Equal(t, map[string]int64{"static-1": 2}, v.assigned["static"])
	}
}

// staticMemberID is the member id the coordinator gives the static member,
// as a client of the test sees it.
func staticMemberID(t *testing.T, k *testKafka, group, instance string) string {
	t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, k.Client)
	require.NoError(t, err)
	for _, g := range resp.Groups {
		for _, m := range g.Members {
			if m.InstanceID != nil && *m.InstanceID == instance {
				return m.MemberID
			}
		}
	}
	return ""
}

// TestStatusStopWhenMembersLeaveWhileLagging: the group's consumers are gone
// and it has records left: STOP once the window has seen it long enough.
func TestStatusStopWhenMembersLeaveWhileLagging(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("work", 1)
	now := time.Now()
	k.Produce("work", 0, now, now, now)
	const group = "stopped"
	c := k.joinGroup(group, "work", "consumer", kgo.AutoCommitInterval(100*time.Millisecond))

	const window = 3
	s := startScraper(t, k.healthConfig(window))
	require.Eventually(t, func() bool {
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		lag, ok := pointsOf(md, "kafka.consumer_group.lag")[pointKey{group, "work", 0}]
		return ok && lag.intValue == 0
	}, 60*time.Second, 50*time.Millisecond, "the consumer never caught up")
	c.close()
	k.Produce("work", 0, now, now)

	require.Eventually(t, func() bool {
		return scrapeGroup(t, s, group).state == "Empty"
	}, 60*time.Second, 50*time.Millisecond)
	var v groupView
	for range window {
		v = scrapeGroup(t, s, group)
	}
	require.Equal(t, "STOP", v.status)
	require.Equal(t, map[int64]string{0: "STOP"}, v.partitionStatus)
	require.Equal(t, int64(0), v.members)
}

// TestStatusStallWhenLiveMemberStopsCommitting: the member is alive but its
// committed offset does not move while records wait: STALL.
func TestStatusStallWhenLiveMemberStopsCommitting(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("work", 1)
	now := time.Now()
	k.Produce("work", 0, now, now, now, now, now)
	const group = "stalled"
	k.Commit(group, "work", map[int32]int64{0: 1})
	// It consumes, but never commits.
	k.joinGroup(group, "work", "consumer", kgo.DisableAutoCommit())

	const window = 3
	s := startScraper(t, k.healthConfig(window))
	settled(t, s, group, 1)
	var v groupView
	for range window {
		v = scrapeGroup(t, s, group)
	}
	require.Equal(t, "STALL", v.status)
	require.Equal(t, map[int64]string{0: "STALL"}, v.partitionStatus)
}

// TestStatusRewindWarnOK drives groups by their commits, as an admin tool or
// a consumer would: one is reset backwards (REWIND), one advances slower than
// the topic grows (WARN), one keeps up (OK); a fourth catches up but is over
// status.max_time_lag (WARN).
func TestStatusRewindWarnOK(t *testing.T) {
	k := newTestKafka(t, 1)
	for _, topic := range []string{"rewound", "behind", "healthy", "old"} {
		k.CreateTopic(topic, 1)
	}
	now := time.Now()
	stamps := func(n int, at time.Time) []time.Time {
		out := make([]time.Time, n)
		for i := range out {
			out[i] = at
		}
		return out
	}
	k.Produce("rewound", 0, stamps(10, now)...)
	// Appended before the receiver starts, so their own timestamps date them.
	k.Produce("old", 0, stamps(10, now.Add(-time.Hour))...)

	const window = 3
	cfg := k.healthConfig(window)
	// The records were stamped in the past: their stamps date them, as an
	// operator who knows their producers says (trusted_timestamp_topics).
	cfg.TrustedTimestampTopics = []string{"."}
	cfg.Status.MaxTimeLag = 10 * time.Minute
	s := startScraper(t, cfg)

	behindCommitted, end := int64(0), int64(0)
	for i := range window + 2 {
		if i < 2 {
			k.Commit("rewinder", "rewound", map[int32]int64{0: 8})
		} else {
			k.Commit("rewinder", "rewound", map[int32]int64{0: 2})
		}
		end = k.Produce("behind", 0, stamps(3, now)...) + 3
		behindCommitted++
		k.Commit("lagger", "behind", map[int32]int64{0: behindCommitted})
		k.Commit("keeper", "behind", map[int32]int64{0: end})
		// Catching up, so Burrow's rules see nothing wrong, but an hour
		// behind.
		k.Commit("slowpoke", "old", map[int32]int64{0: int64(i + 1)})

		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		rewinder, lagger, keeper, slowpoke := viewGroup(t, md, "rewinder"), viewGroup(t, md, "lagger"), viewGroup(t, md, "keeper"), viewGroup(t, md, "slowpoke")
		require.Equal(t, "OK", keeper.status, "scrape %d", i)
		require.Equal(t, "WARN", slowpoke.status, "scrape %d: over max_time_lag from the first scrape", i)
		switch {
		case i < 2:
			require.Equal(t, "OK", rewinder.status, "scrape %d", i)
		default: // the reset stays in the window for window-1 scrapes
			if i < 2+window-1 {
				require.Equal(t, "REWIND", rewinder.status, "scrape %d", i)
			}
		}
		if i < window-1 {
			require.Equal(t, "OK", lagger.status, "scrape %d: the window is not complete yet", i)
		} else {
			require.Equal(t, "WARN", lagger.status, "scrape %d", i)
			require.Equal(t, map[int64]string{0: "WARN"}, lagger.partitionStatus)
		}
		require.Equal(t, "Empty", keeper.state)
		require.Equal(t, int64(0), keeper.members)
	}
}

// TestDescribeGroupsPerCoordinator: one DescribeGroups per coordinator per
// scrape, however many groups.
func TestDescribeGroupsPerCoordinator(t *testing.T) {
	k := newTestKafka(t, 3)
	k.CreateTopic("shared", 1)
	const groups = 60
	for i := range groups {
		k.Commit(fmt.Sprintf("group-%02d", i), "shared", map[int32]int64{0: 0})
	}
	s := startScraper(t, k.testConfig())
	before := k.Requests(int16(kmsg.DescribeGroups))
	beforeNextGen := k.Requests(int16(kmsg.ConsumerGroupDescribe))
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	described := k.Requests(int16(kmsg.DescribeGroups)) - before
	t.Logf("3 brokers, %d groups: %d DescribeGroups requests in one scrape", groups, described)
	require.LessOrEqual(t, described, int64(3))
	require.Equal(t, beforeNextGen, k.Requests(int16(kmsg.ConsumerGroupDescribe)), "no group looks like a KIP-848 one")
	for i := range groups {
		v := viewGroup(t, md, fmt.Sprintf("group-%02d", i))
		require.Equal(t, "Empty", v.state)
		require.True(t, v.described)
	}

	// With every group-health metric off, nothing is described.
	cfg := k.testConfig()
	cfg.Metrics.KafkaConsumerGroupMembers.Enabled = false
	cfg.Metrics.KafkaConsumerGroupState.Enabled = false
	cfg.Metrics.KafkaConsumerGroupRebalances.Enabled = false
	cfg.Metrics.KafkaConsumerGroupStatus.Enabled = false
	off := startScraper(t, cfg)
	before = k.Requests(int16(kmsg.DescribeGroups))
	_, err = off.scrape(context.Background())
	require.NoError(t, err)
	require.Equal(t, before, k.Requests(int16(kmsg.DescribeGroups)))
}

// TestNextGenGroup: a KIP-848 group is invisible to DescribeGroups; at the
// default protocol_version it is described with ConsumerGroupDescribe, its
// state and members reported and its rebalances counted from its epoch, and
// with a protocol_version below 3.7.0 its state is Unknown rather than a
// Dead group with no members.
func TestNextGenGroup(t *testing.T) {
	// Members learn of their new assignment from their heartbeat.
	k := newTestKafka(t, 1, kfake.BrokerConfigs(map[string]string{"group.consumer.heartbeat.interval.ms": "200"}))
	k.CreateTopic("work", 4)
	const group = "next-gen"
	serverSide := kgo.ServerSideBalancer()

	s := startScraper(t, k.healthConfig(3)) // the default protocol_version
	oldCfg := k.healthConfig(3)
	oldCfg.ProtocolVersion = "3.0.0"
	old := startScraper(t, oldCfg)

	k.joinGroup(group, "work", "member-a", serverSide)
	before := settled(t, s, group, 1)
	require.Equal(t, "consumer", before.protocol)
	require.Equal(t, map[string]map[string]int64{"member-a": {"": 4}}, before.assigned)

	v := scrapeGroup(t, old, group)
	require.Equal(t, "Unknown", v.state)
	require.False(t, v.described, "no members point: the members are unknown")

	k.joinGroup(group, "work", "member-b", serverSide)
	var after groupView
	require.Eventually(t, func() bool {
		after = scrapeGroup(t, s, group)
		return after.state == "Stable" && after.members == 2 &&
			after.assigned["member-a"][""] == 2 && after.assigned["member-b"][""] == 2
	}, 60*time.Second, 50*time.Millisecond, "the second member never got its share; last seen %+v", after)
	require.Equal(t, before.rebalances+1, after.rebalances, "one join bumps the epoch once")

	sent := k.Requests(int16(kmsg.ConsumerGroupDescribe))
	scrapeGroup(t, s, group)
	require.Equal(t, sent+1, k.Requests(int16(kmsg.ConsumerGroupDescribe)), "one ConsumerGroupDescribe for the one coordinator")
}

// TestRebalancesStartAtReceiverStart: the counter is cumulative from the
// receiver's start.
func TestRebalancesStartAtReceiverStart(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("work", 1)
	k.Commit("g", "work", map[int32]int64{0: 0})
	s := startScraper(t, k.testConfig())
	md1, err := s.scrape(context.Background())
	require.NoError(t, err)
	md2, err := s.scrape(context.Background())
	require.NoError(t, err)
	p1, p2 := healthPointsOf(md1, "kafka.consumer_group.rebalances"), healthPointsOf(md2, "kafka.consumer_group.rebalances")
	require.Len(t, p1, 1)
	require.Len(t, p2, 1)
	require.NotZero(t, p1[0].start)
	require.Equal(t, p1[0].start, p2[0].start)
	m := md1.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	for i := 0; i < m.Len(); i++ {
		if m.At(i).Name() == "kafka.consumer_group.rebalances" {
			sum := m.At(i).Sum()
			require.True(t, sum.IsMonotonic())
			require.Equal(t, pmetric.AggregationTemporalityCumulative, sum.AggregationTemporality())
			return
		}
	}
	require.NoError(t, errors.New("no rebalances metric"))
}

// TestStatusOKForLiveConsumerKeepingUp: a live member that consumes and
// commits what is produced stays OK scrape after scrape.
func TestStatusOKForLiveConsumerKeepingUp(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("work", 2)
	const group = "healthy"
	k.joinGroup(group, "work", "consumer", kgo.AutoCommitInterval(100*time.Millisecond))

	const window = 3
	s := startScraper(t, k.healthConfig(window))
	settled(t, s, group, 1)
	for round := range window + 2 {
		now := time.Now()
		end0 := k.Produce("work", 0, now, now, now) + 3
		end1 := k.Produce("work", 1, now) + 1
		// Wait for the commit with the test's own client, so that the
		// receiver's window only holds scrapes of a caught-up group.
		require.Eventually(t, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			offsets, err := k.Admin.FetchOffsets(ctx, group)
			if err != nil {
				return false
			}
			o0, ok0 := offsets.Lookup("work", 0)
			o1, ok1 := offsets.Lookup("work", 1)
			return ok0 && ok1 && o0.At == end0 && o1.At == end1
		}, 60*time.Second, 50*time.Millisecond, "round %d: the consumer never committed what it read", round)
		v := scrapeGroup(t, s, group)
		require.Equal(t, "OK", v.status, "round %d", round)
		require.Equal(t, map[int64]string{0: "OK", 1: "OK"}, v.partitionStatus, "round %d", round)
		require.Equal(t, "Stable", v.state)
		require.Equal(t, int64(1), v.members)
	}
}

// TestOlderBrokerAnsweredAtTheDefaultVersion: a cluster that advertises only
// Kafka 2.8's request versions (no batched OffsetFetch, no
// ConsumerGroupDescribe) is read in full at the default protocol_version,
// the newest the client knows: every request is negotiated down to what the
// broker speaks, and what only newer brokers have is not asked for.
func TestOlderBrokerAnsweredAtTheDefaultVersion(t *testing.T) {
	k := newTestKafka(t, 1, kfake.MaxVersions(kversion.V2_8_0()))
	// LogAppendTime: the record's stamp, its append time, dates it from
	// the first scrape.
	k.CreateAppendTimeTopic("orders", 2)
	now := time.Now()
	k.Produce("orders", 0, now.Add(-time.Minute), now.Add(-30*time.Second), now)
	k.Produce("orders", 1, now)
	k.Commit("billing", "orders", map[int32]int64{0: 1, 1: 1})
	k.Commit("audit", "orders", map[int32]int64{0: 0})
	k.joinGroup("live", "orders", "member-a")

	cfg := k.healthConfig(3)
	require.Equal(t, "4.3.1", cfg.ProtocolVersion, "the default")
	s := startScraper(t, cfg)
	v := settled(t, s, "live", 1)
	require.Equal(t, map[string]map[string]int64{"member-a": {"": 2}}, v.assigned)

	offsetFetches := k.Requests(int16(kmsg.OffsetFetch))
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	lags := pointsOf(md, "kafka.consumer_group.lag")
	require.Equal(t, int64(2), lags[pointKey{"billing", "orders", 0}].intValue)
	require.Equal(t, int64(0), lags[pointKey{"billing", "orders", 1}].intValue)
	require.Equal(t, int64(3), lags[pointKey{"audit", "orders", 0}].intValue)
	timeLag, ok := pointsOf(md, "kafka.consumer_group.time_lag")[pointKey{"audit", "orders", 0}]
	require.True(t, ok, "the record at the committed offset was read")
	require.InDelta(t, time.Since(now).Seconds(), timeLag.doubleValue, 2)
	require.Equal(t, "Empty", viewGroup(t, md, "billing").state)
	require.Equal(t, "Stable", viewGroup(t, md, "live").state)
	// Without OffsetFetch v8 every group is asked on its own.
	require.Equal(t, int64(3), k.Requests(int16(kmsg.OffsetFetch))-offsetFetches)
	require.Zero(t, k.Requests(int16(kmsg.ConsumerGroupDescribe)), "the broker has no such API")
}

// owner is one kafka.consumer_group.partition_owner point's attributes.
type owner struct {
	group, topic           string
	partition              int64
	member, host, instance string
}

func ownersOf(t *testing.T, md pmetric.Metrics) map[owner]bool {
	t.Helper()
	out := map[owner]bool{}
	emit.EachMetric(md, func(m pmetric.Metric) {
		if m.Name() != "kafka.consumer_group.partition_owner" {
			return
		}
		dps := m.Gauge().DataPoints()
		for i := range dps.Len() {
			dp := dps.At(i)
			require.Equal(t, int64(1), dp.IntValue())
			a := dp.Attributes()
			get := func(k string) string { v, _ := a.Get(k); return v.Str() }
			p, _ := a.Get("partition")
			o := owner{get("group"), get("topic"), p.Int(), get("member"), get("host"), get("group_instance_id")}
			require.False(t, out[o], "one point per owner: %+v", o)
			out[o] = true
		}
	})
	return out
}

// coordinatorOwners is what the coordinator says each member of the groups
// holds: DescribeGroups for the classic group, ConsumerGroupDescribe for the
// KIP-848 one.
func (k *testKafka) coordinatorOwners(t *testing.T, classic, nextGen string) map[owner]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := map[owner]bool{}
	groups, err := k.Admin.DescribeGroups(ctx, classic)
	require.NoError(t, err)
	for _, m := range groups[classic].Members {
		c, ok := m.Assigned.AsConsumer()
		if !ok {
			continue
		}
		for _, tp := range c.Topics {
			for _, p := range tp.Partitions {
				out[owner{classic, tp.Topic, int64(p), m.ClientID, strings.TrimPrefix(m.ClientHost, "/"), deref(m.InstanceID)}] = true
			}
		}
	}
	// The raw response, since the broker may name a topic by id only.
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{nextGen}
	resp, err := req.RequestWith(ctx, k.Client)
	require.NoError(t, err)
	for _, g := range resp.Groups {
		for _, m := range g.Members {
			for _, tp := range m.Assignment.TopicPartitions {
				topic := tp.Topic
				if topic == "" {
					topic = k.topicName(t, tp.TopicID)
				}
				for _, p := range tp.Partitions {
					out[owner{nextGen, topic, int64(p), m.ClientID, strings.TrimPrefix(m.ClientHost, "/"), deref(m.InstanceID)}] = true
				}
			}
		}
	}
	return out
}

// topicName is the name of the topic with the id.
func (k *testKafka) topicName(t *testing.T, id [16]byte) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	topics, err := k.Admin.ListTopics(ctx)
	require.NoError(t, err)
	for name, d := range topics {
		if d.ID == id {
			return name
		}
	}
	t.Fatalf("no topic with id %x", id)
	return ""
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestPartitionOwnersMatchTheCoordinator: through a rebalance (a second
// member joining), the partition_owner points of a classic and of a KIP-848
// group are what their coordinator says each member holds, one point per
// assigned partition, topics by name.
func TestPartitionOwnersMatchTheCoordinator(t *testing.T) {
	k := newTestKafka(t, 1, kfake.BrokerConfigs(map[string]string{"group.consumer.heartbeat.interval.ms": "200"}))
	k.CreateTopic("work", 4)
	const classic, nextGen = "classic", "next-gen"
	cfg := k.healthConfig(3)
	cfg.Metrics.KafkaConsumerGroupPartitionOwner.Enabled = true
	s := startScraper(t, cfg)

	matches := func(members int) {
		t.Helper()
		var got, want map[owner]bool
		require.Eventually(t, func() bool {
			md, err := s.scrape(context.Background())
			if err != nil {
				t.Logf("scrape: %v", err)
				return false
			}
			got = ownersOf(t, md)
			want = k.coordinatorOwners(t, classic, nextGen)
			perMember := map[string]int{}
			for o := range got {
				perMember[o.group+"/"+o.member]++
			}
			balanced := len(perMember) == 2*members
			for _, n := range perMember {
				balanced = balanced && n == 4/members
			}
			return balanced && len(got) == 8 && equalOwners(got, want)
		}, 60*time.Second, 100*time.Millisecond, "owners %v, coordinator %v", got, want)
		for o := range got {
			require.Equal(t, "work", o.topic, "topics by name")
			require.NotEmpty(t, o.host)
		}
	}
	k.joinGroup(classic, "work", "member-a")
	k.joinGroup(nextGen, "work", "member-a", kgo.ServerSideBalancer())
	matches(1)
	k.joinGroup(classic, "work", "member-b")
	k.joinGroup(nextGen, "work", "member-b", kgo.ServerSideBalancer())
	matches(2)
}

func equalOwners(a, b map[owner]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for o := range a {
		if !b[o] {
			return false
		}
	}
	return true
}
