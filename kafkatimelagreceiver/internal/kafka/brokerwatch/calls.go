package brokerwatch

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"
)

// Call is one running call, as the cut rules see it: its budget, and the
// brokers it waits on. Its maps are guarded by the watch's mu.
type Call struct {
	watch  *Watch
	budget Budget
	// started is when the call began, in unix nanoseconds: a request
	// written before cannot be the call's.
	started int64
	// waits are the brokers, by address (anyBroker while in a lookup), that
	// the call waits on.
	waits map[string]brokerWait
	// gaveUp are the brokers, by address, that the call stopped waiting on:
	// it asks them nothing more.
	gaveUp map[string]bool
}

// brokerWait is how long a call has been waiting on one broker.
type brokerWait struct {
	since int64 // unix nanoseconds, of the first of the waits in progress
	count int   // waits in progress
}

// anyBroker, as the address of a wait, is every broker.
const anyBroker = ""

// Begin registers a call running under ctx until the returned end, with
// its budget made from ctx's deadline and the client's request timeout
// (NewBudget), and checks the connections watchTicks times per request
// budget while it runs. Every call that sends requests runs as one, and
// hands it to everything it sends.
func (cs *Watch) Begin(ctx context.Context, requestTimeout time.Duration) (*Call, func()) {
	now := cs.clock.Now()
	deadline, _ := ctx.Deadline()
	return cs.begin(NewBudget(now, deadline, requestTimeout), now)
}

// Budget is the call's budget.
func (w *Call) Budget() Budget { return w.budget }

// GaveUpOn returns an error when the call stopped waiting on the broker at
// addr, which it is then not to ask again.
func (w *Call) GaveUpOn(addr string) error {
	w.watch.mu.Lock()
	defer w.watch.mu.Unlock()
	if w.gaveUp[addr] {
		return fmt.Errorf("%w within this call's budget", ErrNotAnswering)
	}
	return nil
}

// WaitingOn records, until the returned done, that the call waits on the
// answer of the broker at addr, which it chose to ask.
func (w *Call) WaitingOn(addr string) (done func()) {
	cs := w.watch
	cs.mu.Lock()
	defer cs.mu.Unlock()
	bw := w.waits[addr]
	if bw.count == 0 {
		bw.since = cs.clock.Now().UnixNano()
	}
	bw.count++
	w.waits[addr] = bw
	return func() {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		bw := w.waits[addr]
		if bw.count--; bw.count == 0 {
			delete(w.waits, addr)
		} else {
			w.waits[addr] = bw
		}
	}
}

// LookingUp records, until the returned done, that the call waits on every
// broker: the client's lookups (metadata, coordinators, leaders, the least
// loaded broker) pick a broker of their own, join a metadata refresh
// already in flight, and lock every broker in turn to weigh its load, which
// waits for the request each one has on the wire.
func (w *Call) LookingUp() (done func()) {
	return w.WaitingOn(anyBroker)
}

// waitingSince is since when (unix nanoseconds) the call has been waiting
// on the broker at addr, by itself or in a lookup; false when it is not.
func (w *Call) waitingSince(addr string) (int64, bool) {
	own, waits := w.waits[addr]
	lookup, looking := w.waits[anyBroker]
	switch {
	case waits && looking:
		return min(own.since, lookup.since), true
	case looking:
		return lookup.since, true
	}
	return own.since, waits
}

// CutAtEnd cuts, once ctx ends, the connections of the brokers that
// pending names (the brokers the call still waits on directly): the
// client takes no context, and closing the socket ends the requests in
// flight at once (Rule 6). The returned stop ends the watch, and waits for
// a cut that began: run late, a cut would close the connection the next
// call opens to the same broker.
func (w *Call) CutAtEnd(ctx context.Context, pending func() map[string]bool) (stop func()) {
	cutDone := make(chan struct{})
	end := context.AfterFunc(ctx, func() {
		defer close(cutDone)
		w.watch.Cut(maps.Clone(pending()))
	})
	return func() {
		if !end() {
			<-cutDone
		}
	}
}

// begin registers a call with the budget, and checks the connections
// watchTicks times per request budget while it runs.
func (cs *Watch) begin(budget Budget, now time.Time) (*Call, func()) {
	w := &Call{watch: cs, budget: budget, started: now.UnixNano(), waits: map[string]brokerWait{}, gaveUp: map[string]bool{}}
	cs.mu.Lock()
	cs.calls[w] = struct{}{}
	cs.mu.Unlock()
	var (
		mu        sync.Mutex
		stopped   bool
		stopTimer func() bool
		check     func()
	)
	every := budget.Request / watchTicks
	check = func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		cs.cutUnanswered(cs.clock.Now())
		stopTimer = cs.clock.AfterFunc(every, check)
	}
	mu.Lock()
	stopTimer = cs.clock.AfterFunc(every, check)
	mu.Unlock()
	return w, func() {
		mu.Lock()
		stopped = true
		stopTimer()
		mu.Unlock()
		cs.mu.Lock()
		delete(cs.calls, w)
		cs.mu.Unlock()
	}
}

// NotAnsweredError is why the watch cut a connection: no answer came
// within Budget, the budget of the calls that gave up on it (Rules 3 and
// 4). It is a deadline exceeded.
type NotAnsweredError struct {
	Addr   string
	Budget time.Duration
}

func (e *NotAnsweredError) Error() string {
	return fmt.Sprintf("broker %s did not answer within %s: %v", e.Addr, e.Budget, context.DeadlineExceeded)
}

func (e *NotAnsweredError) Unwrap() error { return context.DeadlineExceeded }

// cutUnanswered closes the connections that the running calls have given
// up on (judge), and skips the brokers found not to answer.
func (cs *Watch) cutUnanswered(now time.Time) {
	type victim struct {
		tc *trackedConn
		v  verdict
	}
	var victims []victim
	cs.mu.Lock()
	calls := make([]*Call, 0, len(cs.calls))
	for w := range cs.calls {
		calls = append(calls, w)
	}
	for tc := range cs.open {
		if since := tc.awaiting.Load(); since != 0 {
			if v := judge(calls, tc.addr, tc.awaitingLookup.Load(), since, now.UnixNano()); v.cut {
				victims = append(victims, victim{tc, v})
				for _, w := range v.waitersDone {
					w.gaveUp[tc.addr] = true
				}
			}
		}
	}
	cs.mu.Unlock()
	for _, victim := range victims {
		if victim.v.silent {
			cs.health.unanswered(victim.tc.addr, victim.v.budget, now)
		}
		var err error = &NotAnsweredError{Addr: victim.tc.addr, Budget: victim.v.budget}
		victim.tc.cause.Store(&err)
		_ = victim.tc.Close()
	}
}
