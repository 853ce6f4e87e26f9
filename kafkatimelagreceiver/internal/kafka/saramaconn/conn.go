// Package saramaconn is the connection core of the sarama reads: the
// client and its connections (connected lazily, reconnected after a close,
// a Lane of connections of its own for a caller in the background), where
// each call's deadline comes from (Begin), how each request is observed and
// how a broker that did not answer is cut, the work per broker, the leader
// lookups and the ListOffsets rounds that follow a moved leader, and the
// typing of Kafka's refusals. The reads themselves are the job packages':
// saramaoffsets (offsets and groups), saramatimes (the time index and
// record reads), saramaretention (topic configs and log sizes); saramacluster
// composes them into a kafka.Cluster.
//
// Its connections go through a brokerwatch.Watch, which cuts requests on
// the call budgets (brokerwatch names the files that decide when a request
// is cut), and a batchguard check of each Fetch response; authentication
// is saslauth's.
package saramaconn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/IBM/sarama"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/batchguard"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/brokerwatch"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramaconfig"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saslauth"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/wirebytes"
)

// ErrClosed is the error of a call on a closed connection.
var ErrClosed = errors.New("kafka cluster access is closed")

// Conn is the brokers' client, shared by the reads made on it. It
// connects lazily, so that a collector whose brokers are down still starts,
// and reconnects after the client has been closed under it.
type Conn struct {
	brokers  []string
	config   *sarama.Config
	logger   *zap.Logger
	observer kafka.RequestObserver
	idle     *brokerwatch.Idle // nil: connections are never reopened for idleness
	// watch holds every connection to a broker, so that a call whose
	// context ends or budget is spent, or Close, cuts the requests it has
	// in flight.
	watch *brokerwatch.Watch
	// refusals are why the batch guard refused a partition's batches.
	refusals *batchguard.Refusals

	// settings are what lanes are made from (Lane).
	settings clientsettings.Settings

	mu     sync.Mutex
	client sarama.Client
	closed bool
	lanes  []*Conn // closed with c

	// transportRefresh is when transport errors last refreshed the
	// metadata, in unix nanoseconds (see refreshMetadata).
	transportRefresh atomic.Int64
	// refreshTook is how long the last metadata refresh that ended took,
	// in nanoseconds: what waiting for the next one is taken to cost.
	refreshTook atomic.Int64
}

// New builds and validates the client configuration and logs the settings
// that expose credentials. It does not connect: the first call does.
func New(s clientsettings.Settings) (*Conn, error) {
	if len(s.Brokers) == 0 {
		return nil, errors.New("brokers: must list at least one broker")
	}
	logger := s.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	clientsettings.WarnInsecure(s, logger)
	return newConn(s, logger)
}

// Lane is another Conn on the same settings and token source, with its
// own connections, client and broker watch, closed with c. sarama sends one
// request at a time on a broker's connection, and its lookups lock every
// broker in turn: a caller in the background (the sampler) on a lane of its
// own never holds the scrape's requests behind its own slow answers, nor
// has them cut with it. Each broker then has one connection per lane.
func (c *Conn) Lane() (*Conn, error) {
	lane, err := newConn(c.settings, c.logger)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	c.lanes = append(c.lanes, lane)
	return lane, nil
}

// warmUp connects a lane not connected yet, and its connection to every
// broker, with the first connection of the Conn it is a lane of: its first
// call then finds them as that Conn's calls do. When that fails, its first
// call connects.
func (c *Conn) warmUp(ctx context.Context) {
	c.mu.Lock()
	connected := c.client != nil
	c.mu.Unlock()
	if connected {
		return
	}
	client, err := c.Connected(ctx)
	if err != nil {
		c.logger.Debug("connect a lane with its cluster", zap.Error(err))
		return
	}
	for _, b := range client.Brokers() {
		_ = b.Open(c.config) // already open: ErrAlreadyConnected
		_, _ = b.Connected() // waits for the dial
	}
}

