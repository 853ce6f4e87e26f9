package brokerwatch

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

type countingBroker struct{ reopened int }

func (b *countingBroker) ID() int32     { return 1 }
func (b *countingBroker) Reopen() error { b.reopened++; return nil }

// TestIdleConnectionIsReopenedPastTheTimeout: a connection that carried no
// request for longer than the idle timeout, by the clock, is reopened
// before its next request; one idle for exactly the timeout, or busy, is
// not.
func TestIdleConnectionIsReopenedPastTheTimeout(t *testing.T) {
	clock := newManualClock()
	idle := NewIdle(clock, time.Minute, zap.NewNop())
	b := &countingBroker{}
	use := func() {
		require.NoError(t, idle.Begin(context.Background(), b))
		idle.End(b)
	}
	use()
	require.Zero(t, b.reopened, "a first use opens, it does not reopen")
	clock.Advance(time.Minute)
	use()
	require.Zero(t, b.reopened, "idle for exactly the timeout")
	clock.Advance(time.Minute + time.Nanosecond)
	use()
	require.Equal(t, 1, b.reopened, "idle for longer")

	require.NoError(t, idle.Begin(context.Background(), b))
	clock.Advance(time.Hour)
	require.NoError(t, idle.Begin(context.Background(), b), "a request in flight: not idle")
	idle.End(b)
	idle.End(b)
	require.Equal(t, 1, b.reopened)
}
