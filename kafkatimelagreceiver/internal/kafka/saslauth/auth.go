// Package saslauth authenticates a sarama client's connections: SASL with a
// password (PLAIN, SCRAM) or with bearer tokens (OAUTHBEARER, AWS MSK IAM),
// and Kerberos (GSSAPI). It turns the receiver's auth settings into the
// client's configuration and types the brokers' refusals.
package saslauth

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// TokenSource supplies OAUTHBEARER tokens; *oauthbearer.Cache is one.
type TokenSource interface {
	// Token returns a token valid for a while yet.
	Token(ctx context.Context) (string, error)
	// Invalidate drops a token the brokers refused, if it is still the
	// current one, so that the next connection gets a new one.
	Invalidate(refused string)
}

// tokenProvider adapts a TokenSource to sarama, which asks for a token on
// every connection and every re-authentication (KIP-368) and gives no
// context: the request timeout bounds the wait.
type tokenProvider struct {
	mechanism  string
	tokens     TokenSource
	extensions map[string]string
	timeout    time.Duration
	// presented is the token last handed to this client's connections:
	// the one a refusal that reaches the client refers to, unless the
	// client already asked for another.
	presented atomic.Pointer[string]
}

func (p *tokenProvider) Token() (*sarama.AccessToken, error) {
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	defer cancel()
	token, err := p.tokens.Token(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.mechanism, err)
	}
	p.presented.Store(&token)
	return &sarama.AccessToken{Token: token, Extensions: p.extensions}, nil
}

// TokenRefused drops the token this client presented last after a broker
// refused it: a broker that refuses a token before its expiry (revoked, or
// signed with keys the identity provider has rotated) would refuse it
// again. A token another client sharing the source replaced already stays
// replaced.
func TokenRefused(sc *sarama.Config) {
	if tp, ok := sc.Net.SASL.TokenProvider.(*tokenProvider); ok {
		if presented := tp.presented.Load(); presented != nil {
			tp.tokens.Invalidate(*presented)
		}
	}
}

// Tokens is the source of the tokens the client's connections present,
// nil without one.
func Tokens(sc *sarama.Config) TokenSource {
	if tp, ok := sc.Net.SASL.TokenProvider.(*tokenProvider); ok {
		return tp.tokens
	}
	return nil
}

// Authentication types a broker's refusal of the credentials.
func Authentication(err error) error {
	if errors.Is(err, sarama.ErrSASLAuthenticationFailed) {
		return &kafka.AuthenticationError{Err: err}
	}
	return err
}

// validateTokens checks what the token mechanisms need besides ValidateSASL.
func (s *SASL) validateTokens() error {
	uses := kafka.SASLUsesToken(s.Mechanism)
	switch {
	case uses && s.Tokens == nil:
		return fmt.Errorf("mechanism: %s needs a token source", s.mechanism())
	case !uses && s.Tokens != nil:
		return fmt.Errorf("mechanism: %s takes no token source", s.mechanism())
	case !uses && len(s.Extensions) > 0:
		return fmt.Errorf("mechanism: %s takes no SASL extensions", s.mechanism())
	}
	return nil
}

// Kerberos is SASL/GSSAPI authentication with a password or a keytab, as
// contrib's configkafka `auth::kerberos` block describes it.
type Kerberos struct {
	ServiceName string
	Realm       string
	Username    string
	// Password is used when KeytabFile is empty.
	Password   string
	KeytabFile string
	// ConfigFile is the krb5.conf naming the realm's KDCs.
	ConfigFile string
	// DisableFAST turns off PA-FX-FAST, which some KDCs do not speak.
	DisableFAST bool
}

// configureKerberos applies the Kerberos settings. Its errors are prefixed
// with the receiver's config keys.
func configureKerberos(sc *sarama.Config, sasl *SASL, k *Kerberos) error {
	if k == nil {
		return nil
	}
	if sasl != nil {
		return errors.New("auth: only one of sasl or kerberos can be configured")
	}
	if err := k.validate(); err != nil {
		return fmt.Errorf("auth::kerberos: %w", err)
	}
	sc.Net.SASL.Enable = true
	sc.Net.SASL.Handshake = true
	sc.Net.SASL.Version = sarama.SASLHandshakeV1
	sc.Net.SASL.Mechanism = sarama.SASLTypeGSSAPI
	sc.Net.SASL.GSSAPI = sarama.GSSAPIConfig{
		AuthType:           sarama.KRB5_USER_AUTH,
		KerberosConfigPath: k.ConfigFile,
		ServiceName:        k.ServiceName,
		Username:           k.Username,
		Password:           k.Password,
		Realm:              k.Realm,
		DisablePAFXFAST:    k.DisableFAST,
	}
	if k.KeytabFile != "" {
		sc.Net.SASL.GSSAPI.AuthType = sarama.KRB5_KEYTAB_AUTH
		sc.Net.SASL.GSSAPI.KeyTabPath = k.KeytabFile
		sc.Net.SASL.GSSAPI.Password = ""
	}
	return nil
}

// validate names the offending key under auth::kerberos.
func (k *Kerberos) validate() error {
	return kafka.ValidateKerberos(k.ServiceName, k.Realm, k.Username, k.Password, k.ConfigFile, k.KeytabFile)
}

// Mechanism is the configured mechanism, GSSAPI for Kerberos, or empty.
func Mechanism(sasl *SASL, k *Kerberos) string {
	switch {
	case sasl != nil:
		return sasl.mechanism()
	case k != nil:
		return sarama.SASLTypeGSSAPI
	}
	return ""
}
