package brokerwatch

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Broker is what Idle needs of one broker connection of the client.
// Brokers are compared: the same broker of the same client is equal.
type Broker interface {
	ID() int32
	// Reopen closes the connection and opens a new one, in the
	// background; the next request waits for it.
	Reopen() error
}

// Idle reopens a broker's connection that carried no request for
// longer than the timeout before it carries the next one (contrib's
// conn_idle_timeout). Brokers close connections idle for
// connections.max.idle.ms (10 minutes by default), and load balancers and
// NAT drop them silently; sarama notices only when a request on the dead
// connection fails. A coordinator the scrape alone talks to is idle for a
// whole collection_interval.
type Idle struct {
	clock   Clock
	timeout time.Duration
	logger  *zap.Logger

	mu   sync.Mutex
	byID map[int32]*brokerUse
}

// brokerUse is what is known of one broker connection's use.
type brokerUse struct {
	broker   Broker
	inflight int
	last     time.Time
	// reopening is closed when a reopen in progress is done.
	reopening chan struct{}
}

// NewIdle reopens connections idle for longer than timeout, by the clock.
func NewIdle(clock Clock, timeout time.Duration, logger *zap.Logger) *Idle {
	return &Idle{clock: clock, timeout: timeout, logger: logger, byID: map[int32]*brokerUse{}}
}

// Begin marks b in use, reopening its connection first when it has been
// idle too long. Requests that come while it reopens wait for it; nothing
// is held while the connection closes. Every begin is followed by an end.
func (ic *Idle) Begin(ctx context.Context, b Broker) error {
	if ic == nil {
		return nil
	}
	for {
		ic.mu.Lock()
		u := ic.byID[b.ID()]
		if u == nil || u.broker != b {
			// A new client or a broker that moved: a new connection.
			u = &brokerUse{broker: b}
			ic.byID[b.ID()] = u
		}
		if wait := u.reopening; wait != nil {
			ic.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return fmt.Errorf("broker %d: wait for its connection to reopen: %w", b.ID(), ctx.Err())
			}
		}
		now := ic.clock.Now()
		idle := u.inflight == 0 && !u.last.IsZero() && now.Sub(u.last) > ic.timeout
		u.inflight++
		if !idle {
			ic.mu.Unlock()
			return nil
		}
		done := make(chan struct{})
		u.reopening = done
		ic.mu.Unlock()

		ic.reopen(b, now.Sub(u.last))
		ic.mu.Lock()
		u.reopening = nil
		ic.mu.Unlock()
		close(done)
		return nil
	}
}

// End marks the end of a use begun with Begin.
func (ic *Idle) End(b Broker) {
	if ic == nil {
		return
	}
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if u := ic.byID[b.ID()]; u != nil && u.broker == b {
		u.inflight--
		u.last = ic.clock.Now()
	}
}

// reopen closes the connection and starts a new one.
func (ic *Idle) reopen(b Broker, idleFor time.Duration) {
	ic.logger.Debug("reopening a connection idle for longer than conn_idle_timeout",
		zap.Int32("broker", b.ID()), zap.Duration("idle", idleFor), zap.Duration("conn_idle_timeout", ic.timeout))
	if err := b.Reopen(); err != nil {
		ic.logger.Debug("reopen an idle connection", zap.Int32("broker", b.ID()), zap.Error(err))
	}
}
