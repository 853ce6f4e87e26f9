package saramacluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

// A broker that accepts connections and reads requests but answers none (a
// broker stuck on its disk, a half-open network path) must cost a scrape
// no more than what it leads or coordinates. sarama gives a request no
// deadline but its read timeout (`timeout`, 10 s by default, which can be
// longer than the scrape), and its metadata and coordinator lookups take no
// context and pick a broker of their own. So the connections themselves
// are watched: while calls run, a connection that has been waiting for an
// answer for longer than the calls waiting on it will wait is cut, and its
// broker is skipped (dialing it fails at once, so sarama's lookups move on
// to the next broker) for a backoff that doubles while it keeps not
// answering.
//
// Connections are shared by the calls running at once (a scrape's reads,
// the background sampler, a metadata refresh), and a call's budget depends
// on how much time it has left: one call's budget must not judge the
// request of another. Yet sarama sends without a context, so a request on
// the wire cannot be tied to the call that sent it. What is known is which
// calls were running when it was written (its sender is one of them), and
// which calls wait on a broker, because they sent to it themselves
// (perBroker, metadata) or are in one of sarama's lookups, which waits on
// every broker (lookingUp). Hence two verdicts:
//
//   - The broker did not answer in time, when no call that may have sent
//     the request is still within its budget, and a call has run for longer
//     than its own: the connection is cut and the broker skipped. A call
//     with little time left (a scrape near its deadline) thus never judges
//     the slow answer that another call with time to spare still awaits.
//   - A call waiting on the broker cannot wait any longer, when it has
//     waited for longer than its own budget: the connection is cut all the
//     same, since sarama holds a connection for one request at a time and
//     gives no other way to stop waiting for it, and the call asks that
//     broker nothing more, but the broker is not skipped for the others.
//     This keeps a scrape going on with the other brokers when the
//     sampler, with its longer budget, asked a wedged broker first, without
//     skipping for everyone a broker that is merely slower than the
//     scrape's budget.

const (
	// requestShare is the part of a call's time left that one request may
	// wait for its answer: a third, so that a broker that does not answer
	// leaves most of a scrape to the others.
	requestShare = 3
	// minRequestBudget is the least a broker is given to begin answering
	// before it is taken for silent: brokers answer in milliseconds, but a
	// CPU-starved host (or broker) can take hundreds, and a broker skipped
	// wrongly costs what it leads or coordinates for the rest of the call.
	minRequestBudget = time.Second
	// watchTicks is how many times per budget the connections are checked.
	watchTicks = 4
	// maxSkip bounds the backoff of a broker that keeps not answering: it
	// is asked again at least this often.
	maxSkip = time.Minute
)

// errNotAnswering is wrapped by the errors of requests not sent to a
// broker that is being skipped.
var errNotAnswering = errors.New("skipped: it did not answer in time")

// skippedError says which broker is skipped, and until when.
type skippedError struct {
	until time.Time
}

func (e *skippedError) Error() string {
	return fmt.Sprintf("%v; asked again from %s", errNotAnswering, e.until.UTC().Format(time.RFC3339Nano))
}

func (e *skippedError) Unwrap() error { return errNotAnswering }

// brokerHealth remembers the brokers that did not answer, by address.
type brokerHealth struct {
	mu      sync.Mutex
	skipped map[string]skip
}

type skip struct {
	until   time.Time
	strikes int
}

// skipping returns an error when requests to addr are not to be sent now.
func (h *brokerHealth) skipping(addr string, now time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.skipped[addr]; ok && now.Before(s.until) {
		return &skippedError{until: s.until}
	}
	return nil
}

// unanswered skips addr for requestShare budgets, doubled for every time in
// a row it did not answer, up to maxSkip.
func (h *brokerHealth) unanswered(addr string, budget time.Duration, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.skipped == nil {
		h.skipped = map[string]skip{}
	}
	s := h.skipped[addr]
	if now.Before(s.until) {
		return // already skipped: one strike per outage window
	}
	s.strikes++
	// The first skip lasts for what was left of the call that found it
	// (requestShare budgets): the rest of a scrape or sample.
	backoff := requestShare * budget << min(s.strikes-1, 16)
	s.until = now.Add(min(backoff, maxSkip))
	h.skipped[addr] = s
}

// answered forgets that addr did not answer, once its skip is over: a
// broker that answers some requests (on another connection) and not others
// is still skipped for the rest of the call that found it out.
func (h *brokerHealth) answered(addr string, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.skipped[addr]
	switch {
	case !ok:
	case now.Before(s.until):
		s.strikes = 0
		h.skipped[addr] = s
	default:
		delete(h.skipped, addr)
	}
}

// requestBudget is how long one request of a call may wait for its answer:
// the request timeout, or a requestShare of the call's time left when that
// is shorter.
func (c *Cluster) requestBudget(ctx context.Context) time.Duration {
	budget := c.config.Net.ReadTimeout
	if deadline, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(deadline)/requestShare)
	}
	return max(budget, minRequestBudget)
}

// watch registers the call running under ctx until the returned stop, so
// that its budget judges the requests it may have sent or waits on (see
// cutUnanswered), and checks the connections meanwhile. Every call that
// sends requests runs under one, with the returned context.
func (c *Cluster) watch(ctx context.Context) (context.Context, func()) {
	w, stop := c.conns.watch(c.requestBudget(ctx))
	return context.WithValue(ctx, callWatchKey{}, w), stop
}

// callWatchKey is the context key of the call's callWatch.
type callWatchKey struct{}

