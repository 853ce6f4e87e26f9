package saramaconn

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramaconfig"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saslauth"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/saramatest"
)

// staticTokens is a clientsettings.TokenSource handing out one token, or an error.
type staticTokens struct {
	token       string
	err         error
	invalidated int
}

func (s *staticTokens) Token(ctx context.Context) (string, error) {
	if _, ok := ctx.Deadline(); !ok {
		return "", errors.New("no deadline")
	}
	return s.token, s.err
}

func (s *staticTokens) Invalidate(string) { s.invalidated++ }

func TestClientSettingsReachSarama(t *testing.T) {
	sc, err := saramaconfig.ClientConfig(saramatest.DefaultSettings())
	require.NoError(t, err)
	require.Equal(t, 10*time.Second, sc.Net.DialTimeout, "the settings' dial timeout")
	require.Equal(t, 10*time.Second, sc.Net.ReadTimeout)
	require.Equal(t, 10*time.Minute, sc.Metadata.RefreshFrequency)
	require.Empty(t, sc.RackID)

	s := saramatest.DefaultSettings()
	s.RequestTimeout = 4 * time.Second
	s.DialTimeout = 2 * time.Second
	s.RackID = "use1-az2"
	s.Metadata = clientsettings.Metadata{RefreshInterval: time.Minute, RetryMax: 3, RetryBackoff: time.Second}
	sc, err = saramaconfig.ClientConfig(s)
	require.NoError(t, err)
	require.Equal(t, 2*time.Second, sc.Net.DialTimeout)
	require.Equal(t, 4*time.Second, sc.Net.ReadTimeout)
	require.Equal(t, 4*time.Second, sc.Net.WriteTimeout)
	require.Equal(t, "use1-az2", sc.RackID)
	require.Equal(t, time.Minute, sc.Metadata.RefreshFrequency)
	require.Equal(t, 3, sc.Metadata.Retry.Max)
	require.Equal(t, time.Second, sc.Metadata.Retry.Backoff)
	require.True(t, sc.Metadata.Full, "the receiver needs every broker whatever metadata::full says")
}

func TestOAuthBearerToSarama(t *testing.T) {
	for _, mechanism := range []string{kafka.SASLOAuthBearer, "aws_msk_iam_oauthbearer"} {
		t.Run(mechanism, func(t *testing.T) {
			tokens := &staticTokens{token: "the-Token"}
			s := saramatest.DefaultSettings()
			s.SASL = &clientsettings.SASL{Mechanism: mechanism, HandshakeVersion: 1, Tokens: tokens, Extensions: map[string]string{"logicalCluster": "lkc-1"}}
			sc, err := saramaconfig.ClientConfig(s)
			require.NoError(t, err)
			require.True(t, sc.Net.SASL.Enable)
			require.Equal(t, sarama.SASLMechanism(sarama.SASLTypeOAuth), sc.Net.SASL.Mechanism, "AWS MSK IAM is OAUTHBEARER on the wire")
			require.Equal(t, sarama.SASLHandshakeV1, sc.Net.SASL.Version)
			tok, err := sc.Net.SASL.TokenProvider.Token()
			require.NoError(t, err)
			require.Equal(t, &sarama.AccessToken{Token: "the-Token", Extensions: map[string]string{"logicalCluster": "lkc-1"}}, tok)
			summary := saslauth.Summary(sc)
			require.Equal(t, "plaintext, SASL "+kafka.SASLMechanism(mechanism), summary)
			require.NotContains(t, summary, "the-Token")

			tokens.err = errors.New("identity provider down")
			_, err = sc.Net.SASL.TokenProvider.Token()
			require.ErrorContains(t, err, kafka.SASLMechanism(mechanism)+": identity provider down")

			saslauth.TokenRefused(sc)
			require.Equal(t, 1, tokens.invalidated)
		})
	}
}

