package brokerwatch

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Watch dials the brokers for a Kafka client (as its dialer) and keeps
// every connection open, so that a request in flight can be cut. sarama
// takes no context and holds a broker's lock for the whole of a request:
// closing the broker waits for the request's read deadline, but closing the
// socket under it ends the request at once with an error. Cut connections
// are opened again by the next request that asks the client for the broker.
type Watch struct {
	dialer net.Dialer
	// wrap layers what the client's bytes go through above the socket
	// (TLS, the batch guard); nil: nothing.
	wrap func(conn net.Conn, addr string) net.Conn
	// life ends at Close, ending the dials in progress too.
	life    context.Context
	endLife context.CancelFunc

	// health is which brokers are skipped for not answering (budget.go).
	health brokerHealth
	// clock is what every instant the rules compare is read from, and
	// what the calls' checks are scheduled on.
	clock Clock

	// lookups are the client's lookups run for calls, which stop waiting
	// for them when their context ends (Lookup).
	lookups sync.WaitGroup

	mu   sync.Mutex
	open map[*trackedConn]struct{}
	// calls are the calls running (calls.go).
	calls  map[*Call]struct{}
	closed bool
}

var errConnectionsClosed = errors.New("kafka cluster access is closed: no new connection")

// New is a Watch on the clock, dialing with the timeout and keep-alive;
// wrap, when not nil, layers TLS or checks above each connection.
func New(clock Clock, dialTimeout, keepAlive time.Duration, wrap func(conn net.Conn, addr string) net.Conn) *Watch {
	life, endLife := context.WithCancel(context.Background())
	return &Watch{
		clock:   clock,
		dialer:  net.Dialer{Timeout: dialTimeout, KeepAlive: keepAlive},
		wrap:    wrap,
		life:    life,
		endLife: endLife,
		open:    map[*trackedConn]struct{}{},
		calls:   map[*Call]struct{}{},
	}
}

// Dial is the client's dialer; addr is the broker's address as the client
// knows it (sarama.Broker.Addr).
func (cs *Watch) Dial(network, addr string) (net.Conn, error) {
	return cs.dial(context.Background(), network, addr, nil)
}

// Skipping returns an error, wrapping ErrNotAnswering, when requests to the
// broker at addr are not to be sent now.
func (cs *Watch) Skipping(addr string) error {
	return cs.health.skipping(addr, cs.clock.Now())
}

// dial dials addr until ctx or the connections end, and tracks the
// connection, in attempt too when not nil.
func (cs *Watch) dial(ctx context.Context, network, addr string, attempt *Attempt) (net.Conn, error) {
	if cs.isClosed() {
		return nil, errConnectionsClosed
	}
	if err := cs.health.skipping(addr, cs.clock.Now()); err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(cs.life, cancel)
	defer stop()
	conn, err := cs.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: conn, owner: cs, addr: addr}
	cs.mu.Lock()
	if cs.closed {
		cs.mu.Unlock()
		_ = conn.Close()
		return nil, errConnectionsClosed
	}
	cs.open[tc] = struct{}{}
	cs.mu.Unlock()
	if attempt != nil && !attempt.track(tc) {
		_ = tc.Close()
		return nil, attempt.ctx.Err()
	}
	var wrapped net.Conn = tc
	if cs.wrap != nil {
		wrapped = cs.wrap(tc, addr)
	}
	return &requestConn{Conn: wrapped, tracked: tc}, nil
}

// requestConn is the client's side of a connection: it tells the tracked
// socket below (under TLS, if any) which request it awaits the answer of.
type requestConn struct {
	net.Conn
	tracked *trackedConn
}

// Write notes the API of a request that starts the wait for an answer: the
// client writes each request in one call, from its size on.
func (rc *requestConn) Write(p []byte) (int, error) {
	if len(p) >= 6 && rc.tracked.awaiting.Load() == 0 {
		rc.tracked.awaitingLookup.Store(isLookup(int16(binary.BigEndian.Uint16(p[4:6]))))
	}
	return rc.Conn.Write(p)
}

func (cs *Watch) isClosed() bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.closed
}

