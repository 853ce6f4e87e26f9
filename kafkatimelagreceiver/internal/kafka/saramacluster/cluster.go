// Package saramacluster implements kafka.Cluster with sarama. It is the one
// package of the receiver that imports sarama.
package saramacluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
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
	idle     *idleConns // nil: connections are never reopened for idleness
	// conns holds every connection to a broker, so that a call whose
	// context ends, or Close, cuts the requests it has in flight.
	conns *connections

	mu     sync.Mutex
	client sarama.Client
	closed bool

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
}

// New builds and validates the client configuration and logs the settings
// that expose credentials. It does not connect: the first call does.
func New(s Settings) (*Cluster, error) {
	if len(s.Brokers) == 0 {
		return nil, errors.New("brokers: must list at least one broker")
	}
	sc, err := newConfig(s)
	if err != nil {
		return nil, err
	}
	logger := s.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	warnInsecureSecurity(s, logger)
	conns := newConnections(sc.Net.DialTimeout, sc.Net.KeepAlive)
	// The proxy dialer is sarama's one hook on its connections. TLS is
	// layered by the dialer, below the check of each Fetch response
	// (guardedConn), so sarama speaks plaintext to it.
	if sc.Net.TLS.Enable {
		conns.tls = sc.Net.TLS.Config
		if conns.tls == nil {
			conns.tls = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		sc.Net.TLS.Enable = false
	}
	sc.Net.Proxy.Enable = true
	sc.Net.Proxy.Dialer = conns
	c := &Cluster{
		brokers:  append([]string(nil), s.Brokers...),
		config:   sc,
		logger:   logger,
		observer: s.Observer,
		conns:    conns,
	}
	if s.ConnIdleTimeout > 0 {
		c.idle = newIdleConns(s.ConnIdleTimeout, sc, logger)
	}
	return c, nil
}

// Tokens is the source of the OAUTHBEARER tokens the connections present,
// nil without one: another client of the same principal (the membership's)
// shares it, so that a token refused to either is dropped for both.
func (c *Cluster) Tokens() TokenSource {
	if tp, ok := c.config.Net.SASL.TokenProvider.(*tokenProvider); ok {
		return tp.tokens
	}
	return nil
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
	attempt := &connectAttempt{conns: c.conns, ctx: ctx}
	config := *c.config
	config.Net.Proxy.Dialer = attempt
	finish := attempt.watch()
	fresh, err := sarama.NewClient(c.brokers, &config)
	finish()
	if err != nil {
		if errors.Is(err, sarama.ErrSASLAuthenticationFailed) {
			// Only a refusal says the token is bad: a network error does
			// not, and a new grant per attempt while Kafka is down would
			// only load the identity provider.
			tokenRefused(c.config)
		}
		if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
			err = fmt.Errorf("%w: %w", ctxErr, err)
		}
		return nil, fmt.Errorf("connect to brokers %v (%s): %w", c.brokers, securitySummary(c.config), authentication(err))
	}
	client, err := c.adopt(existing, fresh)
	if client != fresh {
		_ = fresh.Close()
	}
	return client, err
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

// Close ends every connection, cutting the requests in flight, and later
// calls fail.
func (c *Cluster) Close() error {
	c.mu.Lock()
	c.closed = true
	client := c.client
	c.client = nil
	c.mu.Unlock()
	// First, so that the client's own close does not wait on requests the
	// brokers never answer.
	c.conns.closeAll()
	if client == nil {
		return nil
	}
	if err := client.Close(); err != nil && !errors.Is(err, sarama.ErrClosedClient) {
		return err
	}
	return nil
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
		tokenRefused(c.config)
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

// perBroker runs fn once per broker concurrently and waits for all of them.
// sarama takes no context, so ctx is checked before each request is sent,
// and when ctx ends the connections of the brokers still working are cut,
// which ends their requests in flight (and any other request sharing the
// connection) at once; their error then says that ctx ended. A connection
// idle past conn_idle_timeout is reopened before its request.
func perBroker[T any](ctx context.Context, c *Cluster, work map[*sarama.Broker]T, fn func(*sarama.Broker, T) error) error {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		errs    []error
		pending = make(map[string]bool, len(work)) // broker addresses still working
	)
	for broker := range work {
		pending[broker.Addr()] = true
	}
	cutDone := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(cutDone)
		mu.Lock()
		addrs := maps.Clone(pending)
		mu.Unlock()
		c.conns.cut(addrs)
	})
	defer func() {
		// A cut that started must end before the call returns: run late,
		// it would close the connection the next call opens to the same
		// broker, and fail that call's first request.
		if !stop() {
			<-cutDone
		}
	}()
	for broker, item := range work {
		wg.Go(func() {
			var err error
			if ctxErr := ctx.Err(); ctxErr != nil {
				err = fmt.Errorf("broker %d (%s): %w", broker.ID(), broker.Addr(), ctxErr)
			} else if skipped := c.conns.health.skipping(broker.Addr(), time.Now()); skipped != nil {
				err = fmt.Errorf("broker %d (%s): %w", broker.ID(), broker.Addr(), skipped)
			} else if gaveUp := c.conns.gaveUpOn(ctx, broker.Addr()); gaveUp != nil {
				err = fmt.Errorf("broker %d (%s): %w", broker.ID(), broker.Addr(), gaveUp)
			} else {
				err = awaitBroker(ctx, c, broker, item, fn)
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
// budget then judges the broker's connection whoever's request is on it
// (see cutUnanswered). A connection idle past conn_idle_timeout is reopened
// first.
func awaitBroker[T any](ctx context.Context, c *Cluster, broker *sarama.Broker, item T, fn func(*sarama.Broker, T) error) error {
	defer c.conns.waitingOn(ctx, broker.Addr())()
	if err := c.idle.begin(ctx, broker); err != nil {
		return err
	}
	defer c.idle.end(broker)
	return fn(broker, item)
}

// authorization types a broker's refusal to let the principal see a group or
// topic, so that callers recognise ACL denials without reading messages.
func authorization(err error) error {
	if errors.Is(err, sarama.ErrGroupAuthorizationFailed) || errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		return &kafka.AuthorizationError{Err: err}
	}
	return err
}

// clusterAuthorization is authorization for requests about the whole
// cluster, which a principal without cluster permissions is refused.
func clusterAuthorization(err error) error {
	if errors.Is(err, sarama.ErrClusterAuthorizationFailed) {
		return &kafka.AuthorizationError{Err: err}
	}
	return authorization(err)
}

// authentication types a broker's refusal of the credentials.
func authentication(err error) error {
	if errors.Is(err, sarama.ErrSASLAuthenticationFailed) {
		return &kafka.AuthenticationError{Err: err}
	}
	return err
}

func groupError(group string, err error) error {
	return &kafka.GroupError{Group: group, Err: err}
}

func topicError(topic, operation string, err error) error {
	return &kafka.TopicError{Topic: topic, Operation: operation, Err: err}
}
