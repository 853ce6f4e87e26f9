// Package brokerwatch watches a Kafka client's broker connections across
// calls, without the client: a call gets its Budget once, from its
// deadline (Watch.Begin), hands it to everything it sends, and a
// connection awaiting an answer for longer than the calls waiting on it
// will wait is cut, its broker skipped when it answers nothing at all.
//
// Everything that decides when a request is cut is in three files:
//   - budget.go here: the rules (Rules 1-7), each a short function, stated
//     by one table-driven test;
//   - calls.go here: the calls running, which apply them (cutUnanswered),
//     and the cut of a call's connections when its context ends
//     (Call.CutAtEnd, which PerBroker uses);
//   - saramaconfig's config.go: the client's own read deadline
//     (request_timeout), which bounds a request no call waits on any more.
//
// Every instant they compare is read from the watch's Clock (clock.go), so
// watch_test.go plays each rule's scenario on real connections at the
// instants it names.
//
// The deadline itself is the caller's: the scrape's context (`timeout`,
// else the collection interval, and the receiver's shutdown), or the
// sampler's (request_timeout).
package brokerwatch

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// A broker that accepts connections and reads requests but answers none (a
// broker stuck on its disk, a half-open network path) must cost a scrape
// no more than what it leads or coordinates, and a broker that answers
// late (a loaded controller) nothing its answer arrives in time for. The
// client gives a request no deadline but its read timeout, and its
// lookups take no context and pick a broker of their own; so the
// connections are watched: a request on the wire can only be tied to the
// calls running when it was written (its sender is one of them) and to the
// calls waiting on its broker.

const (
	// requestShare is the part of a call's time left that one request of
	// its own may wait for its answer: a third, so that a broker that does
	// not answer leaves most of a scrape to the others.
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

// Budget is what one call may wait for the brokers, made once from its
// deadline (Begin) and handed to everything the call sends.
type Budget struct {
	// Request is how long one request the call sends to a broker of its
	// choosing may wait for its answer before the call gives up on it.
	Request time.Duration
	// Deadline is when the call ends; zero for a call without one.
	Deadline time.Time
}

// NewBudget is the budget of a call with the deadline (zero: none), given
// the client's request timeout: Rule 1.
func NewBudget(now, deadline time.Time, requestTimeout time.Duration) Budget {
	budget := requestTimeout
	if !deadline.IsZero() {
		budget = min(budget, deadline.Sub(now)/requestShare)
	}
	return Budget{Request: max(budget, minRequestBudget), Deadline: deadline}
}

// Rule 1 (NewBudget): a request the call sends to a broker it chose (a
// leader, a coordinator) may wait the request timeout, or a requestShare of
// the call's time left when that is shorter, and at least
// minRequestBudget.

// verdict is what the running calls make of a connection awaiting an
// answer.
type verdict struct {
	cut    bool
	silent bool          // the broker did not answer in time: skip it
	budget time.Duration // that the answer was awaited for; sets the skip
	// waitersDone are the calls that waited on the broker past their
	// budget.
	waitersDone []*Call
}

// waitsUntil is until when (unix nanoseconds) the call waits for an answer
// it began to wait for at from: Rules 1 and 2.
func (b Budget) waitsUntil(from int64, lookup bool) int64 {
	until := from + int64(b.Request)
	if lookup && !b.Deadline.IsZero() {
		until = max(until, b.Deadline.UnixNano())
	}
	return until
}

// Rule 2 (waitsUntil): a lookup's request (isLookup), which any broker
// answers and which the calls cannot go on without, is waited for until
// the deadline of the calls that wait on it: a broker that answers it late
// but within their time is slow, not silent. Cutting it would only send
// the client to another broker as loaded (a lookup is slow on every broker
// of a loaded cluster), and sarama forgets a broker whose metadata request
// failed until its next refresh. The calls stop waiting at their deadline
// without cutting (Lookup), so that the answer still reaches the next call.

// Fits tells whether a wait as long as took ends before the call's
// deadline: Rule 7.
func (b Budget) Fits(now time.Time, took time.Duration) bool {
	return b.Deadline.IsZero() || now.Add(took).Before(b.Deadline)
}

// Rule 7 (Fits): a call waits for a lookup it may do without (a second
// chance at a partition whose leader moved) only when the last lookup like
// it would end within the call's time; otherwise the lookup runs in the
// background (Background), for the next call, and the call goes on with
// what it has, leaving its time to its other reads.

// isLookup tells whether a request of the API is a lookup's: Metadata or
// FindCoordinator.
func isLookup(apiKey int16) bool {
	const metadata, findCoordinator = 3, 10
	return apiKey == metadata || apiKey == findCoordinator
}

// judge gives the verdict of the calls on a connection to addr that has
// been awaiting an answer since the unix nanosecond since, to a lookup's
// request or not: Rules 3 and 4.
func judge(calls []*Call, addr string, lookup bool, since, now int64) verdict {
	var (
		senderWaiting bool          // a call that may have sent it still waits for it
		overdue       time.Duration // the longest budget of the calls past theirs
		waiterDone    time.Duration // the longest budget of the calls that waited on addr past it
		waitersDone   []*Call
	)
	for _, w := range calls {
		if waiting, ok := w.waitingSince(addr); ok && now > w.budget.waitsUntil(max(since, waiting), lookup) {
			waiterDone = max(waiterDone, w.budget.Request)
			waitersDone = append(waitersDone, w)
		}
		switch {
		case w.started <= since && now <= w.budget.waitsUntil(since, lookup):
			senderWaiting = true
		case w.started <= since:
			overdue = max(overdue, w.budget.Request)
		case now > w.budget.waitsUntil(w.started, lookup):
			// Not its request (a background refresh's, say), but maybe
			// one it waits on all the same (the client joins a metadata
			// refresh in progress).
			overdue = max(overdue, w.budget.Request)
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

// Rule 3 (judge, silent): the broker did not answer in time when no call
// that may have sent the request still waits for it, and a call has run
// for longer than it would wait: the connection is cut and the broker
// skipped for everyone. A call with little time left (a scrape near its
// deadline) thus never judges the slow answer that another call with time
// to spare still awaits.
//
// Rule 4 (judge, given up): a call waiting on a broker (that it asked, or
// in a lookup) for longer than it would wait stops waiting: the connection
// is cut all the same, since the client holds a connection for one request
// at a time and gives no other way to stop waiting for it, and the call
// asks that broker nothing more, but the broker is not skipped for the
// others. This keeps a scrape going on with the other brokers when the
// sampler, with its longer budget, asked a wedged broker first.

// ErrNotAnswering is wrapped by the errors of requests not sent to a
// broker that is being skipped, or that the call gave up on.
var ErrNotAnswering = errors.New("skipped: it did not answer in time")

// skippedError says which broker is skipped, and until when.
type skippedError struct {
	until time.Time
}

func (e *skippedError) Error() string {
	return fmt.Sprintf("%v; asked again from %s", ErrNotAnswering, e.until.UTC().Format(time.RFC3339Nano))
}

func (e *skippedError) Unwrap() error { return ErrNotAnswering }

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

// Rule 5 (unanswered, answered): a silent broker is skipped for
// requestShare budgets (what was left of the call that found it: the rest
// of a scrape or sample), doubled for every time in a row it did not
// answer, up to maxSkip; answering ends the doubling, not the skip in
// force.

// unanswered skips addr after a silent verdict with the budget.
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

// Rule 6 (Call.CutAtEnd, in calls.go): when a call's context ends, the
// connections of the brokers it still waits on directly are cut, which
// ends their requests in flight at once; a lookup it waits in is left to
// go on (Lookup).
