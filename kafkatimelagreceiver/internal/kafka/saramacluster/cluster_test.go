//go:build !unit

package saramacluster

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramaconn"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/saramatest"
)

// requestLog is a kafka.RequestObserver that keeps what it was told.
type requestLog struct {
	mu     sync.Mutex
	sent   map[string]int
	failed map[string]int
	bytes  map[string]int
}

func newRequestLog() *requestLog {
	return &requestLog{sent: map[string]int{}, failed: map[string]int{}, bytes: map[string]int{}}
}

func (l *requestLog) ResponseBytes(api string, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bytes[api] += n
}

// responseBytes returns the response bytes it was told of, by API.
func (l *requestLog) responseBytes() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.bytes)
}

func (l *requestLog) Request(_ context.Context, api string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sent[api]++
	if err != nil {
		l.failed[api]++
	}
}

func (l *requestLog) snapshot() (sent, failed map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sent, failed = map[string]int{}, map[string]int{}
	for k, v := range l.sent {
		sent[k] = v
	}
	for k, v := range l.failed {
		failed[k] = v
	}
	return sent, failed
}

// consume runs a group member until stop is called.
func consume(t *testing.T, addrs []string, group, topic string, opts ...kgo.Opt) (stop func()) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(addrs...),
		kgo.ClientID(group + "-member"),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(),
		kgo.HeartbeatInterval(100 * time.Millisecond),
	}, opts...)...)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if cl.PollFetches(ctx).IsClientClosed() {
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
		cl.Close()
	}
}

