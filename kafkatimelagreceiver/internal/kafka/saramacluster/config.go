package saramacluster

import (
	"context"
	"fmt"
	"time"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"
	"go.opentelemetry.io/collector/config/configtls"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// SASL is SASL authentication with a username and password.
type SASL struct {
	// Mechanism is kafka.SASLPlain, kafka.SASLSCRAMSHA256 or
	// kafka.SASLSCRAMSHA512, in any case.
	Mechanism string
	Username  string
	Password  string
	// HandshakeVersion is 1 (Kafka 1.0+) or 0, for brokers that only speak
	// the pre-KIP-152 handshake (such as Azure Event Hubs).
	HandshakeVersion int
}

// Settings are what New needs to reach a cluster.
type Settings struct {
	Brokers  []string
	ClientID string
	// ProtocolVersion is the highest Kafka protocol version to speak, as a
	// sarama version string ("3.0.0").
	ProtocolVersion string
	// RequestTimeout is the dial, read and write deadline of each request;
	// zero means defaultRequestTimeout.
	RequestTimeout time.Duration
	// TLS encrypts connections; nil means plaintext, and so does
	// `insecure: true` without a CA, as in contrib's configkafka.
	TLS *configtls.ClientConfig
	// SASL authenticates connections; nil means no SASL.
	SASL *SASL
	// Logger is told of insecure settings and of recoveries; nil means none.
	Logger *zap.Logger
	// Observer is told of every request sent, from several goroutines at
	// once; nil means none.
	Observer kafka.RequestObserver
}

// defaultRequestTimeout is the receiver's own default, so that a zero
// timeout never leaves a silent broker holding a scrape for sarama's 30s.
const defaultRequestTimeout = 10 * time.Second

// CheckVersion tells whether sarama can parse the protocol version.
func CheckVersion(v string) error {
	_, err := sarama.ParseKafkaVersion(v)
	return err
}

func newConfig(s Settings) (*sarama.Config, error) {
	version, err := sarama.ParseKafkaVersion(s.ProtocolVersion)
	if err != nil {
		return nil, fmt.Errorf("protocol_version: %w", err)
	}
	sc := sarama.NewConfig()
	sc.ClientID = s.ClientID
	sc.Version = version
	timeout := s.RequestTimeout
	if timeout <= 0 {
		timeout = defaultRequestTimeout
	}
	sc.Net.DialTimeout = timeout
	sc.Net.ReadTimeout = timeout
	sc.Net.WriteTimeout = timeout
	// Full metadata is what tells the client every broker (groups live on
	// all of them) and it fails fast when no broker answers. It is refreshed
	// rarely: leadership changes are caught by the errors they cause.
	sc.Metadata.Full = true
	sc.Metadata.RefreshFrequency = 5 * time.Minute
	// Asking for a deleted topic's leader must not bring the topic back.
	sc.Metadata.AllowAutoTopicCreation = false
	sc.Metadata.Retry.Max = 1
	sc.Metadata.Retry.Backoff = 100 * time.Millisecond
	if err := configureSecurity(sc, s.SASL, s.TLS); err != nil {
		return nil, err
	}
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("kafka client configuration: %w", err)
	}
	return sc, nil
}

// configureSecurity applies the SASL and TLS settings to the sarama
// configuration. Its errors are prefixed with the receiver's config keys.
func configureSecurity(sc *sarama.Config, sasl *SASL, tlsCfg *configtls.ClientConfig) error {
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
	}
	return nil
}

// validate names the offending key under auth::sasl.
func (s *SASL) validate() error {
	return kafka.ValidateSASL(s.Mechanism, s.Username, s.Password, s.HandshakeVersion)
}

func (s *SASL) mechanism() string {
	return kafka.SASLMechanism(s.Mechanism)
}

// warnInsecureSecurity logs, once at start, settings that expose the
// credentials or the connection.
func warnInsecureSecurity(s Settings, logger *zap.Logger) {
	plaintext := s.TLS == nil || (s.TLS.Insecure && s.TLS.CAFile == "" && s.TLS.CAPem == "")
	if s.SASL != nil && plaintext {
		logger.Warn("SASL is configured without TLS: the credentials (in the clear with PLAIN) and all metadata cross the network unencrypted",
			zap.String("mechanism", s.SASL.mechanism()))
	}
	if s.TLS != nil && s.TLS.InsecureSkipVerify {
		logger.Warn("tls.insecure_skip_verify is set: the brokers' certificates are not verified, so a man in the middle can read the credentials and the data")
	}
}

// securitySummary says how the client authenticates and encrypts, for
// connection errors: a broker that drops a connection during SASL (as some
// proxies and test brokers do on a wrong password) leaves only an EOF, which
// means little without knowing that SASL was being attempted.
func securitySummary(sc *sarama.Config) string {
	transport := "plaintext"
	if sc.Net.TLS.Enable {
		transport = "TLS"
	}
	if !sc.Net.SASL.Enable {
		return transport + ", no SASL"
	}
	return fmt.Sprintf("%s, SASL %s as %q", transport, sc.Net.SASL.Mechanism, sc.Net.SASL.User)
}
