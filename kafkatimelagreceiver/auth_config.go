package kafkatimelagreceiver

import (
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/confmap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// AuthConfig authenticates the receiver to the brokers. It has the shape of
// the `auth` block of contrib's configkafka client configuration, so that a
// block written for the kafka receiver or exporter can be copied here.
type AuthConfig struct {
	// SASL, when set, authenticates every connection with SASL.
	SASL *SASLConfig `mapstructure:"sasl"`
}

// SASLConfig is SASL authentication with a username and password.
type SASLConfig struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	Mechanism string `mapstructure:"mechanism"`
	Username  string `mapstructure:"username"`
	// Password is opaque so that it is never printed, logged or marshaled.
	Password configopaque.String `mapstructure:"password"`
	// Version is the SASL handshake version: 1 (the default, Kafka 1.0+) or
	// 0 (for brokers that only speak the pre-KIP-152 handshake, such as
	// Azure Event Hubs). Named as in configkafka.
	Version int `mapstructure:"version"`
}

// Unmarshal defaults the handshake version to 1 before the user's keys are
// applied: configkafka leaves it at 0, but Kafka 4.0 dropped the v0
// handshake and every broker since 1.0 speaks v1. An explicit `version: 0`
// still wins.
func (c *SASLConfig) Unmarshal(conf *confmap.Conf) error {
	c.Version = 1
	return conf.Unmarshal(c)
}

// Validate names the offending key; confmap prefixes it with auth::sasl.
func (c *SASLConfig) Validate() error {
	return kafka.ValidateSASL(c.Mechanism, c.Username, string(c.Password), c.Version)
}
