//go:build !unit

package saramaconn

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/brokerwatch"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kafkacount"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/saramatest"
)

// The tests here check that sarama's requests, lookups and queueing reach
// the watch: the rules' scenarios themselves, at the instants the rules
// name, are brokerwatch's watch_test.go on a manual clock.

// listOffsetsStall holds the ListOffsets requests that reach some brokers
// of a kfake cluster: each held request is answered once released, or
// dropped unanswered when its broker is silent, at the latest when the test
// ends.
type listOffsetsStall struct {
	arrived map[int32]chan struct{} // closed at the first request held by each broker
	release func()
}

// stallListOffsets installs a stall, on from now, on the brokers of nodes;
// silent ones never answer.
func stallListOffsets(t *testing.T, k *kfaketest.Kafka, nodes map[int32]bool) *listOffsetsStall {
	testEnd := make(chan struct{})
	// A control function still asleep when kfake closes can return through
	// its shutdown and leave kfake's control lock held, so that the next
	// control goroutine waits for it for ever (goleak then fails the
	// package). Before the cluster closes, the test's end wakes every
	// sleeper and waits until each is awake; requests from then on are not
	// held.
	var (
		mu       sync.Mutex
		ended    bool
		sleepers sync.WaitGroup
	)
	t.Cleanup(func() {
		mu.Lock()
		ended = true
		close(testEnd)
		mu.Unlock()
		awake := make(chan struct{})
		go func() {
			sleepers.Wait()
			close(awake)
		}()
		select {
		case <-awake:
		case <-time.After(time.Minute):
			t.Error("ListOffsets held by the stall still asleep a minute after the test ended")
		}
	})
	released := make(chan struct{})
	var releaseOnce sync.Once
	s := &listOffsetsStall{arrived: map[int32]chan struct{}{}, release: func() { releaseOnce.Do(func() { close(released) }) }}
	arrivals := map[int32]*sync.Once{}
	for node := range nodes {
		s.arrived[node] = make(chan struct{})
		arrivals[node] = new(sync.Once)
	}
	k.Cluster.ControlKey(int16(kmsg.ListOffsets), func(kmsg.Request) (kmsg.Response, error, bool) {
		k.Cluster.KeepControl()
		node := k.Cluster.CurrentNode()
		silent, held := nodes[node]
		if !held {
			return nil, nil, false
		}
		arrivals[node].Do(func() { close(s.arrived[node]) })
		mu.Lock()
		if ended {
			mu.Unlock()
			return nil, nil, false
		}
		sleepers.Add(1)
		mu.Unlock()
		defer sleepers.Done()
		if silent {
			k.Cluster.SleepControl(func() { <-testEnd })
			return nil, nil, true
		}
		k.Cluster.SleepControl(func() {
			select {
			case <-released:
			case <-testEnd:
			}
		})
		return nil, nil, false
	})
	return s
}

// offsetsResult is what a call to endOffsets returned.
type offsetsResult struct {
	read kafka.OffsetRead
	err  error
}

// endOffsets reads the partitions' end offsets as a call of the offset
// reads does: a call begun, a connection, and the rounds of ListOffsets
// that follow a moved leader.
func endOffsets(ctx context.Context, c *Conn, tps []kafka.TopicPartition) (kafka.OffsetRead, error) {
	call, stop := c.Begin(ctx)
	defer stop()
	read := kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{}}
	client, err := c.Connected(ctx)
	if err != nil {
		return read, err
	}
	_, read.Unknown, err = c.ListRetrying(ctx, call, client, tps, Listing{
		Isolation: sarama.ReadUncommitted,
		Timestamp: func(kafka.TopicPartition) int64 { return sarama.OffsetNewest },
		Take: func(tp kafka.TopicPartition, block *sarama.OffsetResponseBlock, _ int16) error {
			read.Offsets[tp] = block.Offset
			return nil
		},
	})
	return read, err
}

// endOffsetsInBackground calls endOffsets in a goroutine; the channel has
// its result.
func endOffsetsInBackground(ctx context.Context, c *Conn, tps ...kafka.TopicPartition) <-chan offsetsResult {
	done := make(chan offsetsResult, 1)
	go func() {
		read, err := endOffsets(ctx, c, tps)
		done <- offsetsResult{read, err}
	}()
	return done
}

// twoLeaders is a cluster of three brokers whose topic "orders" has its
// partition 0 led by broker 0 and its partition 1 by broker 1, and a
// Conn connected to both, whose requests wait ten minutes for an answer.
func twoLeaders(t *testing.T) (*kfaketest.Kafka, *Conn, [2]kafka.TopicPartition) {
	k := kfaketest.New(t, 3, nil)
	k.CreateTopic("orders", 2)
	tps := [2]kafka.TopicPartition{{Topic: "orders", Partition: 0}, {Topic: "orders", Partition: 1}}
	for _, tp := range tps {
		if k.Cluster.LeaderFor(tp.Topic, tp.Partition) != tp.Partition {
			require.NoError(t, k.Cluster.MoveTopicPartition(tp.Topic, tp.Partition, tp.Partition))
		}
	}
	c, err := New(saramatest.PatientSettings(k.Addrs))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	_, err = endOffsets(context.Background(), c, tps[:])
	require.NoError(t, err, "warm-up: both leaders connected")
	return k, c, tps
}