// TestClusterAgainstKfake reads everything the receiver reads from an
// in-process cluster of three brokers, checks that offsets are read with one
// request per leader, and that Close leaves no goroutine behind.
func TestClusterAgainstKfake(t *testing.T) {
	const (
		brokers    = 3
		partitions = 6
		topic      = "orders"
	)
	kc, err := kfake.NewCluster(kfake.NumBrokers(brokers),
		// KIP-848 members learn of their assignment from their heartbeat.
		kfake.BrokerConfigs(map[string]string{"group.consumer.heartbeat.interval.ms": "200"}))
	require.NoError(t, err)
	defer kc.Close() // at the end, when the test failed before closing it
	addrs := kc.ListenAddrs()
	producer, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer producer.Close()
	admin := kadm.NewClient(producer)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	created, err := admin.CreateTopic(ctx, partitions, 1, nil, topic)
	require.NoError(t, err)
	require.NoError(t, created.Err)
	for p := range int32(partitions) {
		// Every broker leads some partitions.
		require.NoError(t, kc.MoveTopicPartition(topic, p, p%brokers))
	}
	base := time.UnixMilli(1_700_000_000_000)
	stamp := func(p int32, i int) time.Time { return base.Add(time.Duration(int(p)*10+i) * time.Second) }
	var records []*kgo.Record
	for p := range int32(partitions) {
		for i := range 3 {
			records = append(records, &kgo.Record{Topic: topic, Partition: p, Timestamp: stamp(p, i), Value: []byte("x")})
		}
	}
	produced := producer.ProduceSync(ctx, records...)
	require.NoError(t, produced.FirstErr())
	// An idempotent producer (franz-go's default): its records carry its
	// ID, whose clock stamped them.
	producerID := produced[0].Record.ProducerID
	require.GreaterOrEqual(t, producerID, int64(0))
	commit := func(group string, offsets map[int32]int64) {
		os := kadm.Offsets{}
		for p, at := range offsets {
			os.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1})
		}
		resp, err := admin.CommitOffsets(ctx, group, os)
		require.NoError(t, err)
		require.NoError(t, resp.Error())
	}
	commit("idle-a", map[int32]int64{0: 1, 1: 1, 2: 1, 3: 1, 4: 1, 5: 1})
	commit("idle-b", map[int32]int64{0: 2})
	stopClassic := consume(t, addrs, "live", topic, kgo.Balancers(kgo.RangeBalancer()))
	defer stopClassic()
	stopNextGen := consume(t, addrs, "next", topic, kgo.ServerSideBalancer())
	defer stopNextGen()

	requests := newRequestLog()
	c, err := New(clientsettings.Settings{
		Brokers:         addrs,
		ClientID:        "saramacluster-test",
		ProtocolVersion: "4.0.0", // ConsumerGroupDescribe for the KIP-848 group
		RequestTimeout:  10 * time.Second,
		DialTimeout:     10 * time.Second,
		Logger:          zaptest.NewLogger(t),
		Observer:        requests,
	})
	require.NoError(t, err)
	defer c.Close()

	var groups []string
	require.Eventually(t, func() bool {
		groups, err = c.ConsumerGroups(ctx)
		return err == nil && len(groups) == 4
	}, 30*time.Second, 50*time.Millisecond, "groups %v, error %v", groups, err)
	require.Equal(t, []string{"idle-a", "idle-b", "live", "next"}, groups)

	committed, err := c.CommittedOffsets(ctx, []string{"idle-a", "idle-b", "live"})
	require.NoError(t, err)
	idleA := map[kafka.TopicPartition]int64{}
	for p := range int32(partitions) {
		idleA[kafka.TopicPartition{Topic: topic, Partition: p}] = 1
	}
	require.Equal(t, kafka.CommitsByGroup(map[string]map[kafka.TopicPartition]int64{
		"idle-a": idleA,
		"idle-b": {{Topic: topic, Partition: 0}: 2},
		"live":   {},
	}), committed)

	all := make([]kafka.TopicPartition, 0, partitions)
	for p := range int32(partitions) {
		all = append(all, kafka.TopicPartition{Topic: topic, Partition: p})
	}
	sentBefore, _ := requests.snapshot()
	end, err := c.EndOffsets(ctx, all)
	require.NoError(t, err)
	sentAfter, _ := requests.snapshot()
	require.Equal(t, brokers, sentAfter["ListOffsets"]-sentBefore["ListOffsets"], "one ListOffsets per broker")
	require.False(t, end.Received.Before(end.Sent))
	start, err := c.StartOffsets(ctx, all)
	require.NoError(t, err)
	for _, tp := range all {
		require.Equal(t, int64(3), end.Offsets[tp], tp)
		require.Equal(t, int64(0), start.Offsets[tp], tp)
	}

	at := func(p int32, offset int64) saramatest.RecordAt {
		return saramatest.RecordAt{TopicPartition: kafka.TopicPartition{Topic: topic, Partition: p}, Offset: offset}
	}
	stamps, err := saramatest.RecordTimestamps(ctx, c, []saramatest.RecordAt{at(0, 1), at(0, 2), at(4, 0), at(5, 3)})
	require.NoError(t, err)
	require.Equal(t, map[saramatest.RecordAt]kafka.RecordTimestamp{
		at(0, 1): {Offset: 1, Timestamp: stamp(0, 1).UnixNano(), ByProducer: true, Producer: producerID},
		at(0, 2): {Offset: 2, Timestamp: stamp(0, 2).UnixNano(), ByProducer: true, Producer: producerID},
		at(4, 0): {Offset: 0, Timestamp: stamp(4, 0).UnixNano(), ByProducer: true, Producer: producerID},
	}, stamps, "no record at the end offset")

	var described map[string]kafka.GroupDescription
	require.Eventually(t, func() bool {
		described, err = c.DescribeGroups(ctx, []string{"idle-a", "live", "next"})
		return err == nil && described["live"].State == kafka.GroupStateStable && described["next"].State == kafka.GroupStateStable &&
			len(described["next"].Members) == 1 && len(described["next"].Members[0].Assignment) == partitions
	}, 30*time.Second, 50*time.Millisecond, "described %+v, error %v", described, err)
	require.Equal(t, kafka.GroupDescription{State: kafka.GroupStateEmpty, Epoch: -1}, described["idle-a"])
	// kfake names the topics of a KIP-848 assignment by id only; the
	// cluster looks their names up.
	for name, want := range map[string]struct {
		protocol   string
		assignment []kafka.TopicPartition
	}{
		"live": {"range", all},
		"next": {kafka.NextGenProtocol, all},
	} {
		d := described[name]
		require.Equal(t, want.protocol, d.Protocol, name)
		require.Len(t, d.Members, 1, name)
		m := d.Members[0]
		require.Equal(t, name+"-member", m.ClientID)
		require.True(t, m.AssignmentKnown, name)
		require.Equal(t, want.assignment, m.Assignment, name)
	}
	require.Equal(t, int32(-1), described["live"].Epoch)
	require.Positive(t, described["next"].Epoch)

	sent, failed := requests.snapshot()
	for _, api := range []string{"ListGroups", "OffsetFetch", "ListOffsets", "Fetch", "DescribeGroups", "ConsumerGroupDescribe"} {
		require.Positive(t, sent[api], api)
	}
	require.Empty(t, failed)

	// Only the cluster's own goroutines are left to check once everything
	// else is stopped.
	stopClassic()
	stopNextGen()
	producer.Close()
	kc.Close()
	require.NoError(t, c.Close())
	goleak.VerifyNone(t, saramatest.IgnoreMeterArbiter)
	_, err = c.ConsumerGroups(ctx)
	require.ErrorIs(t, err, saramaconn.ErrClosed)
}

// TestLazyConnect: New does not connect, a cluster that cannot be reached
// fails calls (saying how the client tried), and Close ends it all.
func TestLazyConnect(t *testing.T) {
	requests := newRequestLog()
	c, err := New(clientsettings.Settings{Brokers: []string{"127.0.0.1:1"}, ProtocolVersion: "3.0.0", RequestTimeout: time.Second, DialTimeout: time.Second, Observer: requests})
	require.NoError(t, err)
	_, err = c.ConsumerGroups(context.Background())
	require.ErrorContains(t, err, "connect to brokers [127.0.0.1:1] (plaintext, no SASL)")
	_, err = c.EndOffsets(context.Background(), []kafka.TopicPartition{{Topic: "t"}})
	require.Error(t, err)

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.CommittedOffsets(cancelled, []string{"g"})
	require.ErrorIs(t, err, context.Canceled, "no dial once the context is done")

	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "closing twice is harmless")
	_, err = saramatest.RecordTimestamps(context.Background(), c, []saramatest.RecordAt{{TopicPartition: kafka.TopicPartition{Topic: "t"}}})
	require.ErrorIs(t, err, saramaconn.ErrClosed)
	sent, _ := requests.snapshot()
	require.Empty(t, sent, "no request reached a broker")
}

