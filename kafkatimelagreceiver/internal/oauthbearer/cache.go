// Package oauthbearer supplies the tokens of SASL/OAUTHBEARER: a cache that
// hands one token to every connection until shortly before it expires, and
// the sources it asks for new ones (AWS MSK IAM signing, an OAuth2
// client-credentials grant, a collector extension). It knows nothing of
// Kafka clients.
package oauthbearer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Token is a bearer token and when it stops being accepted.
type Token struct {
	Value string
	// Expiry is zero when the source does not say; such a token is not
	// reused, so the source is asked again for every connection.
	Expiry time.Time
}

// Source fetches a new token. It must honour ctx's deadline.
type Source func(ctx context.Context) (Token, error)

// RefreshBefore is how long before its expiry a token is replaced: a
// connection authenticated with a token about to expire would be refused at
// its next re-authentication (KIP-368) or by a broker whose clock runs
// ahead.
const RefreshBefore = time.Minute

// Cache hands out one token until RefreshBefore its expiry, so that the
// connections to every broker share it rather than each costing a request
// to the identity provider. Concurrent callers that find no usable token
// share the fetch the first of them runs; no lock is held while it runs.
type Cache struct {
	source  Source
	timeout time.Duration

	mu       sync.Mutex
	current  Token
	inflight *fetch
}

// fetch is one call of the source that several callers wait for.
type fetch struct {
	done  chan struct{}
	token Token
	err   error
}

// NewCache returns a cache over source; timeout bounds each fetch, within
// the deadline of the caller that runs it.
func NewCache(source Source, timeout time.Duration) *Cache {
	return &Cache{source: source, timeout: timeout}
}

// Token returns the current token, fetching a new one when there is none
// or it is about to expire. A failed fetch is not remembered: the next call
// tries again.
func (c *Cache) Token(ctx context.Context) (string, error) {
	c.mu.Lock()
	if usable(c.current, time.Now()) {
		value := c.current.Value
		c.mu.Unlock()
		return value, nil
	}
	if f := c.inflight; f != nil {
		c.mu.Unlock()
		select {
		case <-f.done:
			return f.token.Value, f.err
		case <-ctx.Done():
			return "", fmt.Errorf("wait for an OAUTHBEARER token: %w", ctx.Err())
		}
	}
	f := &fetch{done: make(chan struct{})}
	c.inflight = f
	c.mu.Unlock()

	f.token, f.err = c.fetch(ctx)
	c.mu.Lock()
	c.inflight = nil
	if f.err == nil {
		c.current = f.token
	}
	c.mu.Unlock()
	close(f.done)
	return f.token.Value, f.err
}

func (c *Cache) fetch(ctx context.Context) (Token, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	token, err := c.source(ctx)
	if err == nil && token.Value == "" {
		err = errors.New("the token source returned an empty token")
	}
	if err != nil {
		return Token{}, fmt.Errorf("fetch an OAUTHBEARER token: %w", err)
	}
	return token, nil
}

// Invalidate drops the token refused, for when a broker refused it before
// its expiry (revoked, or signed with keys the provider has rotated), if it
// is still the current one: refusals of the same token on several
// connections, which reach their clients one after the other, replace it
// once, not the new token too.
func (c *Cache) Invalidate(refused string) {
	c.mu.Lock()
	if c.current.Value == refused {
		c.current = Token{}
	}
	c.mu.Unlock()
}

func usable(t Token, now time.Time) bool {
	return t.Value != "" && !t.Expiry.IsZero() && now.Add(RefreshBefore).Before(t.Expiry)
}