// TestShortCallLeavesAnotherCallsSlowAnswerAlone: one call (a sample, with
// the long budget of a long deadline) waits on a broker that answers late;
// meanwhile a call with the least budget (a scrape near its deadline) gives
// up on a broker of its own that answers nothing. The short call cuts its
// own connection, but the slow answer it never asked for is left to the
// call waiting for it: that call gets its offset, and its broker is not
// skipped.
func TestShortCallLeavesAnotherCallsSlowAnswerAlone(t *testing.T) {
	const slowNode, silentNode = 0, 1
	k, c, tps := twoLeaders(t)
	stall := stallListOffsets(t, k, map[int32]bool{slowNode: false, silentNode: true})
	defer stall.release()

	slowCtx, cancelSlow := context.WithTimeout(context.Background(), 3*time.Minute) // a budget of a minute
	defer cancelSlow()
	slowDone := endOffsetsInBackground(slowCtx, c, tps[slowNode])
	<-stall.arrived[slowNode]
	// Once the short call gives up on its silent broker, it must not look
	// the leaders up again: sarama's lookups wait on every broker's request
	// in flight, the slow one too, which the short call would then give up
	// on. A transport refresh is taken for just made.
	c.transportRefresh.Store(time.Now().Add(time.Hour).UnixNano())
	shortCtx, cancelShort := context.WithTimeout(context.Background(), 3*time.Second) // the least budget
	defer cancelShort()
	// The short call gives up on its silent broker once its budget is
	// spent, when the slow answer has been awaited for longer still.
	short := saramatest.ReturnsWithin(t, time.Minute, func() offsetsResult {
		return <-endOffsetsInBackground(shortCtx, c, tps[silentNode])
	})
	require.ErrorIs(t, short.err, brokerwatch.ErrNotAnswering)
	stall.release()

	slow := saramatest.ReturnsWithin(t, time.Minute, func() offsetsResult { return <-slowDone })
	require.NoError(t, slow.err, "the slow answer is not cut by a call that did not ask for it")
	require.Contains(t, slow.read.Offsets, tps[slowNode])
	require.NoError(t, c.watch.Skipping(k.Addrs[slowNode]), "the slow broker is not skipped")
}

// TestCallQueuedBehindAnotherCallsUnansweredRequestGivesUp: a broker
// answers nothing; a call with a long budget (a sample) sent to it first,
// and a call with a short budget (a scrape) asks it next, which sarama
// holds until the first request is answered. The short call does not wait
// for the long budget: once it has waited its own, it cuts the connection
// and goes on with the other broker. (Its context
// leaves it three budgets, so that a cut at its deadline is told apart: a
// call that gave up on a broker says so in its error.)
func TestCallQueuedBehindAnotherCallsUnansweredRequestGivesUp(t *testing.T) {
	const wedgedNode = 0
	k, c, tps := twoLeaders(t)
	stall := stallListOffsets(t, k, map[int32]bool{wedgedNode: true})

	longCtx, cancelLong := context.WithTimeout(context.Background(), 30*time.Minute) // a budget of ten minutes
	defer cancelLong()
	longDone := endOffsetsInBackground(longCtx, c, tps[wedgedNode])
	<-stall.arrived[wedgedNode]

	shortCtx, cancelShort := context.WithTimeout(context.Background(), 9*time.Second) // a budget of three seconds
	defer cancelShort()
	short := saramatest.ReturnsWithin(t, time.Minute, func() offsetsResult {
		return <-endOffsetsInBackground(shortCtx, c, tps[wedgedNode], tps[1])
	})
	// The connection was cut at the short call's budget, not at its
	// deadline (three budgets) nor at the long call's. The call then asks
	// the broker again after a metadata refresh, and is told it gave up on
	// it, when the refresh fits what is left of its time; else the cut is
	// its error, naming the budget it was cut at.
	var cut *brokerwatch.NotAnsweredError
	if errors.As(short.err, &cut) {
		require.Equal(t, k.Addrs[wedgedNode], cut.Addr)
		require.LessOrEqual(t, cut.Budget, 3*time.Second, "the short call gave up on the broker on its own budget")
	} else {
		require.ErrorIs(t, short.err, brokerwatch.ErrNotAnswering, "the short call gave up on the broker on its own budget")
	}
	require.Contains(t, short.read.Offsets, tps[1], "and read the other broker")
	// Close, not the long call's context: its retry may be on its way to the
	// broker, past the check of its context.
	require.NoError(t, c.Close())
	require.Error(t, saramatest.ReturnsWithin(t, time.Minute, func() offsetsResult { return <-longDone }).err)
}

// TestRefreshOutlivingTheCallKeepsWhyPartitionsWentUnread: a leader
// answers no ListOffsets, and then no broker answers Metadata. The call
// gives up on the leader on its budget (a second of its two and a half),
// and the metadata refresh that follows waits on one silent broker after
// the other until the call's context is over. The call then reports why
// its partition went unread (its leader did not answer), not a leader
// lookup that failed only because no time was left.
func TestRefreshOutlivingTheCallKeepsWhyPartitionsWentUnread(t *testing.T) {
	k, c, tps := twoLeaders(t)
	listOffsets := kafkacount.NewBlackHole(k.Cluster, int16(kmsg.ListOffsets))
	metadata := kafkacount.NewBlackHole(k.Cluster, int16(kmsg.Metadata))
	listOffsets.Set(true)
	metadata.Set(true)

	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	result := saramatest.ReturnsWithin(t, time.Minute, func() offsetsResult {
		return <-endOffsetsInBackground(ctx, c, tps[0])
	})
	require.Error(t, ctx.Err(), "the call returned after its context ended, so the refresh took the rest of it")
	require.Positive(t, metadata.Swallowed(), "the refresh asked for metadata")
	require.ErrorContains(t, result.err, "list offsets from broker 0: broker "+k.Addrs[0]+" did not answer within 1s", "why the partition went unread")
	require.NotContains(t, result.err.Error(), "find leaders", "no leader lookup on a context that had ended")
	require.NotContains(t, result.read.Offsets, tps[0])
}
