package brokerwatch

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The scenarios of the rules in budget.go played on a Watch: real
// connections to brokers on the loopback that read requests and answer
// only when told, and a manual clock, so that each cut is asserted at the
// instant the rules make it and not a tick before.

// listOffsetsRequest is the start of a ListOffsets request (API key 2) as
// a client writes it: size, API key, version.
var listOffsetsRequest = []byte{0, 0, 0, 4, 0, 2, 0, 0}

// testBroker accepts connections and reads what is written to them; it
// answers only through answer.
type testBroker struct {
	addr  string
	mu    sync.Mutex
	conns []net.Conn
	// arrived is told of each connection the listener took.
	arrived chan struct{}
}

func newTestBroker(t *testing.T) *testBroker {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b := &testBroker{addr: l.Addr().String(), arrived: make(chan struct{}, 16)}
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.conns = append(b.conns, c)
			b.mu.Unlock()
			select {
			case b.arrived <- struct{}{}:
			default:
			}
			go func() { _, _ = c.Read(make([]byte, 1024)) }() // until closed
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-accepted
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, c := range b.conns {
			_ = c.Close()
		}
	})
	return b
}

// answer writes one byte of an answer on every connection.
func (b *testBroker) answer(t *testing.T) {
	// The client's dial returns before the listener's goroutine has taken
	// the connection: wait for it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		b.mu.Lock()
		n := len(b.conns)
		b.mu.Unlock()
		if n > 0 {
			break
		}
		select {
		case <-b.arrived:
		case <-ctx.Done():
			t.Fatal("no connection reached the test broker")
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	require.NotEmpty(t, b.conns)
	for _, c := range b.conns {
		_, err := c.Write([]byte{0})
		require.NoError(t, err)
	}
}

// deadlineOnly is a context whose deadline is on the manual clock: Begin
// reads it, and it never ends by itself.
type deadlineOnly struct {
	context.Context
	deadline time.Time
}

func (d deadlineOnly) Deadline() (time.Time, bool) { return d.deadline, true }

func within(clock *manualClock, d time.Duration) context.Context {
	return deadlineOnly{Context: context.Background(), deadline: clock.Now().Add(d)}
}

// sendRequest dials addr through the watch and writes a request on the
// connection; the returned channel has the error of the read awaiting its
// answer (nil once a byte came).
func sendRequest(t *testing.T, w *Watch, addr string) (*requestConn, <-chan error) {
	t.Helper()
	conn, err := w.Dial("tcp", addr)
	require.NoError(t, err)
	_, err = conn.Write(listOffsetsRequest)
	require.NoError(t, err)
	read := make(chan error, 1)
	go func() {
		_, err := conn.Read(make([]byte, 1))
		read <- err
	}()
	t.Cleanup(func() { _ = conn.Close() })
	return conn.(*requestConn), read
}

func isCut(conn *requestConn) bool { return conn.tracked.closed.Load() }

// TestShortCallLeavesAnotherCallsSlowAnswerAlone: one call (a sample, with
// the minute-long budget of a long deadline) waits on a broker that answers
// late; meanwhile a call with the least budget (a scrape near its
// deadline: a second) gives up on a broker of its own that answers
// nothing. The short call cuts its own connection at the first check past
// its budget, but the slow answer it never asked for is left to the call
// waiting for it, which gets it, and neither broker is skipped: the long
// call may have sent the silent broker's request too, and still waits.
func TestShortCallLeavesAnotherCallsSlowAnswerAlone(t *testing.T) {
	clock := newManualClock()
	w := New(clock, time.Second, time.Second, nil)
	t.Cleanup(w.Close)
	slow, silent := newTestBroker(t), newTestBroker(t)

	long, endLong := w.Begin(within(clock, 3*time.Minute), 10*time.Minute)
	defer endLong()
	require.Equal(t, time.Minute, long.Budget().Request)
	defer long.WaitingOn(slow.addr)()
	slowConn, slowRead := sendRequest(t, w, slow.addr)

	short, endShort := w.Begin(within(clock, 3*time.Second), 10*time.Minute)
	defer endShort()
	require.Equal(t, time.Second, short.Budget().Request)
	defer short.WaitingOn(silent.addr)()
	silentConn, silentRead := sendRequest(t, w, silent.addr)

	// The short call checks every quarter of its budget: at 1 s the
	// request has waited exactly its budget, not longer.
	clock.Advance(time.Second)
	require.False(t, isCut(silentConn), "cut before the short call's budget was spent")
	require.NoError(t, short.GaveUpOn(silent.addr))
	clock.Advance(time.Second / watchTicks)
	require.True(t, isCut(silentConn), "cut at the first check past the short call's budget")
	var cut *NotAnsweredError
	require.ErrorAs(t, <-silentRead, &cut)
	require.Equal(t, NotAnsweredError{Addr: silent.addr, Budget: time.Second}, *cut)
	require.ErrorIs(t, short.GaveUpOn(silent.addr), ErrNotAnswering, "the short call asks that broker nothing more")

	require.False(t, isCut(slowConn), "the slow answer is not cut by a call that did not ask for it")
	slow.answer(t)
	require.NoError(t, <-slowRead, "the long call gets its answer")
	require.NoError(t, long.GaveUpOn(slow.addr))
	require.NoError(t, w.Skipping(slow.addr), "the slow broker is not skipped")
	require.NoError(t, w.Skipping(silent.addr), "nor the silent one: the long call, which may have sent its request, still waits")
}

// TestCallQueuedBehindAnotherCallsUnansweredRequestGivesUp: a broker
// answers nothing; a call with a long budget (a sample: ten minutes) sent
// to it first, and a call with a short budget (a scrape: three seconds of
// its nine) waits on it next, held by the client until the first request
// is answered. The short call does not wait for the long budget: at the
// first check past its own, it cuts the connection, naming its budget,
// and gives up on the broker, which is not skipped for the long call.
func TestCallQueuedBehindAnotherCallsUnansweredRequestGivesUp(t *testing.T) {
	clock := newManualClock()
	w := New(clock, time.Second, time.Second, nil)
	t.Cleanup(w.Close)
	wedged := newTestBroker(t)

	long, endLong := w.Begin(within(clock, 30*time.Minute), 10*time.Minute)
	defer endLong()
	require.Equal(t, 10*time.Minute, long.Budget().Request)
	defer long.WaitingOn(wedged.addr)()
	conn, read := sendRequest(t, w, wedged.addr)

	clock.Advance(time.Second)
	short, endShort := w.Begin(within(clock, 9*time.Second), 10*time.Minute)
	defer endShort()
	require.Equal(t, 3*time.Second, short.Budget().Request)
	defer short.WaitingOn(wedged.addr)() // queued: it writes nothing

	clock.Advance(3 * time.Second)
	require.False(t, isCut(conn), "cut before the short call waited its budget")
	clock.Advance(3 * time.Second / watchTicks)
	require.True(t, isCut(conn), "cut at the first check past the short call's budget, not at its deadline nor the long call's")
	var cut *NotAnsweredError
	require.ErrorAs(t, <-read, &cut)
	require.Equal(t, NotAnsweredError{Addr: wedged.addr, Budget: 3 * time.Second}, *cut, "the short call gave up on the broker on its own budget")
	require.ErrorIs(t, short.GaveUpOn(wedged.addr), ErrNotAnswering)
	require.NoError(t, long.GaveUpOn(wedged.addr), "the long call has not given up")
	require.NoError(t, w.Skipping(wedged.addr), "not skipped: the long call still waits for its answer")
}

// TestSilentBrokerIsSkippedFromTheCutOn: a broker that answers nothing to
// the only call that may have asked it is cut at the first check past that
// call's budget and skipped for requestShare budgets from that instant
// (Rules 3 and 5): a dial before the end of the skip is refused, one at
// its end goes through.
func TestSilentBrokerIsSkippedFromTheCutOn(t *testing.T) {
	clock := newManualClock()
	w := New(clock, time.Second, time.Second, nil)
	t.Cleanup(w.Close)
	silent := newTestBroker(t)

	call, end := w.Begin(within(clock, 6*time.Second), 10*time.Minute)
	defer end()
	require.Equal(t, 2*time.Second, call.Budget().Request)
	conn, read := sendRequest(t, w, silent.addr)
	clock.Advance(2 * time.Second)
	require.False(t, isCut(conn))
	require.NoError(t, w.Skipping(silent.addr))
	clock.Advance(2 * time.Second / watchTicks)
	require.True(t, isCut(conn))
	require.True(t, errors.Is(<-read, context.DeadlineExceeded), "a cut for not answering is a deadline exceeded")
	cutAt := clock.Now()

	require.ErrorIs(t, w.Skipping(silent.addr), ErrNotAnswering)
	_, err := w.Dial("tcp", silent.addr)
	require.ErrorIs(t, err, ErrNotAnswering, "no new connection while skipped")
	clock.Advance(requestShare*2*time.Second - time.Nanosecond)
	require.ErrorIs(t, w.Skipping(silent.addr), ErrNotAnswering, "skipped until requestShare budgets after the cut")
	clock.Advance(time.Nanosecond)
	require.Equal(t, cutAt.Add(requestShare*2*time.Second), clock.Now())
	require.NoError(t, w.Skipping(silent.addr), "asked again once the skip is over")
}
