package sharegroups

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// saslMechanism is franz-go's mechanism for the settings, and for the token
// mechanisms the adapter told when a broker refuses a token. Its errors name
// the key under auth::sasl.
func saslMechanism(s *SASL, requestTimeout time.Duration) (sasl.Mechanism, *tokenMechanism, error) {
	if err := kafka.ValidateSASL(s.Mechanism, s.Username, s.Password, s.HandshakeVersion); err != nil {
		return nil, nil, err
	}
	m := kafka.SASLMechanism(s.Mechanism)
	usesToken := kafka.SASLUsesToken(m)
	switch {
	case usesToken && s.Tokens == nil:
		return nil, nil, fmt.Errorf("mechanism: %s needs a token source", m)
	case !usesToken && s.Tokens != nil:
		return nil, nil, fmt.Errorf("mechanism: %s takes no token source", m)
	case !usesToken && len(s.Extensions) > 0:
		return nil, nil, fmt.Errorf("mechanism: %s takes no SASL extensions", m)
	}
	switch m {
	case kafka.SASLPlain:
		return plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism(), nil, nil
	case kafka.SASLSCRAMSHA256:
		return boundedSCRAM{scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism()}, nil, nil
	case kafka.SASLSCRAMSHA512:
		return boundedSCRAM{scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism()}, nil, nil
	}
	// OAUTHBEARER, and AWS_MSK_IAM_OAUTHBEARER: OAUTHBEARER on the wire
	// with a token AWS signed.
	t := &tokenMechanism{mechanism: m, tokens: s.Tokens, extensions: s.Extensions, timeout: requestTimeout}
	t.Mechanism = oauth.Oauth(t.auth)
	return t, t, nil
}

// boundedSCRAM refuses a server-first message asking for more PBKDF2
// iterations than Kafka allows (franz-go's own bound is 64 times higher).
type boundedSCRAM struct{ sasl.Mechanism }

func (b boundedSCRAM) Authenticate(ctx context.Context, host string) (sasl.Session, []byte, error) {
	session, first, err := b.Mechanism.Authenticate(ctx, host)
	if err != nil {
		return nil, nil, err
	}
	return &boundedSCRAMSession{Session: session}, first, nil
}

type boundedSCRAMSession struct {
	sasl.Session
	answered bool
}

func (s *boundedSCRAMSession) Challenge(resp []byte) (bool, []byte, error) {
	if !s.answered {
		// The first challenge is the server-first message.
		s.answered = true
		if err := kafka.CheckSCRAMIterations(string(resp)); err != nil {
			return false, nil, err
		}
	}
	return s.Session.Challenge(resp)
}

// tokenMechanism is OAUTHBEARER with the tokens of a TokenSource shared
// with the cluster's client, remembering the one it presented last so that
// a refusal drops it for both clients.
type tokenMechanism struct {
	sasl.Mechanism
	mechanism  string
	tokens     TokenSource
	extensions map[string]string
	timeout    time.Duration
	presented  atomic.Pointer[string]
}

func (t *tokenMechanism) auth(ctx context.Context) (oauth.Auth, error) {
	// franz-go passes the dial's context, which may have no deadline.
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	token, err := t.tokens.Token(ctx)
	if err != nil {
		return oauth.Auth{}, fmt.Errorf("%s: %w", t.mechanism, err)
	}
	t.presented.Store(&token)
	return oauth.Auth{Token: token, Extensions: t.extensions}, nil
}

// refused drops the token presented last: a broker that refuses a token
// before its expiry would refuse it again.
func (t *tokenMechanism) refused() {
	if presented := t.presented.Load(); presented != nil {
		t.tokens.Invalidate(*presented)
	}
}
