//go:build !unit

package saramatimes

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/saramatest"
)

// timeIndexCluster is the reads on k connected to the leaders of the
// topic's partitions, so that a test counts only the requests of the call
// under test.
func timeIndexCluster(t *testing.T, k *kfaketest.Kafka, s clientsettings.Settings, topic string, partitions int32) *testReads {
	t.Helper()
	cl, err := open(s)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cl.Close()) })
	var tps []kafka.TopicPartition
	for p := range partitions {
		tps = append(tps, kafka.TopicPartition{Topic: topic, Partition: p})
	}
	_, err = cl.EndOffsets(context.Background(), tps)
	require.NoError(t, err)
	return cl
}

// firstAtOrAfter is what a time index answers, worked out from the log: the
// first record from start on, in offset order, stamped at or after at.
func firstAtOrAfter(stamps []int64, start, at int64) kafka.TimePoint {
	for o := start; o < int64(len(stamps)); o++ {
		if stamps[o] >= at {
			return kafka.TimePoint{AtMillis: at, Found: true, Offset: o, TimestampMillis: stamps[o]}
		}
	}
	return kafka.TimePoint{AtMillis: at, Offset: -1, TimestampMillis: -1}
}

// refuseListOffsets answers every partition of the request with the error.
func refuseListOffsets(list *kmsg.ListOffsetsRequest, refusal *kerr.Error) *kmsg.ListOffsetsResponse {
	resp := list.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, topic := range list.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = topic.Topic
		for _, p := range topic.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = refusal.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// TestTimestampOffsetsAreExactPoints: on partitions whose producers'
// timestamps go back and forth (CreateTime), every time is answered with
// the first record in offset order stamped at or after it and that
// record's own timestamp, in one ListOffsets per broker per round carrying
// every partition it leads; times an answer implies cost no round. The log
// start moved by DeleteRecords is where answers begin.
func TestTimestampOffsetsAreExactPoints(t *testing.T) {
	const brokers, partitions = 3, 6
	k := kfaketest.New(t, brokers, nil)
	k.CreateTopic("times", partitions)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	// Seconds after base of the records at offsets 0..5: out of order, as
	// producers that retry or batch late write them.
	pattern := []int64{0, 300, 100, 200, 500, 400}
	stamps := make([]int64, len(pattern))
	times := make([]time.Time, len(pattern))
	for i, s := range pattern {
		times[i] = base.Add(time.Duration(s) * time.Second)
		stamps[i] = times[i].UnixMilli()
	}
	for p := range int32(partitions) {
		require.NoError(t, k.Cluster.MoveTopicPartition("times", p, p%brokers))
		k.Produce("times", p, times...)
	}
	// Partition 5 starts at offset 2.
	require.NoError(t, k.Cluster.DeleteRecords("times", 5, 2))
	cl := timeIndexCluster(t, k, saramatest.Settings(k.Addrs), "times", partitions)

	at := func(s int64) int64 { return base.Add(time.Duration(s) * time.Second).UnixMilli() }
	ask := []int64{at(-1), at(50), at(150), at(250), at(300), at(350), at(600), at(50)} // a repeat, out of order
	// Partitions out of order, each named twice (half its times each
	// time): a partition's times are gathered and asked once each.
	var asks []kafka.PartitionTimes
	for half := range 2 {
		for p := int32(partitions - 1); p >= 0; p-- {
			asks = append(asks, kafka.PartitionTimes{TopicPartition: kafka.TopicPartition{Topic: "times", Partition: p}, Millis: ask[half*len(ask)/2 : (half+1)*len(ask)/2]})
		}
	}
	before := k.Counts.ByBroker()
	points, err := cl.TimestampOffsets(context.Background(), asks)
	require.NoError(t, err)

	distinct := []int64{at(-1), at(50), at(150), at(250), at(300), at(350), at(600)}
	for p := range int32(partitions) {
		start := int64(0)
		if p == 5 {
			start = 2
		}
		var want []kafka.TimePoint
		for _, a := range distinct {
			want = append(want, firstAtOrAfter(stamps, start, a))
		}
		require.Equal(t, want, points[kafka.TopicPartition{Topic: "times", Partition: p}], "partition %d", p)
	}
	// Spelled out for partition 0: the record stamped 300 s comes before
	// those stamped 100 and 200 s, so it is the first at or after each of
	// 50 to 300 s; nothing is stamped at or after 600 s.
	p0 := points[kafka.TopicPartition{Topic: "times"}]
	require.Equal(t, kafka.TimePoint{AtMillis: at(150), Found: true, Offset: 1, TimestampMillis: at(300)}, p0[2])
	require.Equal(t, kafka.TimePoint{AtMillis: at(350), Found: true, Offset: 4, TimestampMillis: at(500)}, p0[5])
	require.Equal(t, kafka.TimePoint{AtMillis: at(600), Offset: -1, TimestampMillis: -1}, p0[6])
	require.Equal(t, kafka.TimePoint{AtMillis: at(-1), Found: true, Offset: 2, TimestampMillis: at(100)},
		points[kafka.TopicPartition{Topic: "times", Partition: 5}][0], "from the log start on")

	// Rounds: -1 s; 50 s (answers 150, 250 and 300 s too); 350 s; 600 s.
	// Partition 5's first answer (100 s) answers 50 s too, so it needs one
	// round less, and rides in its broker's requests.
	after := k.Counts.ByBroker()
	for node := range int32(brokers) {
		got := after[node].Since(before[node])
		require.Equal(t, int64(4), got.Of(kmsg.ListOffsets), "broker %d: one request a round for its two partitions", node)
		require.Equal(t, int64(4), got.Total(), "broker %d: nothing else: %s", node, got)
	}
}

// TestTimestampOffsetsOfLogAppendTime: on a topic stamped by the broker
// (LogAppendTime) the answer carries the append time, whatever the
// producer set. kfake assigns the append time to a batch without updating
// its CRC, and then fails to read it back (CORRUPT_MESSAGE), so a hook
// does what a broker does on such a topic: it stamps the batches of each
// Produce with the time it receives them.
func TestTimestampOffsetsOfLogAppendTime(t *testing.T) {
	k := kfaketest.New(t, 1, nil)
	k.CreateTopic("appended", 1)
	cl := timeIndexCluster(t, k, saramatest.Settings(k.Addrs), "appended", 1)
	k.Cluster.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		k.Cluster.KeepControl()
		now := time.Now().UnixMilli()
		for i := range req.(*kmsg.ProduceRequest).Topics {
			for j := range req.(*kmsg.ProduceRequest).Topics[i].Partitions {
				rp := &req.(*kmsg.ProduceRequest).Topics[i].Partitions[j]
				var batch kmsg.RecordBatch
				require.NoError(t, batch.ReadFrom(rp.Records))
				batch.FirstTimestamp, batch.MaxTimestamp = now, now
				rp.Records = batch.AppendTo(nil)
				fixBatchHeader(rp.Records)
			}
		}
		return nil, nil, false
	})
	producerSet := time.Now().Add(-time.Hour).UnixMilli()
	before := time.Now().UnixMilli()
	k.ProduceRaw("appended", 0, dataBatch(0, 3, producerSet).encode())
	after := time.Now().UnixMilli()

	tp := kafka.TopicPartition{Topic: "appended"}
	points, err := cl.TimestampOffsets(context.Background(), []kafka.PartitionTimes{{TopicPartition: tp, Millis: []int64{producerSet, before, after + 1}}})
	require.NoError(t, err)
	got := points[tp]
	require.Len(t, got, 3)
	require.True(t, got[0].Found)
	require.Equal(t, int64(0), got[0].Offset)
	require.GreaterOrEqual(t, got[0].TimestampMillis, before, "the append time, not the producer's")
	require.LessOrEqual(t, got[0].TimestampMillis, after)
	require.Equal(t, kafka.TimePoint{AtMillis: before, Found: true, Offset: 0, TimestampMillis: got[0].TimestampMillis}, got[1])
	require.Equal(t, kafka.TimePoint{AtMillis: after + 1, Offset: -1, TimestampMillis: -1}, got[2])
}

