package clientsettings

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// rotatingTokens hands out token-1, token-2, ..., each until it is
// invalidated, and remembers the deadline each fetch had.
type rotatingTokens struct {
	current     string
	next        int
	invalidated []string
	deadlines   []time.Duration
}

func (r *rotatingTokens) Token(ctx context.Context) (string, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return "", errors.New("no deadline")
	}
	r.deadlines = append(r.deadlines, time.Until(deadline))
	if r.current == "" {
		r.next++
		r.current = "token-" + string(rune('0'+r.next))
	}
	return r.current, nil
}

func (r *rotatingTokens) Invalidate(refused string) {
	r.invalidated = append(r.invalidated, refused)
	if refused == r.current {
		r.current = ""
	}
}

// TestPresenterDropsTheTokenItPresented: both clients present tokens
// through a Presenter; a refusal drops the token presented last, so that
// the next connection of either client gets a new one, and every fetch is
// bounded by the request timeout even when the client gives no deadline.
func TestPresenterDropsTheTokenItPresented(t *testing.T) {
	tokens := &rotatingTokens{}
	s := &SASL{Mechanism: "oauthbearer", HandshakeVersion: 1, Tokens: tokens, Extensions: map[string]string{"logicalCluster": "lkc-1"}}
	require.NoError(t, s.Validate())
	p := NewPresenter(s, time.Minute)
	require.Equal(t, kafka.SASLOAuthBearer, p.Mechanism())
	require.Same(t, tokens, p.Source().(*rotatingTokens))

	p.Refused() // nothing presented yet: nothing dropped
	require.Empty(t, tokens.invalidated)
	token, extensions, err := p.Token(context.Background())
	require.NoError(t, err)
	require.Equal(t, "token-1", token)
	require.Equal(t, map[string]string{"logicalCluster": "lkc-1"}, extensions)
	require.Greater(t, tokens.deadlines[0], 59*time.Second, "bounded by the request timeout")

	p.Refused()
	require.Equal(t, []string{"token-1"}, tokens.invalidated)
	token, _, err = p.Token(context.Background())
	require.NoError(t, err)
	require.Equal(t, "token-2", token, "a new token after the refusal")
}

// TestSASLValidateNamesTheKey: the checks both clients make of the SASL
// settings, each naming the key under auth::sasl.
func TestSASLValidateNamesTheKey(t *testing.T) {
	for _, tc := range []struct {
		sasl SASL
		want string
	}{
		{SASL{Mechanism: kafka.SASLPlain, Username: "u", HandshakeVersion: 1}, "password: must be set"},
		{SASL{Mechanism: "GSSAPI", HandshakeVersion: 1}, "mechanism:"},
		{SASL{Mechanism: kafka.SASLOAuthBearer, HandshakeVersion: 1}, "mechanism: OAUTHBEARER needs a token source"},
		{SASL{Mechanism: kafka.SASLSCRAMSHA256, Username: "u", Password: "p", HandshakeVersion: 1, Tokens: &rotatingTokens{}}, "mechanism: SCRAM-SHA-256 takes no token source"},
		{SASL{Mechanism: kafka.SASLPlain, Username: "u", Password: "p", HandshakeVersion: 1, Extensions: map[string]string{"a": "b"}}, "mechanism: PLAIN takes no SASL extensions"},
	} {
		require.ErrorContains(t, tc.sasl.Validate(), tc.want, "%+v", tc.sasl)
	}
	require.NoError(t, (&SASL{Mechanism: "scram-sha-512", Username: "u", Password: "p", HandshakeVersion: 1}).Validate())
	require.ErrorContains(t, (&Kerberos{Realm: "EXAMPLE.COM"}).Validate(), "service_name: must be set")
	require.Equal(t, "SCRAM-SHA-512", Mechanism(&SASL{Mechanism: "scram-sha-512"}, nil))
	require.Equal(t, GSSAPI, Mechanism(nil, &Kerberos{}))
	require.Empty(t, Mechanism(nil, nil))
}
