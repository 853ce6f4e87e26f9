package brokerwatch

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
		require.ErrorIs(t, err, ErrNotAnswering)
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

// TestDeadlineRules states the rules of budget.go, with the calls' times
// made up: each row is calls running (their budget made from their
// deadline as Begin makes it, or given), a request written at 10 s, and
// the verdict at now: whether the request's connection is cut, and whether
// its broker is then taken for silent.
func TestDeadlineRules(t *testing.T) {
	const addr = "b:9092"
	at := func(seconds float64) int64 { return int64(seconds * float64(time.Second)) }
	clock := func(seconds float64) time.Time { return time.Unix(0, at(seconds)) }
	// call has a request budget of budgetSeconds and no deadline, and waits
	// on the broker (directly) since each of waitsSince.
	call := func(budgetSeconds, startedAt float64, waitsSince ...float64) *Call {
		w := &Call{budget: Budget{Request: time.Duration(at(budgetSeconds))}, started: at(startedAt), waits: map[string]brokerWait{}}
		for _, since := range waitsSince {
			w.waits[addr] = brokerWait{since: at(since), count: 1}
		}
		return w
	}
	// deadlineCall is a call begun at startedAt with its deadline at
	// deadline and a request timeout of 10 s (Rule 1), waiting on the
	// broker since waitsSince.
	deadlineCall := func(startedAt, deadline float64, waitsSince ...float64) *Call {
		w := call(0, startedAt, waitsSince...)
		w.budget = NewBudget(clock(startedAt), clock(deadline), 10*time.Second)
		return w
	}
	cut := func(silent bool, budgetSeconds float64) verdict {
		return verdict{cut: true, silent: silent, budget: time.Duration(at(budgetSeconds))}
	}
	for _, tc := range []struct {
		name   string
		calls  []*Call
		lookup bool    // the request is a lookup's
		now    float64 // the request was written at 10 s
		want   verdict
	}{
		// Rule 1: a request budget is a third of the time left, at least
		// 1 s, at most the request timeout.
		{"rule 1: a third of the time left, within it", []*Call{deadlineCall(9, 15, 10)}, false, 11.9, verdict{}},
		{"rule 1: a third of the time left, past it", []*Call{deadlineCall(9, 15, 10)}, false, 12.1, cut(true, 2)},
		{"rule 1: at least a second, within it", []*Call{deadlineCall(9, 11, 10)}, false, 10.9, verdict{}},
		{"rule 1: at least a second, past it", []*Call{deadlineCall(9, 11, 10)}, false, 11.1, cut(true, 1)},
		{"rule 1: at most the request timeout", []*Call{deadlineCall(9, 100, 10)}, false, 20.1, cut(true, 10)},
		// Rule 2: a lookup's request is waited for until the deadline of
		// the calls that wait on it.
		{"rule 2: a lookup's request past the request budget, before the deadline", []*Call{deadlineCall(9, 11.5, 10)}, true, 11.4, verdict{}},
		{"rule 2: a lookup's request past the deadline of every call", []*Call{deadlineCall(9, 11.5, 10)}, true, 11.6, cut(true, 1)},
		{"rule 2: a lookup's request no sooner than the request budget", []*Call{deadlineCall(9, 10.5, 10)}, true, 10.9, verdict{}},
		{"rule 2: a call queued behind a lookup's request, before its deadline", []*Call{call(60, 9), deadlineCall(10.5, 13.5, 10.5)}, true, 12, verdict{}},
		{"rule 2: a call queued behind another request, past its budget", []*Call{call(60, 9), deadlineCall(10.5, 13.5, 10.5)}, false, 12, cut(false, 1)},
		{"rule 2: a lookup's request of a call without a deadline, past the request timeout", []*Call{call(1, 9)}, true, 11.1, cut(true, 1)},
		// Rule 3: silent when no call that may have sent it is within its
		// patience, and a call is past its budget.
		{"rule 3: one call, within its budget", []*Call{call(1, 9)}, false, 10.9, verdict{}},
		{"rule 3: one call, past its budget", []*Call{call(1, 9)}, false, 11.1, cut(true, 1)},
		{"rule 3: a call that may have sent it is within its budget", []*Call{call(1, 9), call(3, 9.5)}, false, 11.5, verdict{}},
		{"rule 3: every call that may have sent it is past its budget", []*Call{call(1, 9), call(3, 9.5)}, false, 13.1, cut(true, 3)},
		{"rule 3: a call begun since, past its budget, with a possible sender within its own", []*Call{call(3, 9), call(1, 10.5)}, false, 12, verdict{}},
		{"rule 3: a call begun since is past its budget and no call may have sent it", []*Call{call(1, 10.5)}, false, 11.6, cut(true, 1)},
		{"rule 3: a call begun since, within its budget, and no call may have sent it", []*Call{call(1, 10.5)}, false, 11.4, verdict{}},
		// Rule 4: a call waiting on the broker gives up on it past
		// its request budget, without skipping it.
		{"rule 4: a call waiting on the broker past its budget, a possible sender within its own", []*Call{call(60, 9), call(1, 10.5, 10.5)}, false, 11.6, cut(false, 1)},
		{"rule 4: a call waiting on the broker within its budget", []*Call{call(60, 9), call(1, 10.5, 10.5)}, false, 11.4, verdict{}},
		{"rule 4: a call waiting on the broker since before the request counts from the request", []*Call{call(60, 9), call(1, 5, 5)}, false, 10.9, verdict{}},
		{"rule 4: a call waiting on the broker past its budget, no possible sender within its own", []*Call{call(1, 9, 9)}, false, 11.1, cut(true, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := judge(tc.calls, addr, tc.lookup, at(10), at(tc.now))
			got.waitersDone = nil
			require.Equal(t, tc.want, got)
		})
	}
	// Rule 5: a silent broker is skipped for requestShare budgets, doubled
	// while it keeps not answering (TestUnansweredBrokerBackoff), and
	// Rule 7: a call waits for a lookup it may do without only when the
	// last one like it would end in its time.
	for _, tc := range []struct {
		name string
		got  func() any
		want any
	}{
		{"rule 5: a first skip lasts what was left of the call", func() any {
			var h brokerHealth
			h.unanswered(addr, time.Second, clock(10))
			return h.skipped[addr].until
		}, clock(13)},
		{"rule 7: a lookup that ends in time is waited for", func() any {
			return NewBudget(clock(9), clock(11), 10*time.Second).Fits(clock(9.4), 1500*time.Millisecond)
		}, true},
		{"rule 7: a lookup that would end past the deadline is not", func() any {
			return NewBudget(clock(9), clock(11), 10*time.Second).Fits(clock(9.6), 1500*time.Millisecond)
		}, false},
		{"rule 7: a call without a deadline waits", func() any {
			return NewBudget(clock(9), time.Time{}, 10*time.Second).Fits(clock(9.6), time.Hour)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.got())
		})
	}
}

