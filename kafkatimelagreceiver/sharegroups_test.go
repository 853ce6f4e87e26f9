//go:build !unit

package kafkatimelagreceiver

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadatatest"
)

// shareStep bounds each step of a share-group test against kfake; no
// assertion depends on how fast the steps are.
const shareStep = 30 * time.Second

func shareCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), shareStep)
	t.Cleanup(cancel)
	return ctx
}

// shareMember joins a share group reading topic, at most maxRecords
// records per poll.
func shareMember(t *testing.T, k *testKafka, group, topic string, maxRecords int32) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Addrs...), kgo.ConsumeTopics(topic), kgo.ShareGroup(group),
		kgo.ShareMaxRecords(maxRecords), kgo.ShareMaxRecordsStrict(), kgo.FetchMaxWait(100*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// sharePoll returns the records of one poll that has some.
func sharePoll(t *testing.T, cl *kgo.Client) []*kgo.Record {
	t.Helper()
	ctx := shareCtx(t)
	for {
		records := cl.PollFetches(ctx).Records()
		require.NoError(t, ctx.Err(), "no records within %s", shareStep)
		if len(records) > 0 {
			return records
		}
	}
}

// shareAck acknowledges the records as ack says and flushes.
func shareAck(t *testing.T, cl *kgo.Client, records []*kgo.Record, ack kgo.AckStatus) {
	t.Helper()
	for _, r := range records {
		r.Ack(ack)
	}
	require.NoError(t, cl.FlushAcks(shareCtx(t)))
}

// acceptPoll accepts what one poll of up to a second returns, if any.
func acceptPoll(t *testing.T, cl *kgo.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var records []*kgo.Record
	cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { records = append(records, r) })
	shareAck(t, cl, records, kgo.AckAccept)
}

// kadmShareOffsets is kadm's DescribeShareGroupOffsets of the group, by
// (group, topic, partition): the start offset and lag of each partition
// the group has state for.
func kadmShareOffsets(t *testing.T, k *testKafka, group string) (start, lag map[pointKey]int64) {
	t.Helper()
	described, err := k.Admin.DescribeShareGroupOffsets(shareCtx(t), group)
	require.NoError(t, err)
	require.NoError(t, described[group].Err)
	start, lag = map[pointKey]int64{}, map[pointKey]int64{}
	for _, o := range described[group].Offsets.Sorted() {
		require.NoError(t, o.Err)
		if o.StartOffset < 0 {
			continue
		}
		key := pointKey{group, o.Topic, int64(o.Partition)}
		start[key], lag[key] = o.StartOffset, o.Lag
	}
	return start, lag
}

// shareConfig is a test configuration with the share groups' start offsets
// on (off by default).
func (k *testKafka) shareConfig() *Config {
	cfg := k.testConfig()
	cfg.Metrics.KafkaShareGroupStartOffset.Enabled = true
	// The share tests' records are stamped in the past: their stamps date
	// them, as an operator who knows their producers says
	// (trusted_timestamp_topics).
	cfg.TrustedTimestampTopics = []string{"."}
	return cfg
}