// callWatch is one running call, as the cut rule sees it. Its fields are
// guarded by the connections' mu.
type callWatch struct {
	budget time.Duration
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

// gaveUpOn returns an error when the call running under ctx stopped waiting
// on the broker at addr, which it is then not to ask again.
func (cs *connections) gaveUpOn(ctx context.Context, addr string) error {
	w, ok := ctx.Value(callWatchKey{}).(*callWatch)
	if !ok {
		return nil
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if w.gaveUp[addr] {
		return fmt.Errorf("%w within this call's budget", errNotAnswering)
	}
	return nil
}

// waitingSince is since when (unix nanoseconds) the call has been waiting
// on the broker at addr, by itself or in a lookup; false when it is not.
func (w *callWatch) waitingSince(addr string) (int64, bool) {
	direct, waits := w.waits[addr]
	lookup, looking := w.waits[anyBroker]
	switch {
	case waits && looking:
		return min(direct.since, lookup.since), true
	case looking:
		return lookup.since, true
	}
	return direct.since, waits
}

// brokerWait is how long a call has been waiting on one broker.
type brokerWait struct {
	since int64 // unix nanoseconds, of the first of the waits in progress
	count int   // waits in progress
}

// waitingOn records, until the returned done, that the call running under
// ctx waits on the answer of the broker at addr. A context without a watch
// records nothing.
func (cs *connections) waitingOn(ctx context.Context, addr string) (done func()) {
	w, ok := ctx.Value(callWatchKey{}).(*callWatch)
	if !ok {
		return func() {}
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	bw := w.waits[addr]
	if bw.count == 0 {
		bw.since = time.Now().UnixNano()
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

// anyBroker, as the address of a wait, is every broker.
const anyBroker = ""

// lookingUp records, until the returned done, that the call running under
// ctx waits on every broker: sarama's lookups (metadata, coordinators,
// leaders, the least loaded broker) pick a broker of their own, join a
// metadata refresh already in flight, and lock every broker in turn to
// weigh its load, which waits for the request each one has on the wire.
func (c *Cluster) lookingUp(ctx context.Context) (done func()) {
	return c.conns.waitingOn(ctx, anyBroker)
}

// watch registers a call with the budget, and checks the connections
// watchTicks times per budget while it runs.
func (cs *connections) watch(budget time.Duration) (*callWatch, func()) {
	w := &callWatch{budget: budget, started: time.Now().UnixNano(), waits: map[string]brokerWait{}, gaveUp: map[string]bool{}}
	cs.mu.Lock()
	cs.watches[w] = struct{}{}
	cs.mu.Unlock()
	var (
		mu      sync.Mutex
		stopped bool
		timer   *time.Timer
	)
	every := budget / watchTicks
	check := func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		cs.cutUnanswered(time.Now())
		timer.Reset(every)
	}
	mu.Lock()
	timer = time.AfterFunc(every, check)
	mu.Unlock()
	return w, func() {
		mu.Lock()
		stopped = true
		timer.Stop()
		mu.Unlock()
		cs.mu.Lock()
		delete(cs.watches, w)
		cs.mu.Unlock()
	}
}

// cutUnanswered closes the connections that the running calls have given
// up on (see the verdicts at the top of this file), and skips the brokers
// found not to answer.
func (cs *connections) cutUnanswered(now time.Time) {
	type victim struct {
		tc *trackedConn
		v  verdict
	}
	var victims []victim
	cs.mu.Lock()
	for tc := range cs.open {
		if since := tc.awaiting.Load(); since != 0 {
			if v := cs.judge(tc.addr, since, now.UnixNano()); v.cut {
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
		err := fmt.Errorf("broker %s did not answer within %s: %w", victim.tc.addr, victim.v.budget, context.DeadlineExceeded)
		victim.tc.cause.Store(&err)
		_ = victim.tc.Close()
	}
}

// verdict is what the running calls make of a connection awaiting an
// answer.
type verdict struct {
	cut    bool
	silent bool          // the broker did not answer in time: skip it
	budget time.Duration // that the answer was awaited for; sets the skip
	// waitersDone are the calls that waited on the broker past their
	// budget.
	waitersDone []*callWatch
}

// judge gives the verdict on a connection to addr that has been awaiting
// an answer since the unix nanosecond since. cs.mu must be held.
func (cs *connections) judge(addr string, since, now int64) verdict {
	var (
		senderWaiting bool          // a call that may have sent it is within its budget
		overdue       time.Duration // the longest budget of the calls past theirs
		waiterDone    time.Duration // the longest budget of the calls that waited on addr past it
		waitersDone   []*callWatch
	)
	for w := range cs.watches {
		budget := int64(w.budget)
		if waiting, ok := w.waitingSince(addr); ok && now-max(since, waiting) > budget {
			waiterDone = max(waiterDone, w.budget)
			waitersDone = append(waitersDone, w)
		}
		switch {
		case w.started <= since && now-since <= budget:
			senderWaiting = true
		case w.started <= since:
			overdue = max(overdue, w.budget)
		case now-w.started > budget:
			// Not its request (a background refresh's, say), but maybe
			// one it waits on all the same (sarama joins a metadata
			// refresh in progress).
			overdue = max(overdue, w.budget)
		}
	}
	switch {
	case overdue > 0 && !senderWaiting:
		return verdict{cut: true, silent: true, budget: overdue, waitersDone: waitersDone}
	case waiterDone > 0:
		return verdict{cut: true, budget: waiterDone, waitersDone: waitersDone}
	}
	return verdict{}
}

// answeringBroker is the least loaded broker not skipped for silence, of
// those Identify would ask, for a request any broker answers; nil: none.
func (c *Cluster) answeringBroker(ctx context.Context, client sarama.Client) *sarama.Broker {
	defer c.lookingUp(ctx)()
	now := time.Now()
	for _, b := range identifyCandidates(client) {
		if c.conns.health.skipping(b.Addr(), now) == nil {
			return b
		}
	}
	return nil
}