func TestSASLTokenSettingsNameTheKey(t *testing.T) {
	for name, tt := range map[string]struct {
		sasl  *clientsettings.SASL
		wants []string
	}{
		"no token source":         {&clientsettings.SASL{Mechanism: kafka.SASLOAuthBearer, HandshakeVersion: 1}, []string{"auth::sasl: ", "needs a token source"}},
		"token source with PLAIN": {&clientsettings.SASL{Mechanism: kafka.SASLPlain, Username: "u", Password: "p", HandshakeVersion: 1, Tokens: &staticTokens{}}, []string{"takes no token source"}},
		"extensions with SCRAM":   {&clientsettings.SASL{Mechanism: kafka.SASLSCRAMSHA256, Username: "u", Password: "p", HandshakeVersion: 1, Extensions: map[string]string{"a": "b"}}, []string{"takes no SASL extensions"}},
		"handshake v0":            {&clientsettings.SASL{Mechanism: kafka.SASLAWSMSKIAM, Tokens: &staticTokens{}}, []string{"version: AWS_MSK_IAM_OAUTHBEARER needs the version 1 handshake"}},
		"password with a token":   {&clientsettings.SASL{Mechanism: kafka.SASLOAuthBearer, Password: securityTestPassword, HandshakeVersion: 1, Tokens: &staticTokens{}}, []string{"password: not used by OAUTHBEARER"}},
	} {
		t.Run(name, func(t *testing.T) {
			s := saramatest.DefaultSettings()
			s.SASL = tt.sasl
			_, err := New(s)
			require.Error(t, err)
			for _, want := range tt.wants {
				require.ErrorContains(t, err, want)
			}
			require.NotContains(t, err.Error(), securityTestPassword)
		})
	}
}

func TestKerberosToSarama(t *testing.T) {
	s := saramatest.DefaultSettings()
	s.Kerberos = &clientsettings.Kerberos{ServiceName: "kafka", Realm: "EXAMPLE.COM", Username: "lag-monitor", Password: securityTestPassword,
		ConfigFile: "/etc/krb5.conf", DisableFAST: true}
	sc, err := saramaconfig.ClientConfig(s)
	require.NoError(t, err)
	require.True(t, sc.Net.SASL.Enable)
	require.Equal(t, sarama.SASLMechanism(sarama.SASLTypeGSSAPI), sc.Net.SASL.Mechanism)
	require.Equal(t, sarama.GSSAPIConfig{
		AuthType: sarama.KRB5_USER_AUTH, KerberosConfigPath: "/etc/krb5.conf", ServiceName: "kafka",
		Username: "lag-monitor", Password: securityTestPassword, Realm: "EXAMPLE.COM", DisablePAFXFAST: true,
	}, sc.Net.SASL.GSSAPI)
	summary := saslauth.Summary(sc)
	require.Equal(t, `plaintext, SASL GSSAPI as "lag-monitor@EXAMPLE.COM"`, summary)
	require.NotContains(t, summary, securityTestPassword)

	s.Kerberos = &clientsettings.Kerberos{ServiceName: "kafka", Realm: "EXAMPLE.COM", Username: "lag-monitor", KeytabFile: "/etc/security/kafka.keytab", ConfigFile: "/etc/krb5.conf"}
	sc, err = saramaconfig.ClientConfig(s)
	require.NoError(t, err)
	require.Equal(t, sarama.KRB5_KEYTAB_AUTH, sc.Net.SASL.GSSAPI.AuthType)
	require.Equal(t, "/etc/security/kafka.keytab", sc.Net.SASL.GSSAPI.KeyTabPath)
	require.Empty(t, sc.Net.SASL.GSSAPI.Password)

	for name, tt := range map[string]struct {
		k     *clientsettings.Kerberos
		sasl  *clientsettings.SASL
		wants []string
	}{
		"missing keys":      {&clientsettings.Kerberos{}, nil, []string{"auth::kerberos: ", "service_name: must be set", "realm: must be set", "username: must be set", "config_file: must be set", "password: must be set, or keytab_file"}},
		"password + keytab": {&clientsettings.Kerberos{ServiceName: "kafka", Realm: "R", Username: "u", Password: securityTestPassword, KeytabFile: "/k", ConfigFile: "/c"}, nil, []string{"password: not used with keytab_file"}},
		"with sasl":         {&clientsettings.Kerberos{}, &clientsettings.SASL{Mechanism: kafka.SASLPlain, Username: "u", Password: "p", HandshakeVersion: 1}, []string{"only one of sasl or kerberos"}},
	} {
		t.Run(name, func(t *testing.T) {
			s := saramatest.DefaultSettings()
			s.Kerberos, s.SASL = tt.k, tt.sasl
			_, err := New(s)
			require.Error(t, err)
			for _, want := range tt.wants {
				require.ErrorContains(t, err, want)
			}
			require.NotContains(t, err.Error(), securityTestPassword)
		})
	}
}

func TestWarnKerberosWithoutTLS(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	s := saramatest.DefaultSettings()
	s.Kerberos = &clientsettings.Kerberos{ServiceName: "kafka", Realm: "R", Username: "u", Password: securityTestPassword, ConfigFile: "/c"}
	clientsettings.WarnInsecure(s, zap.New(core))
	warned := logs.FilterMessageSnippet("without TLS").All()
	require.Len(t, warned, 1)
	require.Equal(t, "GSSAPI", warned[0].ContextMap()["mechanism"])
}
