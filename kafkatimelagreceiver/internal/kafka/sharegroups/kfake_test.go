//go:build !unit

package sharegroups_test

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/sharegroups"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kafkacount"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// opTimeout bounds every step of a test against kfake; no assertion
// depends on how fast the steps are.
const opTimeout = 30 * time.Second

// receiverDefaultVersion is the receiver's default protocol_version: the
// newest the cluster's client (sarama) speaks.
const receiverDefaultVersion = "4.3.1"

func settingsFor(addrs []string) clientsettings.Settings {
	return clientsettings.Settings{
		Brokers:         addrs,
		ClientID:        "kafkatimelag-test",
		ProtocolVersion: receiverDefaultVersion,
		RequestTimeout:  10 * time.Second,
		DialTimeout:     5 * time.Second,
		ConnIdleTimeout: 9 * time.Minute,
		Metadata:        clientsettings.Metadata{RefreshInterval: 10 * time.Minute, RetryMax: 3, RetryBackoff: 50 * time.Millisecond},
	}
}

func newClient(t *testing.T, s clientsettings.Settings) *sharegroups.Client {
	t.Helper()
	c, err := sharegroups.New(s)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	t.Cleanup(cancel)
	return ctx
}

// member joins a share group reading topic, at most maxRecords records per
// poll. extra are client options such as SASL.
func member(t *testing.T, addrs []string, group, topic string, maxRecords int32, extra ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(addrs...),
		kgo.ConsumeTopics(topic),
		kgo.ShareGroup(group),
		kgo.ShareMaxRecords(maxRecords),
		kgo.ShareMaxRecordsStrict(),
		kgo.FetchMaxWait(100 * time.Millisecond),
	}, extra...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// poll returns the records of one poll that has some.
func poll(t *testing.T, cl *kgo.Client) []*kgo.Record {
	t.Helper()
	ctx := ctxFor(t)
	for {
		fetches := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "no records within %s", opTimeout)
		fetches.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
		if records := fetches.Records(); len(records) > 0 {
			return records
		}
	}
}

// acceptSome acknowledges what one poll of up to a second returns, if any.
func acceptSome(t *testing.T, cl *kgo.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { r.Ack(kgo.AckAccept) })
	require.NoError(t, cl.FlushAcks(ctxFor(t)))
}

// produce appends n records to each partition, their timestamps a second
// apart from base.
func produce(k *kfaketest.Kafka, topic string, partitions int32, n int, base time.Time) {
	for p := range partitions {
		ts := make([]time.Time, n)
		for i := range ts {
			ts[i] = base.Add(time.Duration(i) * time.Second)
		}
		k.Produce(topic, p, ts...)
	}
}

// requireMatchesKadm checks that the adapter reads, for every partition,
// the start offset and lag kadm's DescribeShareGroupOffsets reads, and
// returns them.
func requireMatchesKadm(t *testing.T, k *kfaketest.Kafka, c *sharegroups.Client, group string) []kafka.ShareOffset {
	t.Helper()
	got, err := c.ShareGroupOffsets(ctxFor(t), []string{group})
	require.NoError(t, err)
	want, err := k.Admin.DescribeShareGroupOffsets(ctxFor(t), group)
	require.NoError(t, err)
	require.NoError(t, want[group].Err)
	var wantOffsets []kafka.ShareOffset
	for _, o := range want[group].Offsets.Sorted() {
		require.NoError(t, o.Err)
		wantOffsets = append(wantOffsets, kafka.ShareOffset{
			TopicPartition: kafka.TopicPartition{Topic: o.Topic, Partition: o.Partition},
			StartOffset:    o.StartOffset, LeaderEpoch: o.LeaderEpoch, Lag: o.Lag, TopicID: topicID(t, k, o.Topic),
		})
	}
	require.Equal(t, wantOffsets, got[group].Partitions)
	require.False(t, got[group].Sent.After(got[group].Received))
	return got[group].Partitions
}

