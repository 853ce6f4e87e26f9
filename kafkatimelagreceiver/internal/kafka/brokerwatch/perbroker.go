package brokerwatch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// Addressed is a broker as the client knows it.
type Addressed interface {
	comparable
	ID() int32
	Addr() string
}

// Lookup runs one of the client's lookups (a metadata refresh, a
// coordinator or leader lookup), which take no context, as a wait of the
// call on every broker. The call waits for it until its context ends and
// no longer; the lookup goes on to its end without it (the client's own
// timeouts, or Close, end it), so that a late answer still reaches the
// next call through the client's cache instead of being cut (Rule 2).
func Lookup[T any](ctx context.Context, call *Call, fn func() (T, error)) (T, error) {
	defer call.LookingUp()()
	type result struct {
		v   T
		err error
	}
	answer := make(chan result, 1)
	if !call.watch.run(func() {
		v, err := fn()
		answer <- result{v, err}
	}) {
		var zero T
		return zero, errConnectionsClosed
	}
	select {
	case r := <-answer:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// Background runs one of the client's lookups that the call does not wait
// for, for the calls after it (Rule 7); Close ends it.
func Background(call *Call, fn func()) {
	call.watch.run(fn)
}

// run runs fn, which uses the connections, in a goroutine that WaitLookups
// waits for; false, and fn is not run, once the watch is closed.
func (cs *Watch) run(fn func()) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return false
	}
	cs.lookups.Add(1) // before Close, which WaitLookups follows
	go func() {
		defer cs.lookups.Done()
		fn()
	}()
	return true
}

// WaitLookups waits for the lookups running (Lookup, Background) to end:
// after Close, which cuts what they wait on.
func (cs *Watch) WaitLookups() {
	cs.lookups.Wait()
}

// PerBroker runs fn once per broker concurrently and waits for all of them.
// sarama takes no context, so ctx is checked before each request is sent,
// and when ctx ends the connections of the brokers still working are cut
// (Call.CutAtEnd), which ends their requests in flight (and any
// other request sharing the connection) at once; their error then says
// that ctx ended. A connection idle past conn_idle_timeout is reopened
// before its request.
func PerBroker[B Addressed, T any](ctx context.Context, call *Call, idle *Idle, asIdle func(B) Broker, work map[B]T, fn func(B, T) error) error {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		errs    []error
		pending = make(map[string]bool, len(work)) // broker addresses still working
	)
	for broker := range work {
		pending[broker.Addr()] = true
	}
	defer call.CutAtEnd(ctx, func() map[string]bool {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(pending)
	})()
	for broker, item := range work {
		wg.Go(func() {
			var err error
			if ctxErr := ctx.Err(); ctxErr != nil {
				err = fmt.Errorf("broker %d (%s): %w", broker.ID(), broker.Addr(), ctxErr)
			} else if skipped := call.watch.Skipping(broker.Addr()); skipped != nil {
				err = fmt.Errorf("broker %d (%s): %w", broker.ID(), broker.Addr(), skipped)
			} else if gaveUp := call.GaveUpOn(broker.Addr()); gaveUp != nil {
				err = fmt.Errorf("broker %d (%s): %w", broker.ID(), broker.Addr(), gaveUp)
			} else {
				err = awaitBroker(ctx, call, idle, asIdle(broker), broker, item, fn)
				if ctxErr := ctx.Err(); err != nil && ctxErr != nil && !errors.Is(err, ctxErr) {
					err = fmt.Errorf("broker %d (%s): %w: %w", broker.ID(), broker.Addr(), ctxErr, err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			delete(pending, broker.Addr())
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	return kafka.Join(errs...)
}

// awaitBroker runs fn on broker, recorded as a wait of the call on it: its
// budget then judges the broker's connection whoever's request is on it.
// A connection idle past conn_idle_timeout is reopened first.
func awaitBroker[B Addressed, T any](ctx context.Context, call *Call, idle *Idle, asIdle Broker, broker B, item T, fn func(B, T) error) error {
	defer call.WaitingOn(broker.Addr())()
	if err := idle.Begin(ctx, asIdle); err != nil {
		return err
	}
	defer idle.End(asIdle)
	return fn(broker, item)
}
