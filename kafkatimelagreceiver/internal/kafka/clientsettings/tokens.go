package clientsettings

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// TokenSource supplies OAUTHBEARER tokens; *oauthbearer.Cache is one.
// Every client of a cluster shares one, so that one grant serves them all
// and a token the brokers refused to one is dropped for all.
type TokenSource interface {
	// Token returns a token valid for a while yet.
	Token(ctx context.Context) (string, error)
	// Invalidate drops a token the brokers refused, if it is still the
	// current one, so that the next connection gets a new one.
	Invalidate(refused string)
}

// Presenter hands one client's connections the tokens of a TokenSource,
// bounded by the request timeout, and remembers the one it presented last:
// the one a refusal that reaches the client refers to, unless the client
// already asked for another. The sarama and franz-go adapters wrap it.
type Presenter struct {
	mechanism  string
	tokens     TokenSource
	extensions map[string]string
	timeout    time.Duration
	presented  atomic.Pointer[string]
}

// NewPresenter presents the tokens of s (a token mechanism's), each fetch
// bounded by timeout.
func NewPresenter(s *SASL, timeout time.Duration) *Presenter {
	return &Presenter{mechanism: s.MechanismName(), tokens: s.Tokens, extensions: s.Extensions, timeout: timeout}
}

// Token fetches the token to present, with the SASL extensions to send
// with it. ctx may have no deadline (sarama gives none, franz-go the
// dial's): the timeout bounds the wait.
func (p *Presenter) Token(ctx context.Context) (token string, extensions map[string]string, err error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	token, err = p.tokens.Token(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", p.mechanism, err)
	}
	p.presented.Store(&token)
	return token, p.extensions, nil
}

// Refused drops the token presented last after a broker refused it: a
// broker that refuses a token before its expiry (revoked, or signed with
// keys the identity provider has rotated) would refuse it again. A token
// another client sharing the source replaced already stays replaced.
func (p *Presenter) Refused() {
	if presented := p.presented.Load(); presented != nil {
		p.tokens.Invalidate(*presented)
	}
}

// Source is the source of the tokens presented.
func (p *Presenter) Source() TokenSource { return p.tokens }

// Mechanism is the SASL mechanism the tokens are presented for, in
// Kafka's spelling.
func (p *Presenter) Mechanism() string { return p.mechanism }