// Three members share a topic: one acknowledges what it gets, one releases
// what it gets, one holds its records (a slow handler). The start offsets
// stall behind the held and released records; once the slow member is gone
// and the others finish, they reach the end. At every step the adapter reads
// what kadm reads.
func TestShareGroupOffsetsMatchKadm(t *testing.T) {
	const (
		topic      = "jobs"
		group      = "workers"
		partitions = 3
		perPart    = 20
	)
	k := kfaketest.New(t, 1, nil, kfake.SeedTopics(partitions, topic))
	k.Cluster.SetGroupConfigs(group, map[string]string{"share.auto.offset.reset": "earliest"})
	produce(k, topic, partitions, perPart, time.Now().Add(-time.Hour))
	c := newClient(t, settingsFor(k.Addrs))

	// Each member polls once it joined, so that no member acquires records
	// in the background while another is joining.
	slow := member(t, k.Addrs, group, topic, 4)
	held := poll(t, slow) // never acknowledged while slow lives
	releaser := member(t, k.Addrs, group, topic, 5)
	released := poll(t, releaser)
	for _, r := range released {
		r.Ack(kgo.AckRelease)
	}
	require.NoError(t, releaser.FlushAcks(ctxFor(t)))
	accepter := member(t, k.Addrs, group, topic, 7)
	accepted := poll(t, accepter)
	for _, r := range accepted {
		r.Ack(kgo.AckAccept)
	}
	require.NoError(t, accepter.FlushAcks(ctxFor(t)))
	t.Logf("held %s, released %s, accepted %s", where(held), where(released), where(accepted))

	// Stalled: the slow member's records are still acquired.
	stalled := requireMatchesKadm(t, k, c, group)
	require.NotEmpty(t, stalled)
	lowestHeld := map[int32]int64{}
	for _, r := range held {
		if at, ok := lowestHeld[r.Partition]; !ok || r.Offset < at {
			lowestHeld[r.Partition] = r.Offset
		}
	}
	var unfinished int64
	for _, o := range stalled {
		unfinished += o.Lag
		if at, ok := lowestHeld[o.Partition]; ok {
			require.LessOrEqual(t, o.StartOffset, at, "the start offset cannot pass a record still held: %+v", o)
		}
	}
	require.Positive(t, unfinished)

	described, err := c.DescribeShareGroups(ctxFor(t), []string{group})
	require.NoError(t, err)
	t.Logf("members: %+v", described[group].Members)

	// The accepter works on: on its partition the start offset advances,
	// or, where the slow member's records stall it, the unfinished records
	// behind it fall.
	ctx := ctxFor(t)
	for progressed := false; !progressed; {
		require.NoError(t, ctx.Err(), "no progress from %+v", stalled)
		acceptSome(t, accepter)
		for i, o := range requireMatchesKadm(t, k, c, group) {
			require.GreaterOrEqual(t, o.StartOffset, stalled[i].StartOffset)
			progressed = progressed || o.StartOffset > stalled[i].StartOffset || o.Lag < stalled[i].Lag
		}
	}

	// The slow member leaves, its records are released, and the accepter
	// finishes everything: every start offset is the end offset.
	slow.Close()
	releaser.Close()
	ctx = ctxFor(t)
	for {
		offsets := requireMatchesKadm(t, k, c, group)
		var left int64
		for _, o := range offsets {
			left += o.Lag
		}
		if left == 0 && len(offsets) == partitions {
			for _, o := range offsets {
				require.Equal(t, int64(perPart), o.StartOffset, "caught up: the start offset is the end offset")
			}
			break
		}
		require.NoError(t, ctx.Err(), "never caught up: %+v", offsets)
		acceptSome(t, accepter)
	}

	described, err = c.DescribeShareGroups(ctxFor(t), []string{group})
	require.NoError(t, err)
	require.Equal(t, kafka.GroupStateStable, described[group].State)
	require.Len(t, described[group].Members, 1, "the accepter is left")
	require.Len(t, described[group].Members[0].Assignment, partitions)
}