func newConn(s clientsettings.Settings, logger *zap.Logger) (*Conn, error) {
	sc, err := saramaconfig.ClientConfig(s)
	if err != nil {
		return nil, err
	}
	refusals := new(batchguard.Refusals)
	// The proxy dialer is sarama's one hook on its connections. TLS is
	// layered by the dialer, below the check of each Fetch response
	// (batchguard), so sarama speaks plaintext to it; between the two the
	// responses are measured as they came (wirebytes).
	var secure *tls.Config
	if sc.Net.TLS.Enable {
		secure = sc.Net.TLS.Config
		if secure == nil {
			secure = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		sc.Net.TLS.Enable = false
	}
	// One clock for the watch and the idle connections: the system's.
	clock := brokerwatch.SystemClock()
	watch := brokerwatch.New(clock, sc.Net.DialTimeout, sc.Net.KeepAlive, func(conn net.Conn, addr string) net.Conn {
		if secure != nil {
			conn = tls.Client(conn, withServerName(secure, addr))
		}
		if s.Observer != nil {
			conn = wirebytes.Count(conn, s.Observer.ResponseBytes)
		}
		return batchguard.Guard(conn, int64(sarama.MaxResponseSize), refusals)
	})
	sc.Net.Proxy.Enable = true
	sc.Net.Proxy.Dialer = watch
	c := &Conn{
		settings: s,
		brokers:  append([]string(nil), s.Brokers...),
		config:   sc,
		logger:   logger,
		observer: s.Observer,
		watch:    watch,
		refusals: refusals,
	}
	if s.ConnIdleTimeout > 0 {
		c.idle = brokerwatch.NewIdle(clock, s.ConnIdleTimeout, logger)
	}
	return c, nil
}

// withServerName is cfg verifying the broker's host name, when cfg names no
// server: what sarama does when it does TLS itself.
func withServerName(cfg *tls.Config, addr string) *tls.Config {
	if cfg.ServerName != "" {
		return cfg
	}
	c := cfg.Clone()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		c.ServerName = host
	}
	return c
}

// Begin starts a call: its budget comes from ctx's deadline, once, and is
// handed to everything the call sends (brokerwatch.Watch.Begin). Every
// read begins with it, and stops the call when it returns.
func (c *Conn) Begin(ctx context.Context) (*brokerwatch.Call, func()) {
	return c.watch.Begin(ctx, c.config.Net.ReadTimeout)
}

// Tokens is the source of the OAUTHBEARER tokens the connections present,
// nil without one: another client of the same principal (the membership's)
// shares it, so that a token refused to either is dropped for both.
func (c *Conn) Tokens() clientsettings.TokenSource {
	return saslauth.Tokens(c.config)
}

// Connected returns a live client, connecting first if needed. The dial
// happens outside the lock; a racing second connection is closed.
func (c *Conn) Connected(ctx context.Context) (sarama.Client, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	existing := c.client
	c.mu.Unlock()
	if existing != nil && !existing.Closed() {
		return existing, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("connect to brokers %v: %w", c.brokers, err)
	}
	// sarama takes no context: the attempt's dialer cuts its connections
	// when ctx ends, and the client it makes keeps dialing through it.
	attempt, finish := c.watch.Connecting(ctx)
	config := *c.config
	config.Net.Proxy.Dialer = attempt
	fresh, err := sarama.NewClient(c.brokers, &config)
	finish()
	if err != nil {
		if errors.Is(err, sarama.ErrSASLAuthenticationFailed) {
			// Only a refusal says the token is bad: a network error does
			// not, and a new grant per attempt while Kafka is down would
			// only load the identity provider.
			saslauth.TokenRefused(c.config)
		}
		if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
			err = fmt.Errorf("%w: %w", ctxErr, err)
		}
		return nil, fmt.Errorf("connect to brokers %v (%s): %w", c.brokers, saslauth.Summary(c.config), saslauth.Authentication(err))
	}
	client, err := c.adopt(existing, fresh)
	if client != fresh {
		_ = fresh.Close()
		return client, err
	}
	c.mu.Lock()
	lanes := slices.Clone(c.lanes)
	c.mu.Unlock()
	for _, lane := range lanes {
		lane.warmUp(ctx)
	}
	return client, nil
}

// adopt installs fresh as the client unless the cluster was closed or
// another goroutine connected first, and returns the client to use. A client
// it replaces was closed already.
func (c *Conn) adopt(existing, fresh sarama.Client) (sarama.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if c.client != nil && c.client != existing && !c.client.Closed() {
		return c.client, nil
	}
	c.client = fresh
	return fresh, nil
}

// Close ends every connection, its lanes' too, cutting the requests in
// flight, and later calls fail.
func (c *Conn) Close() error {
	c.mu.Lock()
	c.closed = true
	client := c.client
	c.client = nil
	lanes := c.lanes
	c.lanes = nil
	c.mu.Unlock()
	// First, so that the client's own close does not wait on requests the
	// brokers never answer.
	c.watch.Close()
	var errs []error
	if client != nil {
		if err := client.Close(); !errors.Is(err, sarama.ErrClosedClient) {
			errs = append(errs, err)
		}
	}
	for _, lane := range lanes {
		errs = append(errs, lane.Close())
	}
	c.watch.WaitLookups()
	return errors.Join(errs...)
}
