package saramacluster

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
)

// A broker that does not answer is skipped for requestShare budgets (the
// rest of the call that found it), then for twice as long each time it
// still does not answer, up to maxSkip. Answering ends the doubling, but
// not the skip in force: a broker that answers on one connection and not on
// another stays skipped for the rest of that call.
func TestUnansweredBrokerBackoff(t *testing.T) {
	var h brokerHealth
	const addr = "b:9092"
	budget := time.Second
	now := time.Unix(1_700_000_000, 0)
	require.NoError(t, h.skipping(addr, now))

	var skips []time.Duration
	for range 8 {
		h.unanswered(addr, budget, now)
		err := h.skipping(addr, now)
		require.ErrorIs(t, err, errNotAnswering)
		var skipped *skippedError
		require.True(t, errors.As(err, &skipped))
		skips = append(skips, skipped.until.Sub(now))
		h.unanswered(addr, budget, now.Add(time.Millisecond)) // while skipped: no new strike
		now = skipped.until
		require.NoError(t, h.skipping(addr, now), "asked again once the skip is over")
	}
	require.Equal(t, []time.Duration{3 * time.Second, 6 * time.Second, 12 * time.Second, 24 * time.Second, 48 * time.Second, maxSkip, maxSkip, maxSkip}, skips)

	h.unanswered(addr, budget, now)
	h.answered(addr, now)
	require.Error(t, h.skipping(addr, now), "answering elsewhere does not end the skip in force")
	h.unanswered(addr, budget, now.Add(maxSkip))
	require.NoError(t, h.skipping(addr, now.Add(maxSkip+requestShare*budget)), "but the doubling starts over")
}

// TestShortCallLeavesAnotherCallsSlowAnswerAlone: one call (a sample, with
// the long budget of a long deadline) waits on a broker that answers late;
// meanwhile a call with the shortest budget (a scrape near its deadline)
// gives up on a broker of its own that answers nothing. The short call cuts
// its own connection and skips its broker, but the slow answer it never
// asked for is left to the call waiting for it: that call gets its offset,
// and its broker is not skipped.
func TestShortCallLeavesAnotherCallsSlowAnswerAlone(t *testing.T) {
	const slowNode, silentNode = int32(0), int32(1)
	k := kfaketest.New(t, 3, nil)
	k.CreateTopic("orders", 2)
	for p, node := range map[int32]int32{0: slowNode, 1: silentNode} {
		if k.Cluster.LeaderFor("orders", p) != node {
			require.NoError(t, k.Cluster.MoveTopicPartition("orders", p, node))
		}
	}
	slowTP := kafka.TopicPartition{Topic: "orders", Partition: 0}
	silentTP := kafka.TopicPartition{Topic: "orders", Partition: 1}
	c, err := New(patientSettings(k))
	require.NoError(t, err)
	defer c.Close()
	_, err = c.EndOffsets(context.Background(), []kafka.TopicPartition{slowTP, silentTP})
	require.NoError(t, err, "warm-up: both leaders connected")

	var (
		armed                      sync.Mutex
		on                         bool
		slowArrived, silentArrived = make(chan struct{}), make(chan struct{})
		slowOnce, silentOnce       sync.Once
		releaseSlow, testEnd       = make(chan struct{}), make(chan struct{})
		releaseOnce                sync.Once
		release                    = func() { releaseOnce.Do(func() { close(releaseSlow) }) }
	)
	t.Cleanup(func() { close(testEnd) }) // before the cluster closes
	t.Cleanup(release)
	k.Cluster.ControlKey(int16(kmsg.ListOffsets), func(kmsg.Request) (kmsg.Response, error, bool) {
		k.Cluster.KeepControl()
		armed.Lock()
		active := on
		armed.Unlock()
		if !active {
			return nil, nil, false
		}
		switch k.Cluster.CurrentNode() {
		case slowNode: // answered once released
			slowOnce.Do(func() { close(slowArrived) })
			k.Cluster.SleepControl(func() {
				select {
				case <-releaseSlow:
				case <-testEnd:
				}
			})
			return nil, nil, false
		case silentNode: // never answered
			silentOnce.Do(func() { close(silentArrived) })
			k.Cluster.SleepControl(func() { <-testEnd })
			return nil, nil, true
		}
		return nil, nil, false
	})
	armed.Lock()
	on = true
	armed.Unlock()

	type result struct {
		read kafka.OffsetRead
		err  error
	}
	slowCtx, cancelSlow := context.WithTimeout(context.Background(), 3*time.Minute) // a budget of a minute
	defer cancelSlow()
	slowDone := make(chan result, 1)
	go func() {
		read, err := c.EndOffsets(slowCtx, []kafka.TopicPartition{slowTP})
		slowDone <- result{read, err}
	}()
	<-slowArrived

	shortCtx, cancelShort := context.WithTimeout(context.Background(), 3*time.Second) // the least budget
	defer cancelShort()
	shortDone := make(chan error, 1)
	go func() {
		_, err := c.EndOffsets(shortCtx, []kafka.TopicPartition{silentTP})
		shortDone <- err
	}()
	<-silentArrived
	// The short call gives up on its silent broker once its budget is
	// spent: by then the slow answer has been awaited for longer still.
	silentAddr := k.Addrs[silentNode]
	require.Eventually(t, func() bool {
		return c.conns.health.skipping(silentAddr, time.Now()) != nil
	}, time.Minute, 10*time.Millisecond, "the short call skips the broker that does not answer it")
	release()

	slow := returnsWithin(t, time.Minute, func() result { return <-slowDone })
	require.NoError(t, slow.err, "the slow answer is not cut by a call that did not ask for it")
	require.Contains(t, slow.read.Offsets, slowTP)
	require.NoError(t, c.conns.health.skipping(k.Addrs[slowNode], time.Now()), "the slow broker is not skipped")
	require.Error(t, returnsWithin(t, time.Minute, func() error { return <-shortDone }))
}