// TestCutAtEndClosesTheCallsConnections is Rule 6: when a call's context
// ends, the connections to the brokers it still waits on are cut, which
// ends a read waiting on them at once; those to other brokers stay open.
func TestCutAtEndClosesTheCallsConnections(t *testing.T) {
	listen := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				t.Cleanup(func() { _ = c.Close() })
			}
		}()
		return l.Addr().String()
	}
	waited, other := listen(), listen()
	w := New(SystemClock(), time.Second, time.Second, nil)
	t.Cleanup(w.Close)
	ctx, cancel := context.WithCancel(context.Background())
	call, end := w.Begin(ctx, time.Minute)
	defer end()
	cut, err := w.Dial("tcp", waited)
	require.NoError(t, err)
	kept, err := w.Dial("tcp", other)
	require.NoError(t, err)
	stop := call.CutAtEnd(ctx, func() map[string]bool { return map[string]bool{waited: true} })
	read := make(chan error, 1)
	go func() {
		_, err := cut.Read(make([]byte, 1))
		read <- err
	}()
	cancel()
	require.ErrorIs(t, <-read, net.ErrClosed, "the read ends when the call's context does")
	stop()
	require.NoError(t, kept.SetReadDeadline(time.Now().Add(10*time.Millisecond)))
	_, err = kept.Read(make([]byte, 1))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "the other broker's connection is open")
}