// Three members share a topic: one holds its records (a slow handler), one
// releases what it gets, one accepts. At every step kafka.share_group.lag
// is kadm's lag and kafka.share_group.time_lag the age of the record at the
// start offset, by the test's own produce timestamps, within the accuracy
// of a consumer group's time lag read from a record (the records are older
// than any table): while the start offsets stall behind the held records,
// while the accepter advances them, and once everything is finished (0).
func TestShareGroupLagAndTimeLag(t *testing.T) {
	requireNoLeakedGoroutines(t)
	const (
		topic, group = "jobs", "workers"
		partitions   = 3
		perPartition = 20
	)
	k := newTestKafka(t, 1)
	k.CreateTopic(topic, partitions)
	k.Cluster.SetGroupConfigs(group, map[string]string{"share.auto.offset.reset": "earliest"})
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	stamps := map[int64][]time.Time{}
	for p := range int64(partitions) {
		for i := range perPartition {
			stamps[p] = append(stamps[p], base.Add(time.Duration(i)*time.Second+time.Duration(p)*time.Minute))
		}
		k.Produce(topic, int32(p), stamps[p]...)
	}
	s := startScraper(t, k.shareConfig())

	// check scrapes and compares every share-group point with kadm's read
	// and the produce timestamps; it returns the start offsets.
	check := func(step string) map[pointKey]int64 {
		t.Helper()
		md, err := s.scrape(context.Background())
		require.NoError(t, err, step)
		wantStart, wantLag := kadmShareOffsets(t, k, group)
		require.NotEmpty(t, wantLag, step)
		require.Equal(t, wantLag, intValues(pointsOf(md, "kafka.share_group.lag")), "%s: lag is kadm's on every partition", step)
		require.Equal(t, wantStart, intValues(pointsOf(md, "kafka.share_group.start_offset")), step)
		timeLags := pointsOf(md, "kafka.share_group.time_lag")
		require.Len(t, timeLags, len(wantStart), step)
		var worst float64
		var lagSum int64
		for key, start := range wantStart {
			tl := timeLags[key]
			truth := 0.0
			if start < perPartition {
				truth = tl.timestamp.Sub(stamps[key.partition][start]).Seconds()
			}
			t.Logf("%s: %s/%d start %d lag %d: time lag %.3f s, truth %.3f s", step, key.topic, key.partition, start, wantLag[key], tl.doubleValue, truth)
			require.InDelta(t, truth, tl.doubleValue, 0.002, "%s: %v", step, key)
			worst = max(worst, tl.doubleValue)
			lagSum += wantLag[key]
		}
		// Over every partition the group has state for: one without state
		// has had nothing delivered, and no lag of the group yet.
		agg := pointKey{group, topic, -1}
		require.Equal(t, lagSum, pointsOf(md, "kafka.share_group.lag_sum")[agg].intValue, step)
		require.Equal(t, worst, pointsOf(md, "kafka.share_group.time_lag_max")[agg].doubleValue, step)
		return wantStart
	}

	// Each member polls once it joined, so that no member acquires records
	// in the background while another is joining. The accepter first: the
	// start offsets advance past what it accepts.
	accepter := shareMember(t, k, group, topic, 7)
	shareAck(t, accepter, sharePoll(t, accepter), kgo.AckAccept)
	advanced := check("advanced")
	moved := false
	for _, start := range advanced {
		moved = moved || start > 0
	}
	require.True(t, moved, "accepted records are finished: %v", advanced)

	// A slow member holds the next records: the start offsets stall at the
	// oldest of them while the accepter works on, and a releaser's records
	// go back to be delivered again.
	slow := shareMember(t, k, group, topic, 4)
	held := sharePoll(t, slow) // never acknowledged while slow lives
	lowestHeld := map[pointKey]int64{}
	for _, r := range held {
		key := pointKey{group, r.Topic, int64(r.Partition)}
		if at, ok := lowestHeld[key]; !ok || r.Offset < at {
			lowestHeld[key] = r.Offset
		}
	}
	t.Logf("the slow member holds the records from %v", lowestHeld)
	releaser := shareMember(t, k, group, topic, 5)
	shareAck(t, releaser, sharePoll(t, releaser), kgo.AckRelease)
	stalled := check("stalled")
	members, err := s.scrape(context.Background())
	require.NoError(t, err)
	require.Equal(t, int64(3), pointsOf(members, "kafka.share_group.members")[pointKey{group, "", -1}].intValue)
	for range 3 {
		acceptPoll(t, accepter)
		for key, start := range check("stalled, the accepter working on") {
			if at, ok := lowestHeld[key]; ok {
				require.Equal(t, stalled[key], start, "%v: a held record holds the start offset", key)
				require.LessOrEqual(t, start, at, "%v: the start offset cannot pass a held record", key)
			}
		}
	}

	slow.Close()
	releaser.Close()
	ctx := shareCtx(t)
	for {
		starts := check("catching up")
		done := len(starts) == partitions
		for _, start := range starts {
			done = done && start == perPartition
		}
		if done {
			break
		}
		require.NoError(t, ctx.Err(), "never caught up: %v", starts)
		acceptPoll(t, accepter)
	}
}

