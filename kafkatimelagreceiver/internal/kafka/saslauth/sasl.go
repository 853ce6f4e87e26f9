package saslauth

import (
	"fmt"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// SASL is SASL authentication with a username and password, or with
// bearer tokens.
type SASL struct {
	// Mechanism is one of the kafka.SASL* mechanisms, in any case.
	Mechanism string
	Username  string
	Password  string
	// HandshakeVersion is 1 (Kafka 1.0+) or 0, for brokers that only speak
	// the pre-KIP-152 handshake (such as Azure Event Hubs).
	HandshakeVersion int
	// Tokens supplies the tokens of kafka.SASLOAuthBearer and
	// kafka.SASLAWSMSKIAM.
	Tokens TokenSource
	// Extensions are the SASL extensions (KIP-342) sent with every token,
	// such as Confluent Cloud's logicalCluster and identityPoolId.
	Extensions map[string]string
}

// Configure applies the SASL or Kerberos settings (at most one; nil: none)
// to the sarama configuration. Its errors are prefixed with the receiver's
// config keys.
func Configure(sc *sarama.Config, sasl *SASL, k *Kerberos) error {
	if k != nil {
		return configureKerberos(sc, sasl, k)
	}
	if sasl == nil {
		return nil
	}
	if err := sasl.validate(); err != nil {
		return fmt.Errorf("auth::sasl: %w", err)
	}
	sc.Net.SASL.Enable = true
	sc.Net.SASL.Handshake = true
	sc.Net.SASL.User = sasl.Username
	sc.Net.SASL.Password = sasl.Password
	sc.Net.SASL.Version = sarama.SASLHandshakeV1
	if sasl.HandshakeVersion == 0 {
		sc.Net.SASL.Version = sarama.SASLHandshakeV0
		// A v0 broker reads the first bytes after the handshake as SASL
		// tokens: sarama refuses to send ApiVersions first.
		sc.ApiVersionsRequest = false
	}
	switch sasl.mechanism() {
	case kafka.SASLPlain:
		sc.Net.SASL.Mechanism = sarama.SASLTypePlaintext
	case kafka.SASLSCRAMSHA256:
		sc.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA256
		sc.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: scram.SHA256} }
	case kafka.SASLSCRAMSHA512:
		sc.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
		sc.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: scram.SHA512} }
	case kafka.SASLOAuthBearer, kafka.SASLAWSMSKIAM:
		sc.Net.SASL.Mechanism = sarama.SASLTypeOAuth
		sc.Net.SASL.TokenProvider = &tokenProvider{mechanism: sasl.mechanism(), tokens: sasl.Tokens, extensions: sasl.Extensions, timeout: sc.Net.ReadTimeout}
	}
	return nil
}

// validate names the offending key under auth::sasl.
func (s *SASL) validate() error {
	if err := kafka.ValidateSASL(s.Mechanism, s.Username, s.Password, s.HandshakeVersion); err != nil {
		return err
	}
	return s.validateTokens()
}

func (s *SASL) mechanism() string {
	return kafka.SASLMechanism(s.Mechanism)
}

// Summary says how the client authenticates and encrypts, for
// connection errors: a broker that drops a connection during SASL (as some
// proxies and test brokers do on a wrong password) leaves only an EOF, which
// means little without knowing that SASL was being attempted.
func Summary(sc *sarama.Config) string {
	transport := "plaintext"
	// A Cluster's connections do TLS in its dialer: Enable is off there,
	// the configuration kept.
	if sc.Net.TLS.Enable || sc.Net.TLS.Config != nil {
		transport = "TLS"
	}
	if !sc.Net.SASL.Enable {
		return transport + ", no SASL"
	}
	switch sc.Net.SASL.Mechanism {
	case sarama.SASLTypeOAuth:
		if tp, ok := sc.Net.SASL.TokenProvider.(*tokenProvider); ok {
			return fmt.Sprintf("%s, SASL %s", transport, tp.mechanism)
		}
	case sarama.SASLTypeGSSAPI:
		return fmt.Sprintf("%s, SASL GSSAPI as %q", transport, sc.Net.SASL.GSSAPI.Username+"@"+sc.Net.SASL.GSSAPI.Realm)
	}
	return fmt.Sprintf("%s, SASL %s as %q", transport, sc.Net.SASL.Mechanism, sc.Net.SASL.User)
}
