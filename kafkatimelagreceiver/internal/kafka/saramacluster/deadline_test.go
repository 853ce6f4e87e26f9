//go:build !unit

package saramacluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kafkacount"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/saramatest"
)

// TestRequestToBlackHoledBrokerEndsWithItsContext: a broker accepts
// ListOffsets and never answers. The call ends within its context (its
// request budget is a third of it), not at the request's read deadline (ten
// minutes here), says so in its error, and the connection it cut is opened
// again once the broker's skip is over.
func TestRequestToBlackHoledBrokerEndsWithItsContext(t *testing.T) {
	k := kfaketest.New(t, 1, nil)
	k.CreateTopic("orders", 1)
	hole := kafkacount.NewBlackHole(k.Cluster, int16(kmsg.ListOffsets))
	c, err := New(saramatest.PatientSettings(k.Addrs))
	require.NoError(t, err)
	defer c.Close()
	tps := []kafka.TopicPartition{{Topic: "orders"}}
	_, err = c.EndOffsets(context.Background(), tps)
	require.NoError(t, err)

	hole.Set(true)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err = saramatest.ReturnsWithin(t, time.Minute, func() error {
		_, err := c.EndOffsets(ctx, tps)
		return err
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, int64(1), hole.Swallowed())

	hole.Set(false)
	require.Eventually(t, func() bool {
		read, err := saramatest.ReturnsWithin(t, time.Minute, func() kafka.OffsetRead {
			read, err := c.EndOffsets(context.Background(), tps)
			if err != nil {
				t.Log(err)
			}
			return read
		}), error(nil)
		_, ok := read.Offsets[tps[0]]
		return err == nil && ok
	}, time.Minute, 50*time.Millisecond)
}

// TestConnectToBlackHoledBrokerEndsWithItsContext: the bootstrap broker
// accepts connections and answers nothing. Connecting, which sarama does
// without a context, still ends with the call's context.
func TestConnectToBlackHoledBrokerEndsWithItsContext(t *testing.T) {
	k := kfaketest.New(t, 1, nil)
	hole := kafkacount.NewBlackHole(k.Cluster, -1)
	hole.Set(true)
	c, err := New(saramatest.PatientSettings(k.Addrs))
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err = saramatest.ReturnsWithin(t, time.Minute, func() error {
		_, err := c.ConsumerGroups(ctx)
		return err
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Positive(t, hole.Swallowed())
}

// TestCloseCutsRequestsInFlight: Close, as at the collector's shutdown,
// ends the requests waiting on a black-holed broker at once instead of
// waiting for their read deadline, and leaves no goroutine behind.
func TestCloseCutsRequestsInFlight(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before, saramatest.IgnoreMeterArbiter) }) // last: after the cluster closes
	k := kfaketest.New(t, 1, nil)
	k.CreateTopic("orders", 1)
	k.Commit("group", "orders", map[int32]int64{0: 0})
	listOffsets := kafkacount.NewBlackHole(k.Cluster, int16(kmsg.ListOffsets))
	offsetFetch := kafkacount.NewBlackHole(k.Cluster, int16(kmsg.OffsetFetch))
	c, err := New(saramatest.PatientSettings(k.Addrs))
	require.NoError(t, err)
	_, err = c.ConsumerGroups(context.Background())
	require.NoError(t, err)

	listOffsets.Set(true)
	offsetFetch.Set(true)
	errs := make(chan error, 2)
	go func() {
		_, err := c.EndOffsets(context.Background(), []kafka.TopicPartition{{Topic: "orders"}})
		errs <- err
	}()
	go func() {
		_, err := c.CommittedOffsets(context.Background(), []string{"group"})
		errs <- err
	}()
	// One of them is sent and swallowed; sarama holds the other until the
	// connection is free.
	require.Eventually(t, func() bool {
		return listOffsets.Swallowed()+offsetFetch.Swallowed() == 1
	}, time.Minute, 10*time.Millisecond)

	require.NoError(t, saramatest.ReturnsWithin(t, time.Minute, c.Close))
	for range 2 {
		require.Error(t, saramatest.ReturnsWithin(t, time.Minute, func() error { return <-errs }))
	}
}