// One scrape of a cluster with classic consumer groups, KIP-848 groups and
// share groups reports all of them, and a steady scrape costs one
// ListGroups per broker for all group types, and one ShareGroupDescribe
// and one DescribeShareGroupOffsets per coordinator of share groups.
func TestMixedClusterInOneScrape(t *testing.T) {
	requireNoLeakedGoroutines(t)
	const topic = "jobs"
	k := newTestKafka(t, 3)
	k.CreateTopic(topic, 2)
	old := time.Now().Add(-time.Hour)
	for p := range int32(2) {
		k.Produce(topic, p, old, old.Add(time.Second), old.Add(2*time.Second), old.Add(3*time.Second))
	}
	k.Commit("classic", topic, map[int32]int64{0: 1, 1: 2})
	next, err := kgo.NewClient(kgo.SeedBrokers(k.Addrs...), kgo.ConsumerGroup("next-gen"), kgo.ConsumeTopics(topic),
		kgo.ServerSideBalancer(), kgo.FetchMaxWait(100*time.Millisecond), kgo.DisableAutoCommit())
	require.NoError(t, err)
	t.Cleanup(next.Close)
	for seen := map[int32]bool{}; len(seen) < 2; {
		for _, r := range sharePoll(t, next) {
			seen[r.Partition] = true
		}
	}
	require.NoError(t, next.CommitUncommittedOffsets(shareCtx(t)))

	var shareGroups []string
	for i := range 6 {
		group := fmt.Sprintf("share-%d", i)
		shareGroups = append(shareGroups, group)
		k.Cluster.SetGroupConfigs(group, map[string]string{"share.auto.offset.reset": "earliest"})
		m := shareMember(t, k, group, topic, 3)
		shareAck(t, m, sharePoll(t, m), kgo.AckAccept)
		if i > 0 {
			m.Close() // share-0 keeps a member
		}
	}
	coordinators := map[int32]bool{}
	for _, r := range k.Admin.FindGroupCoordinators(shareCtx(t), shareGroups...) {
		require.NoError(t, r.Err)
		coordinators[r.NodeID] = true
	}

	s := startScraper(t, k.shareConfig())
	complete := func(md pmetric.Metrics) {
		t.Helper()
		lags := pointsOf(md, "kafka.consumer_group.lag")
		for _, g := range []string{"classic", "next-gen"} {
			for p := range int64(2) {
				require.Contains(t, lags, pointKey{g, topic, p})
			}
		}
		want := map[pointKey]int64{}
		for _, g := range shareGroups {
			_, lag := kadmShareOffsets(t, k, g)
			require.NotEmpty(t, lag, g)
			for key, v := range lag {
				want[key] = v
			}
		}
		require.Equal(t, want, intValues(pointsOf(md, "kafka.share_group.lag")))
		require.Len(t, pointsOf(md, "kafka.share_group.time_lag"), len(want))
		states := 0
		for _, p := range healthPointsOf(md, "kafka.share_group.state") {
			if p.value == 1 {
				states++
			}
		}
		require.Equal(t, len(shareGroups), states, "every share group has a state")
		require.Equal(t, int64(1), pointsOf(md, "kafka.share_group.members")[pointKey{"share-0", "", -1}].intValue)
	}
	before := k.Counts.Snapshot()
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	complete(md)
	t.Logf("first scrape: %s", k.Counts.Snapshot().Since(before))

	before = k.Counts.Snapshot()
	md, err = s.scrape(context.Background())
	counts := k.Counts.Snapshot().Since(before)
	require.NoError(t, err)
	complete(md)
	t.Logf("steady scrape: %s; share groups on %d coordinators", counts, len(coordinators))
	n := int64(len(coordinators))
	require.Equal(t, int64(3), counts.Of(kmsg.ListGroups), "one ListGroups per broker lists every group type: %s", counts)
	require.Equal(t, n, counts.Of(kmsg.DescribeShareGroupOffsets), "one DescribeShareGroupOffsets per coordinator: %s", counts)
	require.Equal(t, n, counts.Of(kmsg.ShareGroupDescribe), "one ShareGroupDescribe per coordinator: %s", counts)
	require.LessOrEqual(t, counts.Of(kmsg.OffsetFetch), int64(3), "one OffsetFetch per coordinator: %s", counts)
	require.Zero(t, counts.Of(kmsg.ApiVersions), "no connection opened, support not asked again: %s", counts)
}

