// Package saramaconfig turns the receiver's Kafka client settings
// (clientsettings) into a checked sarama configuration: protocol version,
// timeouts, metadata, TLS and, through saslauth, authentication. The cluster's reads and the
// coordination membership build their clients from it.
package saramaconfig

import (
	"context"
	"fmt"
	"strings"

	"github.com/IBM/sarama"
	"go.opentelemetry.io/collector/config/configtls"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saslauth"
)

// NewestVersion is the newest Kafka protocol version the client speaks.
// It is a safe default: every request is negotiated down to what its broker
// advertises (ApiVersions), and the requests whose shape depends on the
// version (batched OffsetFetch, ConsumerGroupDescribe) fall back when the
// broker answers an older one or lacks the API.
func NewestVersion() string {
	return sarama.MaxVersion.String()
}

// CheckVersion tells whether the protocol version can be parsed.
func CheckVersion(v string) error {
	_, err := ParseVersion(v)
	return err
}

// VersionAtLeast tells whether the protocol version v is min or later; a
// version that cannot be parsed is not.
func VersionAtLeast(v, min string) bool {
	have, err := ParseVersion(v)
	if err != nil {
		return false
	}
	want, err := ParseVersion(min)
	return err == nil && have.IsAtLeast(want)
}

// VersionPattern is a regular expression (RE2 and JSON Schema alike) of the
// spellings ParseVersion reads; the Helm chart's schema holds
// protocol_version to it.
const VersionPattern = `^\s*v?(0\.[0-9]+\.[0-9]+(\.[0-9]+)?|[1-9][0-9]*\.[0-9]+(\.[0-9]+)?)\s*$`

// ParseVersion reads a protocol version in any spelling configkafka
// accepts ("3.7.0", "3.7", "v3.7", "0.10.2", "0.10.2.1"); sarama itself
// wants the patch level ("3.7.0", "0.10.2.0"). clientsettings.ParseVersion
// reads the same spellings without sarama.
func ParseVersion(v string) (sarama.KafkaVersion, error) {
	s := strings.TrimPrefix(strings.TrimSpace(v), "v")
	want := 3 // components: major.minor.patch
	if strings.HasPrefix(s, "0.") {
		want = 4 // 0.major.minor.patch
	}
	if n := strings.Count(s, ".") + 1; n == want-1 {
		s += ".0"
	}
	return sarama.ParseKafkaVersion(s)
}

// ClientConfig is the sarama configuration of the settings, checked: the
// cluster's, and the base of the coordination membership's.
func ClientConfig(s clientsettings.Settings) (*sarama.Config, error) {
	version, err := ParseVersion(s.ProtocolVersion)
	if err != nil {
		return nil, fmt.Errorf("protocol_version: %w", err)
	}
	sc := sarama.NewConfig()
	sc.ClientID = s.ClientID
	sc.Version = version
	sc.RackID = s.RackID
	sc.Net.DialTimeout = s.DialTimeout
	sc.Net.ReadTimeout = s.RequestTimeout
	sc.Net.WriteTimeout = s.RequestTimeout
	// Full metadata is what tells the client every broker (groups live on
	// all of them) and it fails fast when no broker answers. It is refreshed
	// rarely: leadership changes are caught by the errors they cause.
	sc.Metadata.Full = true
	sc.Metadata.RefreshFrequency = s.Metadata.RefreshInterval
	// Asking for a deleted topic's leader must not bring the topic back.
	sc.Metadata.AllowAutoTopicCreation = false
	sc.Metadata.Retry.Max = s.Metadata.RetryMax
	sc.Metadata.Retry.Backoff = s.Metadata.RetryBackoff
	// A refresh, retries included, ends within one request timeout: sarama
	// runs it without a context.
	sc.Metadata.Timeout = s.RequestTimeout
	if err := configureTLS(sc, s.TLS); err != nil {
		return nil, err
	}
	if err := saslauth.Configure(sc, s.SASL, s.Kerberos); err != nil {
		return nil, err
	}
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("kafka client configuration: %w", err)
	}
	return sc, nil
}

// configureTLS applies the TLS settings to the sarama configuration. Its
// errors are prefixed with the receiver's config keys.
func configureTLS(sc *sarama.Config, tlsCfg *configtls.ClientConfig) error {
	if tlsCfg != nil {
		tc, err := tlsCfg.LoadTLSConfig(context.Background())
		if err != nil {
			return fmt.Errorf("tls: %w", err)
		}
		// LoadTLSConfig returns no configuration for `insecure: true`
		// without a CA: plaintext.
		if tc != nil {
			sc.Net.TLS.Enable = true
			sc.Net.TLS.Config = tc
		}
	}
	return nil
}