// TestTimestampOffsetsOfTransactions: a transaction's commit marker is a
// record of the log stamped when the coordinator wrote it, and is the answer
// when it is the first stamped late enough; the records of a transaction
// still open are answered too (read_uncommitted: they were appended when
// they say, below the high watermark).
func TestTimestampOffsetsOfTransactions(t *testing.T) {
	k := kfaketest.New(t, 1, nil)
	k.CreateTopic("txn", 1)
	cl := timeIndexCluster(t, k, saramatest.Settings(k.Addrs), "txn", 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	producer, err := kgo.NewClient(kgo.SeedBrokers(k.Addrs...), kgo.TransactionalID("dating"),
		kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer producer.Close()
	old := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	stamps := []time.Time{old, old.Add(time.Second), old.Add(2 * time.Second)}

	require.NoError(t, producer.BeginTransaction())
	for _, ts := range stamps {
		require.NoError(t, producer.ProduceSync(ctx, &kgo.Record{Topic: "txn", Timestamp: ts, Value: []byte("x")}).FirstErr())
	}
	committing := time.Now().UnixMilli()
	require.NoError(t, producer.EndTransaction(ctx, kgo.TryCommit))
	committed := time.Now().UnixMilli()
	// Offsets 0-2 the data, 3 the commit marker; then a transaction left
	// open, its record (offset 4) stamped a minute ahead.
	ahead := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	require.NoError(t, producer.BeginTransaction())
	require.NoError(t, producer.ProduceSync(ctx, &kgo.Record{Topic: "txn", Timestamp: ahead, Value: []byte("x")}).FirstErr())
	stable, err := cl.StableOffsets(ctx, []kafka.TopicPartition{{Topic: "txn"}})
	require.NoError(t, err)
	require.Equal(t, int64(4), stable.Offsets[kafka.TopicPartition{Topic: "txn"}], "the open transaction starts at 4")

	tp := kafka.TopicPartition{Topic: "txn"}
	asks := []int64{old.Add(time.Second).UnixMilli(), old.Add(3 * time.Second).UnixMilli(), committed + 1, ahead.Add(time.Millisecond).UnixMilli()}
	points, err := cl.TimestampOffsets(ctx, []kafka.PartitionTimes{{TopicPartition: tp, Millis: asks}})
	require.NoError(t, err)
	got := points[tp]
	require.Len(t, got, 4)
	require.Equal(t, kafka.TimePoint{AtMillis: asks[0], Found: true, Offset: 1, TimestampMillis: stamps[1].UnixMilli()}, got[0])
	require.True(t, got[1].Found)
	require.Equal(t, int64(3), got[1].Offset, "the commit marker, the first record stamped after the data")
	require.GreaterOrEqual(t, got[1].TimestampMillis, committing)
	require.LessOrEqual(t, got[1].TimestampMillis, committed)
	require.Equal(t, kafka.TimePoint{AtMillis: asks[2], Found: true, Offset: 4, TimestampMillis: ahead.UnixMilli()}, got[2], "a record of the open transaction, past the last stable offset")
	require.Equal(t, kafka.TimePoint{AtMillis: asks[3], Offset: -1, TimestampMillis: -1}, got[3])
	require.NoError(t, producer.EndTransaction(ctx, kgo.TryAbort))
}

// movingLeader is a topic of two partitions, each led by its own broker
// and holding records stamped old plus each of after, where partition 0's
// leader refuses the first ListOffsets asking it (NOT_LEADER) and hands the
// partition to the other broker as it does.
type movingLeader struct {
	k       *kfaketest.Kafka
	cl      *testReads
	old     time.Time
	refused atomic.Int32
}

func newMovingLeader(t *testing.T, after ...time.Duration) *movingLeader {
	m := &movingLeader{k: kfaketest.New(t, 2, nil), old: time.Now().Add(-time.Hour).Truncate(time.Millisecond)}
	k := m.k
	k.CreateTopic("moving", 2)
	require.NoError(t, k.Cluster.MoveTopicPartition("moving", 0, 0))
	require.NoError(t, k.Cluster.MoveTopicPartition("moving", 1, 1))
	stamps := make([]time.Time, len(after))
	for i, d := range after {
		stamps[i] = m.old.Add(d)
	}
	for p := range int32(2) {
		k.Produce("moving", p, stamps...)
	}
	m.cl = timeIndexCluster(t, k, saramatest.Settings(k.Addrs), "moving", 2)
	k.Cluster.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
		k.Cluster.KeepControl()
		list := req.(*kmsg.ListOffsetsRequest)
		if m.refused.Load() > 0 || k.Cluster.CurrentNode() != 0 {
			return nil, nil, false
		}
		m.refused.Add(1)
		require.NoError(t, k.Cluster.MoveTopicPartition("moving", 0, 1))
		return refuseListOffsets(list, kerr.NotLeaderForPartition), nil, true
	})
	return m
}