// shareNotices are the log lines saying share groups are not monitored.
func shareNotices(t *testing.T, cfg *Config, k *testKafka, scrapes int) (int, map[string]int64) {
	t.Helper()
	s, logs := startObservedScraper(t, cfg, zap.NewAtomicLevelAt(zap.InfoLevel))
	var last map[string]int64
	for range scrapes {
		before := k.Counts.Snapshot()
		md, err := s.scrape(context.Background())
		require.NoError(t, err, "no error for share groups the cluster or configuration cannot read")
		counts := k.Counts.Snapshot().Since(before)
		require.Equal(t, int64(2), intValues(pointsOf(md, "kafka.consumer_group.lag"))[pointKey{"classic", "jobs", 0}], "consumer groups are read")
		require.Empty(t, pointsOf(md, "kafka.share_group.lag"))
		last = map[string]int64{}
		for _, key := range []kmsg.Key{kmsg.ListGroups, kmsg.ApiVersions, kmsg.ShareGroupDescribe, kmsg.DescribeShareGroupOffsets, kmsg.FindCoordinator} {
			last[key.Name()] = counts.Of(key)
		}
		t.Logf("%s", counts)
	}
	return logs.FilterMessageSnippet("share groups are not monitored").Len(), last
}

// A cluster without share groups (kfake speaking Kafka 3.9) costs nothing:
// the listing the consumer groups need names no share group, so nothing
// more is asked, and nothing is said. A protocol_version older than share
// groups on a cluster that has some is said once, costs no request, and
// fails no scrape.
func TestShareGroupsUnsupportedCostNothing(t *testing.T) {
	requireNoLeakedGoroutines(t)
	steady := map[string]int64{"ListGroups": 1, "ApiVersions": 0, "ShareGroupDescribe": 0, "DescribeShareGroupOffsets": 0, "FindCoordinator": 0}
	t.Run("kafka 3.9", func(t *testing.T) {
		k := newTestKafka(t, 1, kfake.MaxVersions(kversion.V3_9_0()))
		k.CreateTopic("jobs", 1)
		k.Produce("jobs", 0, time.Now().Add(-time.Minute), time.Now().Add(-time.Minute))
		k.Commit("classic", "jobs", map[int32]int64{0: 0})
		cfg := k.shareConfig()
		cfg.ProtocolVersion = "3.9.0"
		said, last := shareNotices(t, cfg, k, 3)
		require.LessOrEqual(t, said, 1)
		require.Equal(t, steady, last)
	})
	t.Run("protocol_version 4.0.0", func(t *testing.T) {
		k := newTestKafka(t, 1)
		k.CreateTopic("jobs", 1)
		k.Produce("jobs", 0, time.Now().Add(-time.Minute), time.Now().Add(-time.Minute))
		k.Commit("classic", "jobs", map[int32]int64{0: 0})
		k.Cluster.SetGroupConfigs("workers", map[string]string{"share.auto.offset.reset": "earliest"})
		m := shareMember(t, k, "workers", "jobs", 1)
		shareAck(t, m, sharePoll(t, m), kgo.AckAccept)
		m.Close()
		cfg := k.shareConfig()
		cfg.ProtocolVersion = "4.0.0"
		said, last := shareNotices(t, cfg, k, 3)
		require.Equal(t, 1, said, "said once")
		require.Equal(t, steady, last)
	})
}

