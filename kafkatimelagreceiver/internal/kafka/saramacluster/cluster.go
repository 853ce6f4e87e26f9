// Package saramacluster implements kafka.Cluster with sarama: the admin
// reads (offsets, groups, descriptions, metadata, topic configurations,
// records). Its connections go through a brokerwatch.Watch, which cuts
// requests on the call budgets (brokerwatch names the files that decide
// when a request is cut), and a batchguard check of each Fetch response;
// authentication is saslauth's.
package saramacluster

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

var errClosed = errors.New("kafka cluster access is closed")

var _ kafka.Cluster = (*Cluster)(nil)

// Cluster is a kafka.Cluster speaking to the brokers through sarama. It
// connects lazily, so that a collector whose brokers are down still starts,
// and reconnects after the client has been closed under it.
type Cluster struct {
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
	lanes  []*Cluster // closed with the cluster

	// listedBy is the broker whose ListGroups listed each group in the last
	// listing: a broker lists exactly the groups it coordinates, so the
	// listing every scrape sends anyway answers FindCoordinator for every
	// group at once (there is no batched FindCoordinator below v4, which
	// sarama does not speak). A group listed by two brokers (mid-move) is
	// left out and asked for the usual way.
	listedMu sync.Mutex
	listedBy map[string]int32
	// listedShare are the share groups the last listing saw, sorted: the
	// ListGroups that lists the consumer groups lists them too, so that
	// reading share groups costs no listing of its own.
	listedShare []string

	// transportRefresh is when transport errors last refreshed the
	// metadata, in unix nanoseconds (see refreshMetadata).
	transportRefresh atomic.Int64
	// refreshTook is how long the last metadata refresh that ended took,
	// in nanoseconds: what waiting for the next one is taken to cost.
	refreshTook atomic.Int64
}

// New builds and validates the client configuration and logs the settings
// that expose credentials. It does not connect: the first call does.
func New(s clientsettings.Settings) (*Cluster, error) {
	if len(s.Brokers) == 0 {
		return nil, errors.New("brokers: must list at least one broker")
	}
	logger := s.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	clientsettings.WarnInsecure(s, logger)
	return newCluster(s, logger)
}

// Lane is another Cluster on the same settings and token source, with its
// own connections, client and broker watch, closed with c. sarama sends one
// request at a time on a broker's connection, and its lookups lock every
// broker in turn: a caller in the background (the sampler) on a lane of its
// own never holds the scrape's requests behind its own slow answers, nor
// has them cut with it. Each broker then has one connection per lane.
func (c *Cluster) Lane() (kafka.Cluster, error) {
	lane, err := newCluster(c.settings, c.logger)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errClosed
	}
	c.lanes = append(c.lanes, lane)
	return lane, nil
}

// warmUp connects a lane not connected yet, and its connection to every
// broker, with its cluster's first connection: its first call then finds
// them as the cluster's calls do. When that fails, its first call
// connects.
func (c *Cluster) warmUp(ctx context.Context) {
	c.mu.Lock()
	connected := c.client != nil
	c.mu.Unlock()
	if connected {
		return
	}
	client, err := c.connected(ctx)
	if err != nil {
		c.logger.Debug("connect a lane with its cluster", zap.Error(err))
		return
	}
	for _, b := range client.Brokers() {
		_ = b.Open(c.config) // already open: ErrAlreadyConnected
		_, _ = b.Connected() // waits for the dial
	}
}

