package sharegroups

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl"
	"go.opentelemetry.io/collector/config/configtls"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
)

// fakeTokens is a TokenSource handing out one token, remembering what it
// was asked to drop.
type fakeTokens struct {
	token       string
	invalidated []string
}

func (f *fakeTokens) Token(ctx context.Context) (string, error) {
	if _, ok := ctx.Deadline(); !ok {
		return "", errors.New("no deadline")
	}
	return f.token, nil
}

func (f *fakeTokens) Invalidate(refused string) { f.invalidated = append(f.invalidated, refused) }

func settings() clientsettings.Settings {
	return clientsettings.Settings{
		Brokers:         []string{"kafka-1:9092", "kafka-2:9092"},
		ClientID:        "otelcol-kafkatimelag",
		ProtocolVersion: "4.2.0",
		RequestTimeout:  10 * time.Second,
		DialTimeout:     7 * time.Second,
		ConnIdleTimeout: 9 * time.Minute,
		Metadata:        clientsettings.Metadata{RefreshInterval: 10 * time.Minute, RetryMax: 3, RetryBackoff: 250 * time.Millisecond},
	}
}

// client builds the franz-go client the settings translate to, without
// connecting.
func client(t *testing.T, s clientsettings.Settings) (*kgo.Client, clientConfig) {
	t.Helper()
	cc, err := translate(context.Background(), s)
	require.NoError(t, err)
	require.NoError(t, cc.unsupported)
	cl, err := kgo.NewClient(cc.opts...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl, cc
}

func mechanismOf(t *testing.T, cl *kgo.Client) sasl.Mechanism {
	t.Helper()
	mechanisms, _ := cl.OptValue(kgo.SASL).([]sasl.Mechanism)
	require.Len(t, mechanisms, 1)
	return mechanisms[0]
}

func TestClientSettingsReachFranzGo(t *testing.T) {
	cl, cc := client(t, settings())
	require.Equal(t, []string{"kafka-1:9092", "kafka-2:9092"}, cl.OptValue(kgo.SeedBrokers))
	require.Equal(t, "otelcol-kafkatimelag", cl.OptValue(kgo.ClientID))
	require.Equal(t, 7*time.Second, cl.OptValue(kgo.DialTimeout))
	require.Equal(t, 10*time.Second, cl.OptValue(kgo.RequestTimeoutOverhead))
	require.Equal(t, 9*time.Minute, cl.OptValue(kgo.ConnIdleTimeout))
	require.Equal(t, 10*time.Minute, cl.OptValue(kgo.MetadataMaxAge))
	require.Equal(t, int64(4), cl.OptValue(kgo.RequestRetries), "the first try and 3 retries")
	require.Equal(t, 30*time.Second, cc.callTimeout)
	require.Nil(t, cl.OptValue(kgo.DialTLSConfig), "no tls block: plaintext")
	require.Empty(t, cl.OptValue(kgo.SASL))
	versions := cl.OptValue(kgo.MaxVersions).(*kversion.Versions)
	require.True(t, versions.Equal(kversion.V4_2_0()), "the protocol version caps the requests: %s", versions.VersionGuess())
}

// The receiver's "never" (zero) for the idle timeout and the metadata
// refresh become franz-go's longest, which its client accepts.
func TestZeroMeansFranzGosLongest(t *testing.T) {
	s := settings()
	s.ConnIdleTimeout = 0
	s.Metadata.RefreshInterval = 0
	s.ProtocolVersion = "9.9.0" // newer than franz-go knows: no cap
	cl, _ := client(t, s)
	require.Equal(t, 15*time.Minute, cl.OptValue(kgo.ConnIdleTimeout))
	require.Equal(t, time.Hour, cl.OptValue(kgo.MetadataMaxAge))
	require.Nil(t, maxVersions(s.ProtocolVersion))
}

func TestTLS(t *testing.T) {
	s := settings()
	s.TLS = &configtls.ClientConfig{}
	cl, _ := client(t, s)
	require.NotNil(t, cl.OptValue(kgo.DialTLSConfig).(*tls.Config))

	s.TLS = &configtls.ClientConfig{Insecure: true}
	cl, _ = client(t, s)
	require.Nil(t, cl.OptValue(kgo.DialTLSConfig), "insecure without a CA is plaintext, as for the cluster's client")

	s.TLS = &configtls.ClientConfig{Config: configtls.Config{CAFile: "/no/such/ca.pem"}}
	_, err := translate(context.Background(), s)
	require.ErrorContains(t, err, "tls: ")
}

func TestPlain(t *testing.T) {
	s := settings()
	s.SASL = &clientsettings.SASL{Mechanism: "plain", Username: "monitor", Password: "s3cret", HandshakeVersion: 1}
	cl, _ := client(t, s)
	m := mechanismOf(t, cl)
	require.Equal(t, "PLAIN", m.Name())
	_, first, err := m.Authenticate(context.Background(), "kafka-1:9092")
	require.NoError(t, err)
	require.Equal(t, "\x00monitor\x00s3cret", string(first))
}

func TestSCRAM(t *testing.T) {
	for configured, name := range map[string]string{"SCRAM-SHA-256": "SCRAM-SHA-256", "scram-sha-512": "SCRAM-SHA-512"} {
		t.Run(name, func(t *testing.T) {
			s := settings()
			s.SASL = &clientsettings.SASL{Mechanism: configured, Username: "monitor", Password: "s3cret", HandshakeVersion: 1}
			cl, _ := client(t, s)
			m := mechanismOf(t, cl)
			require.Equal(t, name, m.Name())
			session, first, err := m.Authenticate(context.Background(), "kafka-1:9092")
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(string(first), "n,,n=monitor,r="), "client-first message: %q", first)
			nonce := strings.TrimPrefix(string(first), "n,,n=monitor,r=")

			// A broker asking for more iterations than Kafka allows is
			// refused before a key is derived.
			_, _, err = session.Challenge([]byte("r=" + nonce + "server,s=c2FsdA==,i=1000000"))
			require.ErrorContains(t, err, "1000000 PBKDF2 iterations")

			session, first, err = m.Authenticate(context.Background(), "kafka-1:9092")
			require.NoError(t, err)
			nonce = strings.TrimPrefix(string(first), "n,,n=monitor,r=")
			done, final, err := session.Challenge([]byte("r=" + nonce + "server,s=c2FsdA==,i=4096"))
			require.NoError(t, err)
			require.False(t, done)
			require.Contains(t, string(final), ",p=", "the client-final message carries the proof")
		})
	}
}

