package saramaconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/IBM/sarama"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/brokerwatch"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saslauth"
	"go.uber.org/zap"
)

// Observe reports a request and, when it timed out or its response could not
// be decoded, closes the broker's connection: sarama keeps a connection open
// after a read timeout, and a broker that never answered one request answers
// none after it on that connection (responses come in order). The next
// request reconnects.
func (c *Conn) Observe(ctx context.Context, b *sarama.Broker, api string, err error) {
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
	case IsDecodingError(err):
		// A response over sarama's size limit is not read at all: sarama
		// then fails every later request on the connection with the same
		// error, and keeps it open.
		c.logger.Debug("closing the connection of a broker whose response could not be decoded",
			zap.Int32("broker", b.ID()), zap.String("api", api), zap.Error(err))
		_ = b.Close()
	}
}

// ConnectionCut tells whether err is a connection that ended or was reset
// before a response was read whole: a broker does that when it cannot send
// a response (Apache Kafka, for one, when the log cleaner swaps the segment
// it was sending), as do a broker going down and a proxy dropping the
// connection. sarama closes such a connection; the next request on the
// broker must open it again.
func ConnectionCut(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.ErrClosedPipe) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNABORTED) ||
		errors.Is(err, syscall.EPIPE)
}

// IsDecodingError tells whether err is a response that sarama could not
// decode: too large, or not what the request asked for.
func IsDecodingError(err error) bool {
	var decErr sarama.PacketDecodingError
	return errors.As(err, &decErr) || errors.Is(err, sarama.ErrInsufficientData)
}

// PerBroker runs fn once per broker concurrently for the call, and
// waits for all of them (brokerwatch.PerBroker); a broker's connection
// idle for too long is reopened first.
func PerBroker[T any](ctx context.Context, c *Conn, call *brokerwatch.Call, work map[*sarama.Broker]T, fn func(*sarama.Broker, T) error) error {
	return brokerwatch.PerBroker(ctx, call, c.idle, func(b *sarama.Broker) brokerwatch.Broker { return idleBroker{b, c.config} }, work, fn)
}

// OnReplica readies the connection to b, a replica a leader pointed a
// read at, as PerBroker readies a leader's (reopened when idle for too
// long); end is called when the read is over.
func (c *Conn) OnReplica(ctx context.Context, b *sarama.Broker) (end func(), err error) {
	idle := idleBroker{b, c.config}
	if err := c.idle.Begin(ctx, idle); err != nil {
		return nil, err
	}
	return func() { c.idle.End(idle) }, nil
}

// Config is the client's configuration: the protocol version and rack the
// reads build their requests for, and what a broker is opened with. It is
// not to be changed.
func (c *Conn) Config() *sarama.Config { return c.config }

// Logger is where the reads log what they recover from.
func (c *Conn) Logger() *zap.Logger { return c.logger }

// Skipping is the error of a broker skipped for not answering
// (brokerwatch.Watch.Skipping): its requests are not sent; nil when it is
// asked as usual.
func (c *Conn) Skipping(addr string) error { return c.watch.Skipping(addr) }

// Refused is, once, why the batch guard last refused tp's batch; nil when
// it did not (batchguard.Refusals.Take).
func (c *Conn) Refused(tp kafka.TopicPartition) error { return c.refusals.Take(tp) }

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
