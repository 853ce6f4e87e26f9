// Package saslauth authenticates a sarama client's connections: SASL with a
// password (PLAIN, SCRAM) or with bearer tokens (OAUTHBEARER, AWS MSK IAM),
// and Kerberos (GSSAPI). It turns the auth settings (clientsettings) into the
// client's configuration and types the brokers' refusals.
package saslauth

import (
	"context"
	"errors"
	"fmt"

	"github.com/IBM/sarama"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
)

// tokenProvider adapts a Presenter to sarama, which asks for a token on
// every connection and every re-authentication (KIP-368) and gives no
// context: the request timeout bounds the wait.
type tokenProvider struct {
	*clientsettings.Presenter
}

func (p tokenProvider) Token() (*sarama.AccessToken, error) {
	token, extensions, err := p.Presenter.Token(context.Background())
	if err != nil {
		return nil, err
	}
	return &sarama.AccessToken{Token: token, Extensions: extensions}, nil
}

// TokenRefused drops the token this client presented last after a broker
// refused it (clientsettings.Presenter.Refused).
func TokenRefused(sc *sarama.Config) {
	if tp, ok := sc.Net.SASL.TokenProvider.(tokenProvider); ok {
		tp.Refused()
	}
}

// Tokens is the source of the tokens the client's connections present,
// nil without one.
func Tokens(sc *sarama.Config) clientsettings.TokenSource {
	if tp, ok := sc.Net.SASL.TokenProvider.(tokenProvider); ok {
		return tp.Source()
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

// configureKerberos applies the Kerberos settings. Its errors are prefixed
// with the receiver's config keys.
func configureKerberos(sc *sarama.Config, sasl *clientsettings.SASL, k *clientsettings.Kerberos) error {
	if k == nil {
		return nil
	}
	if sasl != nil {
		return clientsettings.ErrSASLAndKerberos
	}
	if err := k.Validate(); err != nil {
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