// TestTimestampOffsetsFollowAMovedLeader: a partition whose broker says it
// no longer leads it is asked of its new leader within the same round.
func TestTimestampOffsetsFollowAMovedLeader(t *testing.T) {
	m := newMovingLeader(t, 0, time.Minute)
	k, old := m.k, m.old
	moving := kafka.TopicPartition{Topic: "moving"}
	before := k.Requests(int16(kmsg.ListOffsets))
	points, err := m.cl.TimestampOffsets(context.Background(), []kafka.PartitionTimes{
		{TopicPartition: moving, Millis: []int64{old.Add(time.Second).UnixMilli()}},
		{TopicPartition: kafka.TopicPartition{Topic: "moving", Partition: 1}, Millis: []int64{old.Add(time.Second).UnixMilli()}},
	})
	require.NoError(t, err)
	require.Equal(t, int32(1), m.refused.Load())
	require.Equal(t, []kafka.TimePoint{{AtMillis: old.Add(time.Second).UnixMilli(), Found: true, Offset: 1, TimestampMillis: old.Add(time.Minute).UnixMilli()}}, points[moving])
	require.Len(t, points[kafka.TopicPartition{Topic: "moving", Partition: 1}], 1)
	// The refused request was handled by the hook, before the counter saw
	// it: three in all, one a leader and the retry of the moved partition.
	require.Equal(t, int64(2), k.Requests(int16(kmsg.ListOffsets))-before)
}

