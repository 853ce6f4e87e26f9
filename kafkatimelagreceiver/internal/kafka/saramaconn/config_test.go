package saramaconn

import (
	"fmt"
	"testing"

	"github.com/IBM/sarama"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/saramatest"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/testca"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configtls"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramaconfig"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saslauth"
)

func TestConfigureSecurity(t *testing.T) {
	s := saramatest.DefaultSettings()
	sc, err := saramaconfig.ClientConfig(s)
	require.NoError(t, err)
	require.False(t, sc.Net.SASL.Enable, "no auth by default")
	require.False(t, sc.Net.TLS.Enable, "no TLS by default")
	require.Equal(t, "plaintext, no SASL", saslauth.Summary(sc))

	for mechanism, want := range map[string]sarama.SASLMechanism{
		kafka.SASLPlain:       sarama.SASLTypePlaintext,
		kafka.SASLSCRAMSHA256: sarama.SASLTypeSCRAMSHA256,
		kafka.SASLSCRAMSHA512: sarama.SASLTypeSCRAMSHA512,
	} {
		s.SASL = &clientsettings.SASL{Mechanism: mechanism, Username: "monitor", Password: securityTestPassword, HandshakeVersion: 1}
		sc, err := saramaconfig.ClientConfig(s)
		require.NoError(t, err, mechanism)
		require.True(t, sc.Net.SASL.Enable)
		require.Equal(t, want, sc.Net.SASL.Mechanism)
		require.Equal(t, "monitor", sc.Net.SASL.User)
		require.Equal(t, securityTestPassword, sc.Net.SASL.Password)
		require.Equal(t, sarama.SASLHandshakeV1, sc.Net.SASL.Version)
		if mechanism == kafka.SASLPlain {
			require.Nil(t, sc.Net.SASL.SCRAMClientGeneratorFunc)
		} else {
			require.NotNil(t, sc.Net.SASL.SCRAMClientGeneratorFunc)
			// A new conversation per connection.
			require.NotSame(t, sc.Net.SASL.SCRAMClientGeneratorFunc(), sc.Net.SASL.SCRAMClientGeneratorFunc())
		}
	}
	s.SASL = &clientsettings.SASL{Mechanism: kafka.SASLSCRAMSHA512, Username: "monitor", Password: securityTestPassword, HandshakeVersion: 0}
	sc, err = saramaconfig.ClientConfig(s)
	require.NoError(t, err)
	require.Equal(t, sarama.SASLHandshakeV0, sc.Net.SASL.Version)
	require.False(t, sc.ApiVersionsRequest, "a v0 handshake cannot follow an ApiVersions request")

	// `insecure: true` without a CA is configkafka's way of saying plaintext.
	s.TLS = &configtls.ClientConfig{Insecure: true}
	sc, err = saramaconfig.ClientConfig(s)
	require.NoError(t, err)
	require.False(t, sc.Net.TLS.Enable)

	s.TLS = &configtls.ClientConfig{ServerName: "kafka.internal", Config: configtls.Config{CAPem: configopaque.String(testca.New(t).CertPEM)}}
	sc, err = saramaconfig.ClientConfig(s)
	require.NoError(t, err)
	require.True(t, sc.Net.TLS.Enable)
	require.Equal(t, "kafka.internal", sc.Net.TLS.Config.ServerName)
	require.NotNil(t, sc.Net.TLS.Config.RootCAs)
	summary := saslauth.Summary(sc)
	require.Equal(t, `TLS, SASL SCRAM-SHA-512 as "monitor"`, summary, "what a connection error says was attempted")
	require.NotContains(t, summary, securityTestPassword)
}

func TestSASLMechanismIsCaseInsensitive(t *testing.T) {
	s := saramatest.DefaultSettings()
	s.SASL = &clientsettings.SASL{Mechanism: " scram-sha-256", Username: "u", Password: "p", HandshakeVersion: 1}
	sc, err := saramaconfig.ClientConfig(s)
	require.NoError(t, err)
	require.Equal(t, sarama.SASLMechanism(sarama.SASLTypeSCRAMSHA256), sc.Net.SASL.Mechanism)
}

// TestNewNamesTheKey: New's errors name the configuration key at fault, and
// never show the password.
func TestNewNamesTheKey(t *testing.T) {
	sasl := func(mechanism, user, password string, version int) clientsettings.Settings {
		s := saramatest.DefaultSettings()
		s.SASL = &clientsettings.SASL{Mechanism: mechanism, Username: user, Password: password, HandshakeVersion: version}
		return s
	}
	version := saramatest.DefaultSettings()
	version.ProtocolVersion = "three"
	missingCA := saramatest.DefaultSettings()
	missingCA.TLS = &configtls.ClientConfig{Config: configtls.Config{CAFile: "/nonexistent/kafka-ca.pem"}}
	noBrokers := saramatest.DefaultSettings()
	noBrokers.Brokers = nil
	for name, tt := range map[string]struct {
		s     clientsettings.Settings
		wants []string
	}{
		"protocol version":      {version, []string{"protocol_version: "}},
		"no brokers":            {noBrokers, []string{"brokers: "}},
		"tls missing ca":        {missingCA, []string{"tls: ", "/nonexistent/kafka-ca.pem"}},
		"unsupported mechanism": {sasl("GSSAPI", "u", securityTestPassword, 1), []string{"auth::sasl: ", "mechanism", `"GSSAPI" is not supported`}},
		"no mechanism":          {sasl("", "u", securityTestPassword, 1), []string{"auth::sasl: ", "mechanism: must be set"}},
		"no username":           {sasl("PLAIN", "", securityTestPassword, 1), []string{"auth::sasl: ", "username: must be set"}},
		"no password":           {sasl("PLAIN", "u", "", 1), []string{"auth::sasl: ", "password: must be set"}},
		"bad version":           {sasl("PLAIN", "u", securityTestPassword, 2), []string{"auth::sasl: ", "version: must be 0 or 1, got 2"}},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := New(tt.s)
			require.Nil(t, c)
			require.Error(t, err)
			for _, want := range tt.wants {
				require.ErrorContains(t, err, want)
			}
			require.NotContains(t, err.Error(), securityTestPassword)
		})
	}
}

func TestWarnInsecureSecurity(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	s := saramatest.DefaultSettings()
	clientsettings.WarnInsecure(s, zap.New(core))
	require.Zero(t, logs.Len(), "nothing configured, nothing to warn about")

	s.SASL = &clientsettings.SASL{Mechanism: kafka.SASLPlain, Username: "u", Password: securityTestPassword, HandshakeVersion: 1}
	clientsettings.WarnInsecure(s, zap.New(core))
	require.Equal(t, 1, logs.FilterMessageSnippet("without TLS").Len())

	s.TLS = &configtls.ClientConfig{InsecureSkipVerify: true}
	clientsettings.WarnInsecure(s, zap.New(core))
	require.Equal(t, 1, logs.FilterMessageSnippet("insecure_skip_verify").Len())
	require.Equal(t, 1, logs.FilterMessageSnippet("without TLS").Len(), "TLS is on now")
	for _, entry := range logs.All() {
		require.NotContains(t, fmt.Sprint(entry.Message, entry.ContextMap()), securityTestPassword)
	}

	// New warns once, at creation.
	s.Logger = zap.New(core)
	before := logs.Len()
	c, err := New(s)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.Equal(t, before+1, logs.Len(), "insecure_skip_verify, once")
}
