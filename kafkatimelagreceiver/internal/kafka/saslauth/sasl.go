package saslauth

import (
	"fmt"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
)

// Configure applies the SASL or Kerberos settings (at most one; nil: none)
// to the sarama configuration. Its errors are prefixed with the receiver's
// config keys.
func Configure(sc *sarama.Config, sasl *clientsettings.SASL, k *clientsettings.Kerberos) error {
	if k != nil {
		return configureKerberos(sc, sasl, k)
	}
	if sasl == nil {
		return nil
	}
	if err := sasl.Validate(); err != nil {
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
	switch sasl.MechanismName() {
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
		sc.Net.SASL.TokenProvider = tokenProvider{clientsettings.NewPresenter(sasl, sc.Net.ReadTimeout)}
	}
	return nil
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
		if tp, ok := sc.Net.SASL.TokenProvider.(tokenProvider); ok {
			return fmt.Sprintf("%s, SASL %s", transport, tp.Mechanism())
		}
	case sarama.SASLTypeGSSAPI:
		return fmt.Sprintf("%s, SASL GSSAPI as %q", transport, sc.Net.SASL.GSSAPI.Username+"@"+sc.Net.SASL.GSSAPI.Realm)
	}
	return fmt.Sprintf("%s, SASL %s as %q", transport, sc.Net.SASL.Mechanism, sc.Net.SASL.User)
}