// Coordinated replicas share the share groups as they share consumer
// groups: once they settle, every share group's lags come from exactly one
// replica, as do the gauges of every partition of a topic only share
// groups read, and every replica's share-group points are kadm's.
func TestReplicasShareShareGroups(t *testing.T) {
	requireNoLeakedGoroutines(t)
	const topic = "jobs"
	k := newTestKafka(t, 3, kfake.GroupMinSessionTimeout(100*time.Millisecond))
	k.CreateTopic(topic, 3)
	k.CreateTopic("orders", 1)
	old := time.Now().Add(-time.Hour)
	for p := range int32(3) {
		k.Produce(topic, p, old, old.Add(time.Second), old.Add(2*time.Second), old.Add(3*time.Second))
	}
	k.Produce("orders", 0, old, old.Add(time.Second))
	k.Commit("classic", "orders", map[int32]int64{0: 1})
	want := map[pointKey]int64{}
	var groups []string
	for i := range 8 {
		group := fmt.Sprintf("share-%02d", i)
		groups = append(groups, group)
		k.Cluster.SetGroupConfigs(group, map[string]string{"share.auto.offset.reset": "earliest"})
		m := shareMember(t, k, group, topic, 2)
		shareAck(t, m, sharePoll(t, m), kgo.AckAccept)
		m.Close()
		_, lag := kadmShareOffsets(t, k, group)
		for key, v := range lag {
			want[key] = v
		}
	}
	// The partitions some share group has state on: their gauges need a
	// replica too.
	withState := map[int64]bool{}
	for key := range want {
		withState[key.partition] = true
	}
	var replicas []*timeLagScraper
	for _, name := range []string{"a", "b", "c"} {
		cfg := k.shareConfig()
		cfg.ClientID = "replica-" + name
		cfg.CollectionInterval = replicaInterval
		cfg.Coordination.GroupID = coordGroup
		cfg.Coordination.TopicPartitions = 12
		cfg.Coordination.SessionTimeout = replicaSession
		cfg.Coordination.HeartbeatInterval = 100 * time.Millisecond
		replicas = append(replicas, startScraper(t, cfg))
	}
	exact := 0
	for n := 0; exact < 3; n++ {
		require.Less(t, n, 30, "share groups never reported exactly once for three rounds in a row")
		time.Sleep(replicaInterval)
		reportedBy := map[string][]int{}
		gaugedBy := map[int64][]int{}
		for i, s := range replicas {
			md, err := s.scrape(context.Background())
			require.NoError(t, err)
			lags := intValues(pointsOf(md, "kafka.share_group.lag"))
			mine := map[string]bool{}
			for key, v := range lags {
				require.Equal(t, want[key], v, "replica %d: %v", i, key)
				mine[key.group] = true
			}
			for g := range mine {
				reportedBy[g] = append(reportedBy[g], i)
			}
			for key := range pointsOf(md, "kafka.partition.current_offset") {
				if key.topic == topic {
					require.True(t, withState[key.partition], "replica %d gauges %v, where no share group has state", i, key)
					gaugedBy[key.partition] = append(gaugedBy[key.partition], i)
				}
			}
		}
		once := len(reportedBy) == len(groups) && len(gaugedBy) == len(withState)
		for _, by := range reportedBy {
			once = once && len(by) == 1
		}
		for _, by := range gaugedBy {
			once = once && len(by) == 1
		}
		t.Logf("round %d: share groups by replica %v, %s partitions gauged by %v", n, reportedBy, topic, gaugedBy)
		if once {
			exact++
		} else {
			exact = 0
		}
	}
}

// seedShareTopic makes group a share group on topic's three partitions,
// of ten records each stamped an hour ago.
func seedShareTopic(t *testing.T, k *testKafka, group, topic string) {
	t.Helper()
	k.CreateTopic(topic, 3)
	k.Cluster.SetGroupConfigs(group, map[string]string{"share.auto.offset.reset": "earliest"})
	old := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for p := range int32(3) {
		stamps := make([]time.Time, 10)
		for i := range stamps {
			stamps[i] = old.Add(time.Duration(p)*time.Minute + time.Duration(i)*time.Second)
		}
		k.Produce(topic, p, stamps...)
	}
	m := shareMember(t, k, group, topic, 1)
	acceptPoll(t, m)
	m.Close()
}