// One scrape's calls on a cluster holding share groups, classic and
// KIP-848 consumer groups: the listing finds the share groups only, and each
// call is one request per broker (listing, after one Metadata request that
// tells franz-go the brokers) or per coordinator.
func TestShareGroupReadsAreBatched(t *testing.T) {
	const topic = "jobs"
	wire := kafkacount.NewWire()
	k := kfaketest.New(t, 3, nil, kfake.SeedTopics(2, topic), kfake.ListenFn(wire.Listen))
	produce(k, topic, 2, 5, time.Now().Add(-time.Minute))
	k.Commit("classic-consumers", topic, map[int32]int64{0: 1, 1: 2})
	next := member848(t, k.Addrs, "next-gen-consumers", topic)

	var groups []string
	for i := range 8 {
		group := fmt.Sprintf("share-%d", i)
		groups = append(groups, group)
		k.Cluster.SetGroupConfigs(group, map[string]string{"share.auto.offset.reset": "earliest"})
		m := member(t, k.Addrs, group, topic, 3)
		for _, r := range poll(t, m) {
			r.Ack(kgo.AckAccept)
		}
		require.NoError(t, m.FlushAcks(ctxFor(t)))
		m.Close()
	}
	next.Close()
	coordinators := map[int32]bool{}
	for _, r := range k.Admin.FindGroupCoordinators(ctxFor(t), groups...) {
		require.NoError(t, r.Err)
		coordinators[r.NodeID] = true
	}
	t.Logf("%d share groups on %d coordinators", len(groups), len(coordinators))

	observed := &observer{}
	s := settingsFor(k.Addrs)
	s.Observer = observed
	c := newClient(t, s)
	scrape := func() ([]string, map[string]kafka.ShareGroupDescription, map[string]kafka.ShareGroupOffsets) {
		listed, err := c.ShareGroups(ctxFor(t))
		require.NoError(t, err)
		described, err := c.DescribeShareGroups(ctxFor(t), listed)
		require.NoError(t, err)
		offsets, err := c.ShareGroupOffsets(ctxFor(t), listed)
		require.NoError(t, err)
		return listed, described, offsets
	}
	first := k.Counts.Snapshot()
	scrape() // connects, finds the coordinators
	t.Logf("first scrape: %s", k.Counts.Snapshot().Since(first))

	before := k.Counts.Snapshot()
	listed, described, offsets := scrape()
	counts := k.Counts.Snapshot().Since(before)
	require.Equal(t, groups, listed, "share groups only")
	for _, g := range groups {
		require.Equal(t, kafka.GroupStateEmpty, described[g].State, g)
		require.NotEmpty(t, offsets[g].Partitions, g)
	}
	n := int64(len(coordinators))
	require.Equal(t, int64(1), counts.Of(kmsg.Metadata), "the listing asks which brokers there are first: %s", counts)
	require.Equal(t, int64(3), counts.Of(kmsg.ListGroups), "one ListGroups per broker: %s", counts)
	require.Equal(t, n, counts.Of(kmsg.ShareGroupDescribe), "one ShareGroupDescribe per coordinator: %s", counts)
	require.Equal(t, n, counts.Of(kmsg.DescribeShareGroupOffsets), "one DescribeShareGroupOffsets per coordinator: %s", counts)
	require.Equal(t, 1+3+2*n, counts.Total(), "nothing else: %s", counts)
	require.Equal(t, map[string]int{"ApiVersions": 1, "ListGroups": 6, "ShareGroupDescribe": 2 * int(n), "DescribeShareGroupOffsets": 2 * int(n)},
		observed.snapshot(), "the request observer is told of the requests the calls send, over both scrapes")
	sent := map[string]int{}
	for key, n := range wire.Bytes(s.ClientID) {
		if n > 0 {
			sent[kmsg.NameForKey(int16(key))] = int(n)
		}
	}
	told := observed.responseBytes()
	require.Equal(t, sent, told, "the response bytes it is told of are what the brokers sent it")
	for _, api := range []string{"Metadata", "ListGroups", "ShareGroupDescribe", "DescribeShareGroupOffsets"} {
		require.Positive(t, told[api], api)
	}
}

// member848 is a KIP-848 consumer of topic that has joined its group.
func member848(t *testing.T, addrs []string, group, topic string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ServerSideBalancer(), kgo.FetchMaxWait(100*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	poll(t, cl)
	return cl
}

// where says which offsets of which partitions the records are.
func where(records []*kgo.Record) string {
	var b []string
	for _, r := range records {
		b = append(b, fmt.Sprintf("%d@%d", r.Partition, r.Offset))
	}
	return fmt.Sprint(b)
}

// observer counts the requests it is told of, and the response bytes, by
// API.
type observer struct {
	mu     sync.Mutex
	counts map[string]int
	bytes  map[string]int
}

func (o *observer) ResponseBytes(api string, n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.bytes == nil {
		o.bytes = map[string]int{}
	}
	o.bytes[api] += n
}

func (o *observer) responseBytes() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.bytes)
}

func (o *observer) Request(_ context.Context, api string, _ error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.counts == nil {
		o.counts = map[string]int{}
	}
	o.counts[api]++
}

func (o *observer) snapshot() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.counts)
}

// topicID is the id the cluster gives topic.
func topicID(t *testing.T, k *kfaketest.Kafka, topic string) kafka.TopicID {
	t.Helper()
	topics, err := k.Admin.ListTopics(ctxFor(t), topic)
	require.NoError(t, err)
	require.NoError(t, topics[topic].Err)
	return kafka.TopicID(topics[topic].ID)
}