// TestTimestampOffsetsAskTheNewLeaderInLaterRounds: a call asks a
// partition's leader for each of its times in rounds; a leader that moved
// during the first round is asked in the next ones where the retry found
// it, not where the call first found it.
func TestTimestampOffsetsAskTheNewLeaderInLaterRounds(t *testing.T) {
	m := newMovingLeader(t, 0, time.Minute, 2*time.Minute)
	k, old := m.k, m.old
	moving := kafka.TopicPartition{Topic: "moving"}
	// Three times a partition, each past the record the one before found:
	// three rounds.
	times := []int64{old.Add(time.Second).UnixMilli(), old.Add(time.Minute + time.Second).UnixMilli(), old.Add(3 * time.Minute).UnixMilli()}
	listsBefore, metadataBefore := k.Requests(int16(kmsg.ListOffsets)), k.Requests(int16(kmsg.Metadata))
	points, err := m.cl.TimestampOffsets(context.Background(), []kafka.PartitionTimes{
		{TopicPartition: moving, Millis: times},
		{TopicPartition: kafka.TopicPartition{Topic: "moving", Partition: 1}, Millis: times},
	})
	require.NoError(t, err)
	require.Equal(t, int32(1), m.refused.Load())
	require.Equal(t, []kafka.TimePoint{
		{AtMillis: times[0], Found: true, Offset: 1, TimestampMillis: old.Add(time.Minute).UnixMilli()},
		{AtMillis: times[1], Found: true, Offset: 2, TimestampMillis: old.Add(2 * time.Minute).UnixMilli()},
		{AtMillis: times[2], Offset: -1, TimestampMillis: -1},
	}, points[moving])
	require.Equal(t, points[moving], points[kafka.TopicPartition{Topic: "moving", Partition: 1}])
	// The refused request is not counted: the first round's request to
	// broker 1 and the retry of partition 0, then one request a round to
	// broker 1, which leads both now. Asking broker 0 again would be
	// refused and cost a metadata refresh and a retry.
	require.Equal(t, int64(4), k.Requests(int16(kmsg.ListOffsets))-listsBefore)
	require.Equal(t, int64(1), k.Requests(int16(kmsg.Metadata))-metadataBefore, "the refresh after the refusal, and no other")
}