// answerShareOffsets has the cluster answer every DescribeShareGroupOffsets
// with group's state on topic (of the id topicID holds then): start offset
// 2+p and lag 8-p on partition p, and on partition failing (-1: none) an
// error.
func answerShareOffsets(k *testKafka, group, topic string, topicID *[16]byte, failing int32) {
	k.Cluster.ControlKey(kmsg.DescribeShareGroupOffsets.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		k.Cluster.KeepControl()
		resp := req.(*kmsg.DescribeShareGroupOffsetsRequest).ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
		g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		g.GroupID = group
		rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
		rt.Topic, rt.TopicID = topic, *topicID
		for p := range int32(3) {
			rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			rp.Partition, rp.StartOffset, rp.Lag = p, 2+int64(p), 8-int64(p)
			if p == failing {
				rp.StartOffset, rp.Lag, rp.ErrorCode = -1, -1, kerr.UnknownServerError.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		g.Topics = append(g.Topics, rt)
		resp.Groups = append(resp.Groups, g)
		return resp, nil, true
	})
}

// shareScrape scrapes once with the share-group metrics on, and returns
// the points, the scrape's error and the receiver's telemetry.
func shareScrape(t *testing.T, k *testKafka) (pmetric.Metrics, error, *componenttest.Telemetry) {
	t.Helper()
	s, tt := startTelemetryScraper(t, k.shareConfig())
	md, err := s.scrape(context.Background())
	return md, err, tt
}

// requireCommitUnreadWithheld checks that n (group, topic) aggregates were
// withheld for a group's state not read on a partition, and no other.
func requireCommitUnreadWithheld(t *testing.T, tt *componenttest.Telemetry, n int64) {
	t.Helper()
	metadatatest.AssertEqualKafkaTimeLagAggregatesWithheld(t, tt, []metricdata.DataPoint[int64]{
		{Attributes: attribute.NewSet(attribute.String("reason", "commit_unread")), Value: n},
		{Attributes: attribute.NewSet(attribute.String("reason", "end_offset_unread")), Value: 0},
		{Attributes: attribute.NewSet(attribute.String("reason", "time_lag_unknown")), Value: 0},
		{Attributes: attribute.NewSet(attribute.String("reason", "retention_margin_unknown")), Value: 0},
	}, metricdatatest.IgnoreTimestamp())
}

// A share group read whole but for one partition: the coordinator answers
// DescribeShareGroupOffsets with an error on jobs/2 only (whose oldest
// unfinished record is the oldest). The pairs read are reported; the
// (group, topic) lag sum and time lag maximum are withheld rather than
// folded over two partitions of three, and counted.
func TestSharePartitionErrorWithholdsItsTopicsAggregates(t *testing.T) {
	const group, topic = "workers", "jobs"
	k := newTestKafka(t, 1)
	seedShareTopic(t, k, group, topic)
	answerShareOffsets(k, group, topic, &[16]byte{}, 2)
	md, err, tt := shareScrape(t, k)
	require.Error(t, err, "the partition's error is reported")
	require.True(t, scrapererror.IsPartialScrapeError(err), "%v", err)

	require.Equal(t, map[pointKey]int64{{group, topic, 0}: 8, {group, topic, 1}: 7}, intValues(pointsOf(md, "kafka.share_group.lag")))
	require.Len(t, pointsOf(md, "kafka.share_group.time_lag"), 2)
	require.Empty(t, pointsOf(md, "kafka.share_group.lag_sum"), "not a sum over two partitions of three")
	require.Empty(t, pointsOf(md, "kafka.share_group.time_lag_max"), "not a maximum over two partitions of three")
	requireCommitUnreadWithheld(t, tt, 1)
}

// A coordinator still giving a share group's state of a topic deleted and
// created again under the same name (another topic id): that state says
// nothing of the topic's log. Its pairs and aggregates are left out and
// counted; the state of the topic's own id is read.
func TestShareStateOfAnotherTopicIDIsLeftOut(t *testing.T) {
	const group, topic = "workers", "jobs"
	k := newTestKafka(t, 1)
	seedShareTopic(t, k, group, topic)
	topics, err := k.Admin.ListTopics(shareCtx(t), topic)
	require.NoError(t, err)
	own := topics[topic].ID
	answered := [16]byte(own)
	answerShareOffsets(k, group, topic, &answered, -1)
	md, err, _ := shareScrape(t, k)
	require.NoError(t, err)
	require.Len(t, pointsOf(md, "kafka.share_group.lag"), 3, "the topic's own id")
	require.Equal(t, int64(21), pointsOf(md, "kafka.share_group.lag_sum")[pointKey{group, topic, -1}].intValue)

	answered[0] ^= 0xff
	md, err, tt := shareScrape(t, k)
	require.ErrorContains(t, err, "another topic id")
	require.True(t, scrapererror.IsPartialScrapeError(err), "%v", err)
	require.Empty(t, pointsOf(md, "kafka.share_group.lag"), "the state of another topic id")
	require.Empty(t, pointsOf(md, "kafka.share_group.start_offset"))
	require.Empty(t, pointsOf(md, "kafka.share_group.lag_sum"))
	requireCommitUnreadWithheld(t, tt, 1)
}
