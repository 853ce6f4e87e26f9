//go:build !unit

package saramacluster

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramaconn"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/saramatest"
)

// TestLaneSlowAnswerHoldsNoOtherLane: a lane's metadata request that the
// broker has not answered yet (a loaded controller) holds that lane's
// connection; a read on the cluster's own lane, to the same broker, is
// answered meanwhile. On one shared connection it would wait behind it.
// Closing the cluster closes its lanes.
func TestLaneSlowAnswerHoldsNoOtherLane(t *testing.T) {
	k := kfaketest.New(t, 1, nil)
	k.CreateTopic("orders", 1)
	tp := kafka.TopicPartition{Topic: "orders"}
	var (
		hold     atomic.Bool
		arrived  = make(chan struct{})
		arrive   sync.Once
		release  = make(chan struct{})
		released sync.Once
	)
	free := func() { released.Do(func() { close(release) }) }
	t.Cleanup(free) // before kfake closes
	k.Cluster.ControlKey(int16(kmsg.Metadata), func(kmsg.Request) (kmsg.Response, error, bool) {
		k.Cluster.KeepControl()
		if hold.Load() {
			arrive.Do(func() { close(arrived) })
			k.Cluster.SleepControl(func() { <-release })
		}
		return nil, nil, false
	})

	c, err := New(saramatest.PatientSettings(k.Addrs))
	require.NoError(t, err)
	laned, err := c.Lane()
	require.NoError(t, err)
	lane := laned.(*Cluster)
	ctx := context.Background()
	for _, cl := range []*Cluster{c, lane} {
		_, err := cl.EndOffsets(ctx, []kafka.TopicPartition{tp})
		require.NoError(t, err, "warm-up: the leader is known")
	}

	hold.Store(true)
	identified := make(chan error, 1)
	go func() {
		_, err := lane.Identify(ctx, []string{"orders"})
		identified <- err
	}()
	<-arrived
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var read kafka.OffsetRead
	err = saramatest.ReturnsWithin(t, time.Minute, func() (err error) {
		read, err = c.EndOffsets(sctx, []kafka.TopicPartition{tp})
		return err
	})
	require.NoError(t, err, "answered while the lane's request is held")
	require.Contains(t, read.Offsets, tp)
	select {
	case err := <-identified:
		t.Fatalf("the lane's request was not held: %v", err)
	default:
	}

	free()
	require.NoError(t, <-identified, "the lane's answer came once released")
	require.NoError(t, c.Close())
	_, err = lane.EndOffsets(ctx, []kafka.TopicPartition{tp})
	require.ErrorIs(t, err, saramaconn.ErrClosed, "closed with the cluster")
}