// TestDenialsAreTyped: what an ACL refuses comes back as a GroupError or
// TopicError wrapping an AuthorizationError, which kafka.Denials takes out
// by type; other broker errors about a group stay errors.
func TestDenialsAreTyped(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1))
	require.NoError(t, err)
	defer kc.Close()
	producer, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...), kgo.ProducerLinger(0))
	require.NoError(t, err)
	defer producer.Close()
	admin := kadm.NewClient(producer)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, topic := range []string{"open", "secret"} {
		created, err := admin.CreateTopic(ctx, 1, 1, nil, topic)
		require.NoError(t, err)
		require.NoError(t, created.Err)
		require.NoError(t, producer.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr())
	}
	for _, group := range []string{"allowed", "denied", "broken"} {
		resp, err := admin.CommitOffsets(ctx, group, kadm.OffsetsFromRecords(kgo.Record{Topic: "open", Offset: 0, LeaderEpoch: -1}))
		require.NoError(t, err)
		require.NoError(t, resp.Error())
	}
	for _, f := range []kfake.Fault{
		{Keys: []kmsg.Key{kmsg.OffsetFetch, kmsg.DescribeGroups}, Group: "denied", Err: kerr.GroupAuthorizationFailed, Count: -1},
		{Keys: []kmsg.Key{kmsg.OffsetFetch}, Group: "broken", Err: kerr.UnknownServerError, Count: -1},
		{Keys: []kmsg.Key{kmsg.ListOffsets}, Topic: "secret", Err: kerr.TopicAuthorizationFailed, Count: -1},
		{Keys: []kmsg.Key{kmsg.Fetch}, Topic: "secret", Err: kerr.TopicAuthorizationFailed, Count: -1},
	} {
		kc.Fault(f)
	}

	c, err := New(clientsettings.Settings{Brokers: kc.ListenAddrs(), ProtocolVersion: "3.0.0", RequestTimeout: 10 * time.Second, DialTimeout: 10 * time.Second})
	require.NoError(t, err)
	defer c.Close()
	groups := []string{"allowed", "broken", "denied"}

	committed, err := c.CommittedOffsets(ctx, groups)
	require.Contains(t, committed, "allowed")
	require.NotContains(t, committed, "denied")
	var items kafka.Errors
	require.ErrorAs(t, err, &items, "per-group errors come as kafka.Errors")
	require.Len(t, items, 2)
	denials := kafka.NewDenials()
	rest := denials.Split(err)
	var groupErr *kafka.GroupError
	require.ErrorAs(t, rest, &groupErr)
	require.Equal(t, "broken", groupErr.Group, "a fault is no denial")
	var authz *kafka.AuthorizationError
	require.False(t, errors.As(rest, &authz))
	require.Equal(t, []string{"allowed", "broken"}, denials.Allowed(groups))

	_, err = c.DescribeGroups(ctx, groups)
	require.ErrorAs(t, err, &authz)
	require.ErrorIs(t, err, sarama.ErrGroupAuthorizationFailed)
	require.ErrorContains(t, err, `describe group "denied" on coordinator`)
	denials = kafka.NewDenials()
	require.NoError(t, denials.Split(err))
	require.Equal(t, []string{"allowed", "broken"}, denials.Allowed(groups))

	open := kafka.TopicPartition{Topic: "open"}
	secret := kafka.TopicPartition{Topic: "secret"}
	end, err := c.EndOffsets(ctx, []kafka.TopicPartition{open, secret})
	require.Equal(t, map[kafka.TopicPartition]int64{open: 1}, end.Offsets)
	var topicErr *kafka.TopicError
	require.ErrorAs(t, err, &topicErr)
	require.Equal(t, kafka.TopicError{Topic: "secret", Operation: kafka.OperationDescribe, Err: topicErr.Err}, *topicErr)
	require.ErrorAs(t, err, &authz)
	require.ErrorIs(t, err, sarama.ErrTopicAuthorizationFailed)
	require.NoError(t, kafka.NewDenials().Split(err))

	stamps, err := saramatest.RecordTimestamps(ctx, c, []saramatest.RecordAt{{TopicPartition: open}, {TopicPartition: secret}})
	require.Len(t, stamps, 1)
	require.ErrorAs(t, err, &topicErr)
	require.Equal(t, "secret", topicErr.Topic)
	require.Equal(t, kafka.OperationRead, topicErr.Operation)
	require.ErrorAs(t, err, &authz)
	require.NoError(t, kafka.NewDenials().Split(err))
}
