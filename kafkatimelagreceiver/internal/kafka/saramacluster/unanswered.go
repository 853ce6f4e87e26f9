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
// are watched: while a call runs, a connection that has been waiting for an
// answer for longer than the call's request budget is cut, and its broker
// is skipped (dialing it fails at once, so sarama's lookups move on to the
// next broker) for a backoff that doubles while it keeps not answering.

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

// watch cuts, until the returned stop, the connections that have been
// waiting for an answer for longer than the call's request budget, and
// skips their brokers. Every call that sends requests runs under one.
func (c *Cluster) watch(ctx context.Context) (stop func()) {
	return c.conns.watch(c.requestBudget(ctx))
}

// watch checks the connections watchTicks times per budget.
func (cs *connections) watch(budget time.Duration) (stop func()) {
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
		cs.cutUnanswered(budget)
		timer.Reset(every)
	}
	mu.Lock()
	timer = time.AfterFunc(every, check)
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		timer.Stop()
	}
}

// cutUnanswered closes the connections waiting for an answer for longer
// than budget, and skips their brokers.
func (cs *connections) cutUnanswered(budget time.Duration) {
	now := time.Now()
	before := now.Add(-budget).UnixNano()
	cs.mu.Lock()
	var victims []*trackedConn
	for tc := range cs.open {
		if since := tc.awaiting.Load(); since != 0 && since <= before {
			victims = append(victims, tc)
		}
	}
	cs.mu.Unlock()
	for _, tc := range victims {
		cs.health.unanswered(tc.addr, budget, now)
		err := fmt.Errorf("broker %s did not answer within %s: %w", tc.addr, budget, context.DeadlineExceeded)
		tc.cause.Store(&err)
		_ = tc.Close()
	}
}

// answeringBroker is the least loaded broker not skipped for silence, of
// those Identify would ask, for a request any broker answers; nil: none.
func (c *Cluster) answeringBroker(client sarama.Client) *sarama.Broker {
	now := time.Now()
	for _, b := range identifyCandidates(client) {
		if c.conns.health.skipping(b.Addr(), now) == nil {
			return b
		}
	}
	return nil
}