func newCluster(s clientsettings.Settings, logger *zap.Logger) (*Cluster, error) {
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
	c := &Cluster{
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

// begin starts a call: its budget comes from ctx's deadline, once, and is
// handed to everything the call sends (brokerwatch.Watch.Begin).
func (c *Cluster) begin(ctx context.Context) (*brokerwatch.Call, func()) {
	return c.watch.Begin(ctx, c.config.Net.ReadTimeout)
}

// Tokens is the source of the OAUTHBEARER tokens the connections present,
// nil without one: another client of the same principal (the membership's)
// shares it, so that a token refused to either is dropped for both.
func (c *Cluster) Tokens() clientsettings.TokenSource {
	return saslauth.Tokens(c.config)
}

// connected returns a live client, connecting first if needed. The dial
// happens outside the lock; a racing second connection is closed.
func (c *Cluster) connected(ctx context.Context) (sarama.Client, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errClosed
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
func (c *Cluster) adopt(existing, fresh sarama.Client) (sarama.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errClosed
	}
	if c.client != nil && c.client != existing && !c.client.Closed() {
		return c.client, nil
	}
	c.client = fresh
	return fresh, nil
}

// Close ends every connection, its lanes' too, cutting the requests in
// flight, and later calls fail.
func (c *Cluster) Close() error {
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

// observe reports a request and, when it timed out or its response could not
// be decoded, closes the broker's connection: sarama keeps a connection open
// after a read timeout, and a broker that never answered one request answers
// none after it on that connection (responses come in order). The next
// request reconnects.
func (c *Cluster) observe(ctx context.Context, b *sarama.Broker, api string, err error) {
	if c.observer != nil {
		c.observer.Request(ctx, api, err)
	}
	if errors.Is(err, sarama.ErrSASLAuthenticationFailed) {
		// A reconnect or re-authentication of an established client was
		// refused: the next connection needs a new token.
		saslauth.TokenRefused(c.config)
	}
	var netErr net.Error
	switch {
	case errors.As(err, &netErr) && netErr.Timeout():
		c.logger.Debug("closing the connection of a broker that did not answer in time",
			zap.Int32("broker", b.ID()), zap.String("api", api), zap.Error(err))
		_ = b.Close()
	case isDecodingError(err):
		// A response over sarama's size limit is not read at all: sarama
		// then fails every later request on the connection with the same
		// error, and keeps it open.
		c.logger.Debug("closing the connection of a broker whose response could not be decoded",
			zap.Int32("broker", b.ID()), zap.String("api", api), zap.Error(err))
		_ = b.Close()
	}
}

// isDecodingError tells whether err is a response that sarama could not
// decode: too large, or not what the request asked for.
func isDecodingError(err error) bool {
	var decErr sarama.PacketDecodingError
	return errors.As(err, &decErr) || errors.Is(err, sarama.ErrInsufficientData)
}

// perBroker runs fn once per broker concurrently for the call, and
// waits for all of them (brokerwatch.PerBroker).
func perBroker[T any](ctx context.Context, c *Cluster, call *brokerwatch.Call, work map[*sarama.Broker]T, fn func(*sarama.Broker, T) error) error {
	return brokerwatch.PerBroker(ctx, call, c.idle, func(b *sarama.Broker) brokerwatch.Broker { return idleBroker{b, c.config} }, work, fn)
}

// lookup runs one of sarama's lookups for the call (brokerwatch.Lookup).
func lookup[T any](ctx context.Context, c *Cluster, call *brokerwatch.Call, fn func() (T, error)) (T, error) {
	return brokerwatch.Lookup(ctx, call, fn)
}

// idleBroker is a sarama broker as brokerwatch.Idle reopens it.
type idleBroker struct {
	*sarama.Broker
	config *sarama.Config
}

func (b idleBroker) Reopen() error {
	if err := b.Close(); err != nil && !errors.Is(err, sarama.ErrNotConnected) {
		return fmt.Errorf("close: %w", err)
	}
	// sarama's Open dials in the background; the next request waits for it.
	if err := b.Open(b.config); err != nil && !errors.Is(err, sarama.ErrAlreadyConnected) {
		return fmt.Errorf("open: %w", err)
	}
	return nil
}

// authorization types a broker's refusal to let the principal see a group or
// topic, so that callers recognise ACL denials without reading messages.
func authorization(err error) error {
	if errors.Is(err, sarama.ErrGroupAuthorizationFailed) || errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		return &kafka.AuthorizationError{Err: err}
	}
	return err
}

// ClusterAuthorization types a refusal of a request about the whole
// cluster, which a principal without cluster permissions is refused.
func ClusterAuthorization(err error) error {
	if errors.Is(err, sarama.ErrClusterAuthorizationFailed) {
		return &kafka.AuthorizationError{Err: err}
	}
	return authorization(err)
}

func groupError(group string, err error) error {
	return &kafka.GroupError{Group: group, Err: err}
}

func topicError(topic, operation string, err error) error {
	return &kafka.TopicError{Topic: topic, Operation: operation, Err: err}
}
