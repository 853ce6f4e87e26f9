// Package sharegroups reads share groups (KIP-932) with franz-go: listing
// them, describing them and reading their share-partition start offsets and
// lag, the requests sarama does not know. It is the only package of the
// receiver that speaks Kafka with franz-go, and it implements
// kafka.ShareGroups from the same client settings as the sarama cluster.
package sharegroups

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
)

// recheckUnsupported is how long a cluster found without share groups is
// believed: after it, one ApiVersions request asks again, so that a rolling
// upgrade is noticed without a restart.
const recheckUnsupported = time.Hour

// Client reads share groups. Its methods may be called from several
// goroutines at once.
type Client struct {
	cl          *kgo.Client // nil when the settings alone rule share groups out
	tokens      *tokenMechanism
	observer    kafka.RequestObserver
	callTimeout time.Duration
	security    string
	now         func() time.Time

	mu sync.Mutex
	// unsupported is why share groups cannot be read, nil when they can or
	// before the cluster was asked; checked says when it was asked.
	unsupported error
	checked     time.Time
	static      bool // unsupported comes from the settings: never asked again
}

var _ kafka.ShareGroups = (*Client)(nil)

// New builds a share-group client from the cluster client's settings. It
// connects lazily: a cluster that is down fails calls, not creation.
// Settings that rule share groups out (Kerberos, an older protocol_version)
// build a client whose every call says why, without a request.
func New(s clientsettings.Settings) (*Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), max(s.RequestTimeout, minRequestTimeout))
	defer cancel()
	cc, err := translate(ctx, s)
	if err != nil {
		return nil, err
	}
	c := &Client{tokens: cc.tokens, observer: s.Observer, callTimeout: cc.callTimeout, security: cc.security, now: time.Now}
	if cc.unsupported != nil {
		c.unsupported, c.static = cc.unsupported, true
		return c, nil
	}
	opts := cc.opts
	if s.Observer != nil {
		opts = append(opts[:len(opts):len(opts)], kgo.WithHooks(responseBytes{s.Observer}))
	}
	c.cl, err = kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("share-group client: %w", err)
	}
	return c, nil
}

// Close ends every connection.
func (c *Client) Close() error {
	if c.cl != nil {
		c.cl.Close()
	}
	return nil
}

// support returns nil when the cluster serves share groups, else an error
// wrapping kafka.ErrShareGroupsUnsupported, or the error that kept the
// cluster from answering. It asks the cluster at most once per
// recheckUnsupported, and not again once it answered yes.
func (c *Client) support(ctx context.Context) error {
	c.mu.Lock()
	known := c.static || (!c.checked.IsZero() && (c.unsupported == nil || c.now().Sub(c.checked) < recheckUnsupported))
	unsupported := c.unsupported
	c.mu.Unlock()
	if known {
		return unsupported
	}
	req := kmsg.NewPtrApiVersionsRequest()
	resp, err := c.cl.Request(ctx, req)
	c.observe(ctx, kmsg.ApiVersions, err)
	if err != nil {
		return c.transportError("ApiVersions", err)
	}
	r := resp.(*kmsg.ApiVersionsResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return fmt.Errorf("ApiVersions: %w", err)
	}
	unsupported = lacking(kversion.FromApiVersionsResponse(r))
	c.mu.Lock()
	c.unsupported, c.checked = unsupported, c.now()
	c.mu.Unlock()
	return unsupported
}

// lacking says which request a broker's versions lack to read share
// groups; nil when none.
func lacking(v *kversion.Versions) error {
	need := []struct {
		key kmsg.Key
		min int16
		why string
	}{
		// v5 is the first that filters by group type.
		{kmsg.ListGroups, 5, "ListGroups v5 (Kafka 3.8)"},
		{kmsg.ShareGroupDescribe, 0, "ShareGroupDescribe"},
		{kmsg.DescribeShareGroupOffsets, 0, "DescribeShareGroupOffsets"},
	}
	for _, n := range need {
		if have, ok := v.LookupMaxKeyVersion(n.key.Int16()); !ok || have < n.min {
			return fmt.Errorf("%w: the brokers do not serve %s (share groups need Kafka %s or later, with share groups enabled)",
				kafka.ErrShareGroupsUnsupported, n.why, minVersion)
		}
	}
	return nil
}

// withDeadline bounds a call by the client's own deadline as well as ctx's.
func (c *Client) withDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.callTimeout)
}

// responseBytes tells the observer the bytes of each response franz-go
// reads (its 4-byte size and body, TLS excluded), as the sarama client's
// connections do.
type responseBytes struct{ observer kafka.RequestObserver }

func (h responseBytes) OnBrokerRead(_ kgo.BrokerMetadata, key int16, bytesRead int, _, _ time.Duration, _ error) {
	h.observer.ResponseBytes(kmsg.NameForKey(key), bytesRead)
}

func (c *Client) observe(ctx context.Context, key kmsg.Key, err error) {
	if c.observer != nil {
		c.observer.Request(ctx, key.Name(), err)
	}
}

// transportError is an error that kept a request from being answered,
// with how the client connects: a refused credential becomes a
// kafka.AuthenticationError, and a refused token is dropped.
func (c *Client) transportError(what string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s (%s): no answer within %s: %w", what, c.security, c.callTimeout, err)
	}
	err = fmt.Errorf("%s (%s): %w", what, c.security, err)
	if errors.Is(err, kerr.SaslAuthenticationFailed) {
		if c.tokens != nil {
			c.tokens.Refused()
		}
		return &kafka.AuthenticationError{Err: err}
	}
	return err
}
