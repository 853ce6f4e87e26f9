package clientsettings

import (
	"errors"
	"fmt"

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

// MechanismName is the configured mechanism in Kafka's spelling.
func (s *SASL) MechanismName() string {
	return kafka.SASLMechanism(s.Mechanism)
}

// UsesToken tells whether the mechanism authenticates with bearer tokens.
func (s *SASL) UsesToken() bool {
	return kafka.SASLUsesToken(s.Mechanism)
}

// Validate checks the mechanism, the credentials and the token source it
// needs, and names the offending key under auth::sasl (without the
// prefix, which the caller adds).
func (s *SASL) Validate() error {
	if err := kafka.ValidateSASL(s.Mechanism, s.Username, s.Password, s.HandshakeVersion); err != nil {
		return err
	}
	m := s.MechanismName()
	switch uses := s.UsesToken(); {
	case uses && s.Tokens == nil:
		return fmt.Errorf("mechanism: %s needs a token source", m)
	case !uses && s.Tokens != nil:
		return fmt.Errorf("mechanism: %s takes no token source", m)
	case !uses && len(s.Extensions) > 0:
		return fmt.Errorf("mechanism: %s takes no SASL extensions", m)
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

// Validate names the offending key under auth::kerberos (without the
// prefix, which the caller adds).
func (k *Kerberos) Validate() error {
	return kafka.ValidateKerberos(k.ServiceName, k.Realm, k.Username, k.Password, k.ConfigFile, k.KeytabFile)
}

// GSSAPI is the SASL mechanism of Kerberos.
const GSSAPI = "GSSAPI"

// ErrSASLAndKerberos is the error of settings with both SASL and Kerberos.
var ErrSASLAndKerberos = errors.New("auth: only one of sasl or kerberos can be configured")

// Mechanism is the configured mechanism, GSSAPI for Kerberos, or empty.
func Mechanism(sasl *SASL, k *Kerberos) string {
	switch {
	case sasl != nil:
		return sasl.MechanismName()
	case k != nil:
		return GSSAPI
	}
	return ""
}