// Cut closes the open connections to the addresses.
func (cs *Watch) Cut(addrs map[string]bool) {
	cs.mu.Lock()
	var victims []*trackedConn
	for tc := range cs.open {
		if addrs[tc.addr] {
			victims = append(victims, tc)
		}
	}
	cs.mu.Unlock()
	for _, tc := range victims {
		_ = tc.Close()
	}
}

// Close closes every connection and refuses new ones.
func (cs *Watch) Close() {
	cs.endLife()
	cs.mu.Lock()
	cs.closed = true
	victims := make([]*trackedConn, 0, len(cs.open))
	for tc := range cs.open {
		victims = append(victims, tc)
	}
	cs.mu.Unlock()
	for _, tc := range victims {
		_ = tc.Close()
	}
}

// trackedConn forgets itself when closed, by sarama or by a cut, and
// knows since when it has been waiting for an answer.
type trackedConn struct {
	net.Conn
	owner  *Watch
	addr   string
	closed atomic.Bool
	// awaiting is when the first write since the last data read was made,
	// in unix nanoseconds; 0 when nothing is awaited. Responses come in
	// order: any data read means the broker is answering.
	awaiting atomic.Int64
	// awaitingLookup tells that the request awaited is a lookup's (isLookup).
	awaitingLookup atomic.Bool
	// cause, when a watch cut the connection, says why (see cutUnanswered).
	cause atomic.Pointer[error]
}

func (tc *trackedConn) Write(p []byte) (int, error) {
	tc.awaiting.CompareAndSwap(0, tc.owner.clock.Now().UnixNano())
	n, err := tc.Conn.Write(p)
	return n, tc.explain(err)
}

func (tc *trackedConn) Read(p []byte) (int, error) {
	n, err := tc.Conn.Read(p)
	if n > 0 && tc.awaiting.Swap(0) != 0 {
		tc.owner.health.answered(tc.addr, tc.owner.clock.Now())
	}
	return n, tc.explain(err)
}

// explain adds to the error of a read or write on a connection cut for
// not answering why it was cut.
func (tc *trackedConn) explain(err error) error {
	if err == nil {
		return nil
	}
	if cause := tc.cause.Load(); cause != nil {
		return fmt.Errorf("%w: %w", *cause, err)
	}
	return err
}

func (tc *trackedConn) Close() error {
	if !tc.closed.CompareAndSwap(false, true) {
		return nil
	}
	tc.owner.mu.Lock()
	delete(tc.owner.open, tc)
	tc.owner.mu.Unlock()
	return tc.Conn.Close()
}

// Attempt is the dialer of one sarama.NewClient call, which dials and
// asks the bootstrap brokers with no context: once ctx is done while it
// connects, its connections are cut and it dials no more, so that it fails
// at once. After the attempt (the returned finish), the client it made
// dials as usual.
type Attempt struct {
	conns *Watch
	ctx   context.Context

	mu       sync.Mutex
	finished bool
	opened   []*trackedConn
}

// Connecting is the dialer of a client connecting under ctx, until finish.
func (cs *Watch) Connecting(ctx context.Context) (a *Attempt, finish func()) {
	a = &Attempt{conns: cs, ctx: ctx}
	return a, a.watch()
}

func (a *Attempt) Dial(network, addr string) (net.Conn, error) {
	a.mu.Lock()
	finished := a.finished
	a.mu.Unlock()
	if !finished {
		if err := a.ctx.Err(); err != nil {
			return nil, err
		}
		return a.conns.dial(a.ctx, network, addr, a)
	}
	return a.conns.dial(context.Background(), network, addr, nil)
}

// track remembers a connection opened while connecting; false when the
// context is already done.
func (a *Attempt) track(tc *trackedConn) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.finished {
		return true
	}
	if a.ctx.Err() != nil {
		return false
	}
	a.opened = append(a.opened, tc)
	return true
}

// watch cuts the attempt's connections if ctx ends before finish.
func (a *Attempt) watch() (finish func()) {
	stop := context.AfterFunc(a.ctx, func() {
		a.mu.Lock()
		victims := a.opened
		if a.finished {
			victims = nil
		}
		a.mu.Unlock()
		for _, tc := range victims {
			_ = tc.Close()
		}
	})
	return func() {
		stop()
		a.mu.Lock()
		a.finished = true
		a.opened = nil
		a.mu.Unlock()
	}
}
