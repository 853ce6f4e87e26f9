// Package saramacluster implements kafka.Cluster with sarama. It is the one
// package of the receiver that imports sarama.
package saramacluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

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
	return &Cluster{
		brokers:  append([]string(nil), s.Brokers...),
		config:   sc,
		logger:   logger,
		observer: s.Observer,
	}, nil
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
	// sarama takes no context: the dial and metadata deadlines bound this.
	fresh, err := sarama.NewClient(c.brokers, c.config)
	if err != nil {
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

// Close ends every connection; later calls fail.
func (c *Cluster) Close() error {
	c.mu.Lock()
	c.closed = true
	client := c.client
	c.client = nil
	c.mu.Unlock()
	if client == nil {
		return nil
	}
	if err := client.Close(); err != nil && !errors.Is(err, sarama.ErrClosedClient) {
		return err
	}
	return nil
}

// observe reports a request and, when it timed out, closes the broker's
// connection: sarama keeps a connection open after a read timeout, and a
// broker that never answered one request answers none after it on that
// connection (responses come in order). The next request reconnects.
func (c *Cluster) observe(ctx context.Context, b *sarama.Broker, api string, err error) {
	if c.observer != nil {
		c.observer.Request(ctx, api, err)
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		c.logger.Debug("closing the connection of a broker that did not answer in time",
			zap.Int32("broker", b.ID()), zap.String("api", api), zap.Error(err))
		_ = b.Close()
	}
}

// perBroker runs fn once per broker concurrently and waits for all of them.
// sarama takes no context, so ctx is checked before each request is sent and
// the brokers' read deadlines bound the requests in flight.
func perBroker[T any](ctx context.Context, work map[*sarama.Broker]T, fn func(*sarama.Broker, T) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for broker, item := range work {
		wg.Go(func() {
			var err error
			if ctxErr := ctx.Err(); ctxErr != nil {
				err = fmt.Errorf("broker %d (%s): %w", broker.ID(), broker.Addr(), ctxErr)
			} else {
				err = fn(broker, item)
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return kafka.Join(errs...)
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