func TestTokenMechanismsShareTheTokenSource(t *testing.T) {
	for _, mechanism := range []string{kafka.SASLOAuthBearer, kafka.SASLAWSMSKIAM} {
		t.Run(mechanism, func(t *testing.T) {
			tokens := &fakeTokens{token: "eyJ.token"}
			s := settings()
			s.SASL = &clientsettings.SASL{Mechanism: mechanism, HandshakeVersion: 1, Tokens: tokens, Extensions: map[string]string{"logicalCluster": "lkc-1"}}
			cl, cc := client(t, s)
			m := mechanismOf(t, cl)
			require.Equal(t, "OAUTHBEARER", m.Name(), "AWS MSK IAM is OAUTHBEARER on the wire")
			_, first, err := m.Authenticate(context.Background(), "kafka-1:9092")
			require.NoError(t, err, "the token is fetched within a deadline of its own")
			require.Equal(t, "n,,\x01auth=Bearer eyJ.token\x01logicalCluster=lkc-1\x01\x01", string(first))

			cc.tokens.Refused()
			require.Equal(t, []string{"eyJ.token"}, tokens.invalidated, "a refused token is dropped for every client sharing the source")
		})
	}
}

func TestHandshakeVersionZero(t *testing.T) {
	s := settings()
	s.SASL = &clientsettings.SASL{Mechanism: kafka.SASLPlain, Username: "u", Password: "p", HandshakeVersion: 0}
	cl, _ := client(t, s)
	max, ok := cl.OptValue(kgo.MaxVersions).(*kversion.Versions).LookupMaxKeyVersion(kmsg.SASLHandshake.Int16())
	require.True(t, ok)
	require.Zero(t, max)
}

func TestBadSASLNamesTheKey(t *testing.T) {
	for _, tc := range []struct {
		sasl clientsettings.SASL
		want string
	}{
		{clientsettings.SASL{Mechanism: kafka.SASLPlain, Username: "u", HandshakeVersion: 1}, "auth::sasl: password: must be set"},
		{clientsettings.SASL{Mechanism: "GSSAPI", HandshakeVersion: 1}, "auth::sasl: mechanism:"},
		{clientsettings.SASL{Mechanism: kafka.SASLOAuthBearer, HandshakeVersion: 1}, "auth::sasl: mechanism: OAUTHBEARER needs a token source"},
		{clientsettings.SASL{Mechanism: kafka.SASLSCRAMSHA256, Username: "u", Password: "p", HandshakeVersion: 1, Tokens: &fakeTokens{}}, "takes no token source"},
	} {
		s := settings()
		s.SASL = &tc.sasl
		_, err := translate(context.Background(), s)
		require.ErrorContains(t, err, tc.want)
		require.NotContains(t, err.Error(), "p\"", "no password in a message")
	}
}

// Kerberos: franz-go has no GSSAPI mechanism. Share groups are then not
// read, and every call says so, naming the key, without a request.
func TestKerberosRulesShareGroupsOut(t *testing.T) {
	s := settings()
	s.Kerberos = &clientsettings.Kerberos{ServiceName: "kafka", Realm: "EXAMPLE.COM", Username: "u", Password: "p", ConfigFile: "/etc/krb5.conf"}
	c, err := New(s)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.ShareGroups(context.Background())
	require.ErrorIs(t, err, kafka.ErrShareGroupsUnsupported)
	require.ErrorContains(t, err, "auth::kerberos")
}

func TestOlderProtocolVersionRulesShareGroupsOut(t *testing.T) {
	for _, v := range []string{"4.0.0", "3.9", "v2.8.0"} {
		s := settings()
		s.ProtocolVersion = v
		c, err := New(s)
		require.NoError(t, err)
		_, err = c.ShareGroupOffsets(context.Background(), []string{"jobs"})
		require.ErrorIs(t, err, kafka.ErrShareGroupsUnsupported, v)
		require.ErrorContains(t, err, "protocol_version "+v)
		require.NoError(t, c.Close())
	}
	for _, v := range []string{"4.1", "4.1.0", "4.3.1"} {
		cc, err := translate(context.Background(), clientsettings.Settings{Brokers: []string{"k:9092"}, RequestTimeout: time.Second, ProtocolVersion: v})
		require.NoError(t, err)
		require.NoError(t, cc.unsupported, v)
	}
}