// TestTimestampOffsetsDenied: a topic the principal may not describe is a
// TopicError wrapping an AuthorizationError; the topics it may are read.
// The denial comes from the leader lookup (Metadata needs the same ACL as
// ListOffsets), or from ListOffsets itself when the ACL changed in between.
func TestTimestampOffsetsDenied(t *testing.T) {
	admin := kgo.SASL(plain.Auth{User: "admin", Pass: "admin"}.AsMechanism())
	describe := func(name string) kfake.ACL {
		return kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: name, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationDescribe, Allow: true}
	}
	k := kfaketest.New(t, 1, []kgo.Opt{admin},
		kfake.EnableSASL(), kfake.EnableACLs(), kfake.Superuser("PLAIN", "admin", "admin"),
		kfake.User("PLAIN", "monitor", "monitor", describe("open")))
	k.CreateTopic("open", 1)
	k.CreateTopic("secret", 1)
	old := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	k.Produce("open", 0, old)
	k.Produce("secret", 0, old)
	s := saramatest.Settings(k.Addrs)
	s.SASL = &clientsettings.SASL{Mechanism: kafka.SASLPlain, Username: "monitor", Password: "monitor", HandshakeVersion: 1}
	cl := timeIndexCluster(t, k, s, "open", 1)

	open, secret := kafka.TopicPartition{Topic: "open"}, kafka.TopicPartition{Topic: "secret"}
	points, err := cl.TimestampOffsets(context.Background(), []kafka.PartitionTimes{
		{TopicPartition: open, Millis: []int64{old.UnixMilli()}},
		{TopicPartition: secret, Millis: []int64{old.UnixMilli()}},
	})
	require.Equal(t, []kafka.TimePoint{{AtMillis: old.UnixMilli(), Found: true, Offset: 0, TimestampMillis: old.UnixMilli()}}, points[open])
	require.NotContains(t, points, secret)
	var topicErr *kafka.TopicError
	require.True(t, errors.As(err, &topicErr), "%v", err)
	require.Equal(t, "secret", topicErr.Topic)
	var denied *kafka.AuthorizationError
	require.True(t, errors.As(err, &denied), "%v", err)
	denials := kafka.NewDenials()
	require.NoError(t, denials.Split(err), "a denial and nothing else: reported once, not a failure")

	// Describe taken away after the lookup: ListOffsets refuses it.
	k.Cluster.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
		return refuseListOffsets(req.(*kmsg.ListOffsetsRequest), kerr.TopicAuthorizationFailed), nil, true
	})
	points, err = cl.TimestampOffsets(context.Background(), []kafka.PartitionTimes{{TopicPartition: open, Millis: []int64{old.UnixMilli()}}})
	require.Empty(t, points)
	require.True(t, errors.As(err, &topicErr), "%v", err)
	require.Equal(t, "open", topicErr.Topic)
	require.True(t, errors.As(err, &denied), "%v", err)
	require.NoError(t, kafka.NewDenials().Split(err))
}

// TestTimestampOffsetsUnsupported: a protocol version below 0.10.1 cannot
// search by timestamp and sends nothing; a broker that only speaks
// ListOffsets v0 is an error for its partitions, not an answer read as one;
// a negative time is refused by name, the partition's other times asked.
func TestTimestampOffsetsUnsupported(t *testing.T) {
	t.Run("protocol version", func(t *testing.T) {
		k := kfaketest.New(t, 1, nil)
		k.CreateTopic("old", 1)
		s := saramatest.Settings(k.Addrs)
		s.ProtocolVersion = "0.10.0.0"
		cl := timeIndexCluster(t, k, s, "old", 1)
		before := k.Requests(int16(kmsg.ListOffsets))
		points, err := cl.TimestampOffsets(context.Background(), []kafka.PartitionTimes{{TopicPartition: kafka.TopicPartition{Topic: "old"}, Millis: []int64{1}}})
		require.Empty(t, points)
		require.ErrorIs(t, err, sarama.ErrUnsupportedVersion)
		require.ErrorContains(t, err, "0.10.0.0")
		require.Equal(t, before, k.Requests(int16(kmsg.ListOffsets)))
	})
	t.Run("broker", func(t *testing.T) {
		// The test's own client cannot create topics on a 0.10.0 broker.
		k := kfaketest.New(t, 1, nil, kfake.MaxVersions(kversion.V0_10_0()), kfake.SeedTopics(1, "old"))
		cl := timeIndexCluster(t, k, saramatest.Settings(k.Addrs), "old", 1)
		tp := kafka.TopicPartition{Topic: "old"}
		points, err := cl.TimestampOffsets(context.Background(), []kafka.PartitionTimes{{TopicPartition: tp, Millis: []int64{1}}})
		require.Empty(t, points)
		require.ErrorIs(t, err, sarama.ErrUnsupportedVersion)
		var topicErr *kafka.TopicError
		require.True(t, errors.As(err, &topicErr), "%v", err)
		require.Equal(t, "old", topicErr.Topic)
	})
	t.Run("negative time", func(t *testing.T) {
		k := kfaketest.New(t, 1, nil)
		k.CreateTopic("t", 1)
		at := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
		k.Produce("t", 0, at)
		cl := timeIndexCluster(t, k, saramatest.Settings(k.Addrs), "t", 1)
		tp := kafka.TopicPartition{Topic: "t"}
		points, err := cl.TimestampOffsets(context.Background(), []kafka.PartitionTimes{{TopicPartition: tp, Millis: []int64{-2, at.UnixMilli()}}})
		require.ErrorContains(t, err, "t/0")
		require.ErrorContains(t, err, "-2 ms")
		require.Equal(t, []kafka.TimePoint{{AtMillis: at.UnixMilli(), Found: true, Offset: 0, TimestampMillis: at.UnixMilli()}}, points[tp])
	})
}
