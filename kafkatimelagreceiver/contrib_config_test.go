package kafkatimelagreceiver

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/kafka/configkafka"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// contribBlocks is the file of contrib-shaped client blocks at the top of
// the repository.
var contribBlocks = filepath.Join("..", "testdata", "configkafka-client.yaml")

// loadContribBlock unmarshals one block of contribBlocks both into contrib's
// configkafka.ClientConfig (over its defaults) and into the receiver's
// configuration (over its defaults).
func loadContribBlock(t *testing.T, id string) (*confmap.Conf, configkafka.ClientConfig, *Config) {
	t.Helper()
	cm, err := confmaptest.LoadConf(contribBlocks)
	require.NoError(t, err)
	sub, err := cm.Sub(id)
	require.NoError(t, err)
	contrib := configkafka.NewDefaultClientConfig()
	require.NoError(t, sub.Unmarshal(&contrib), "contrib loads %s", id)
	ours := NewFactory().CreateDefaultConfig().(*Config)
	require.NoError(t, sub.Unmarshal(ours), "the receiver loads %s unchanged", id)
	return sub, contrib, ours
}

// asContrib is the receiver's client configuration as configkafka's type.
func asContrib(cfg *Config) configkafka.ClientConfig {
	out := configkafka.ClientConfig{
		Brokers:         cfg.Brokers,
		ProtocolVersion: cfg.ProtocolVersion,
		ClientID:        cfg.ClientID,
		TLS:             cfg.TLS,
		Metadata: configkafka.MetadataConfig{
			Full:            cfg.Metadata.Full,
			RefreshInterval: cfg.Metadata.RefreshInterval,
			Retry:           configkafka.MetadataRetryConfig{Max: cfg.Metadata.Retry.Max, Backoff: cfg.Metadata.Retry.Backoff},
		},
		RackID:          cfg.RackID,
		UseLeaderEpoch:  cfg.UseLeaderEpoch,
		ConnIdleTimeout: cfg.ConnIdleTimeout,
		DialTimeout:     cfg.DialTimeout,
	}
	if s := cfg.Auth.SASL; s != nil {
		out.Authentication.SASL = &configkafka.SASLConfig{
			Username:               s.Username,
			Password:               string(s.Password),
			Mechanism:              s.Mechanism,
			AWSMSK:                 configkafka.AWSMSKConfig{Region: s.AWSMSK.Region},
			OAuthBearerTokenSource: s.OAuthBearerTokenSource,
		}
	}
	if k := cfg.Auth.Kerberos; k != nil {
		out.Authentication.Kerberos = &configkafka.KerberosConfig{
			ServiceName:     k.ServiceName,
			Realm:           k.Realm,
			UseKeyTab:       k.UseKeyTab,
			Username:        k.Username,
			Password:        string(k.Password),
			ConfigPath:      k.ConfigPath,
			KeyTabPath:      k.KeyTabPath,
			DisablePAFXFAST: k.DisablePAFXFAST,
		}
	}
	return out
}

// requireSameAsContrib: the block means to the receiver what it means to
// contrib, but for the defaults the receiver deliberately sets otherwise
// (README, configuration table) where the block leaves them unset.
func requireSameAsContrib(t *testing.T, block *confmap.Conf, contrib configkafka.ClientConfig, ours *Config) {
	t.Helper()
	want := contrib
	if !block.IsSet("client_id") {
		require.Equal(t, "otel-collector", want.ClientID)
		want.ClientID = defaultClientID
	}
	if !block.IsSet("protocol_version") {
		require.Empty(t, want.ProtocolVersion)
		want.ProtocolVersion = defaultProtocolVersion()
	}
	if !block.IsSet("metadata::retry::max") {
		require.Equal(t, 20, want.Metadata.Retry.Max)
		want.Metadata.Retry.Max = defaultMetadataRetryMax
	}
	require.Equal(t, want, asContrib(ours))
}

// contribClientKeys are the keys of configkafka.ClientConfig: what one with
// every optional block set marshals to.
func contribClientKeys(t *testing.T) []string {
	t.Helper()
	full := configkafka.NewDefaultClientConfig()
	full.TLS = &configtls.ClientConfig{}
	full.Authentication = configkafka.AuthenticationConfig{
		SASL:     &configkafka.SASLConfig{OAuthBearerTokenSource: component.MustNewID("oauth2client")},
		Kerberos: &configkafka.KerberosConfig{},
	}
	conf := confmap.New()
	require.NoError(t, conf.Marshal(full))
	keys := conf.AllKeys()
	sort.Strings(keys)
	return keys
}

// TestContribClientBlockEveryKey: the testdata block sets every key
// configkafka has, and each one lands where contrib puts it. When a
// contrib release adds a key, this fails until the receiver takes it.
func TestContribClientBlockEveryKey(t *testing.T) {
	keys := contribClientKeys(t)
	require.Contains(t, keys, "auth::kerberos::disable_fast_negotiation", "the marshaled keys are the leaves")
	block, contrib, ours := loadContribBlock(t, "kafka/every_key")
	for _, key := range keys {
		require.True(t, block.IsSet(key), "testdata/configkafka-client.yaml kafka/every_key lacks %s", key)
	}
	requireSameAsContrib(t, block, contrib, ours)

	// Values as written, to be sure that the comparison compares something.
	require.Equal(t, []string{"kafka-1.example.com:9096", "kafka-2.example.com:9096"}, ours.Brokers)
	require.Equal(t, "use1-az2", ours.RackID)
	require.False(t, ours.UseLeaderEpoch)
	require.Equal(t, 5*time.Minute, ours.ConnIdleTimeout)
	require.Equal(t, 30*time.Second, ours.DialTimeout)
	require.Equal(t, MetadataConfig{Full: false, RefreshInterval: 2 * time.Minute, Retry: MetadataRetryConfig{Max: 3, Backoff: time.Second}}, ours.Metadata)
	require.Equal(t, "kafka.internal", ours.TLS.ServerName)
	require.Equal(t, "eu-west-1", ours.Auth.SASL.AWSMSK.Region)
	require.Equal(t, component.MustNewID("oauth2client"), ours.Auth.SASL.OAuthBearerTokenSource)
	require.Equal(t, "krb-Pa55-w0rd", string(ours.Auth.Kerberos.Password))
	require.True(t, ours.Auth.Kerberos.DisablePAFXFAST)

	// Both refuse sasl and kerberos together.
	const both = "only one of sasl or kerberos authentication can be configured"
	require.ErrorContains(t, confmap.Validate(&contrib), both)
	require.ErrorContains(t, confmap.Validate(ours), both)
}

// TestEveryContribKeyIsAReceiverKey loads what configkafka marshals to, so
// that no key of it is unknown to the receiver (confmap refuses unknown
// keys), whatever testdata holds.
func TestEveryContribKeyIsAReceiverKey(t *testing.T) {
	full := configkafka.NewDefaultClientConfig()
	full.TLS = &configtls.ClientConfig{ServerName: "kafka.internal"}
	full.Authentication.Kerberos = &configkafka.KerberosConfig{ServiceName: "kafka", UseKeyTab: true, KeyTabPath: "/k"}
	conf := confmap.New()
	require.NoError(t, conf.Marshal(full))
	ours := NewFactory().CreateDefaultConfig().(*Config)
	require.NoError(t, conf.Unmarshal(ours))
	require.Equal(t, full, asContrib(ours))
}

// TestContribDocBlocksLoadUnchanged: the blocks of contrib's docs load with
// contrib's meaning and are valid for the receiver as they are for contrib,
// once the files they name exist.
func TestContribDocBlocksLoadUnchanged(t *testing.T) {
	for _, id := range []string{"kafka/full", "kafka/scram", "kafka/oauthbearer", "kafka/aws_msk_iam", "kafka/kerberos", "kafka"} {
		t.Run(id, func(t *testing.T) {
			block, contrib, ours := loadContribBlock(t, id)
			requireSameAsContrib(t, block, contrib, ours)
			require.NoError(t, confmap.Validate(&contrib))

			// The receiver reads the TLS and Kerberos files when it
			// validates (so that a missing one shows before the collector
			// starts): they must exist.
			if ours.TLS != nil && ours.TLS.CAFile != "" {
				require.ErrorContains(t, confmap.Validate(ours), "tls: ")
				ca := newTestCA(t)
				certPEM, keyPEM := ca.issue(t, secMonitorUser, nil, nil)
				dir := t.TempDir()
				ours.TLS.CAFile = writeTestFile(t, dir, "ca.pem", ca.certPEM)
				ours.TLS.CertFile = writeTestFile(t, dir, "cert.pem", certPEM)
				ours.TLS.KeyFile = writeTestFile(t, dir, "key.pem", keyPEM)
			}
			if k := ours.Auth.Kerberos; k != nil {
				require.ErrorContains(t, confmap.Validate(ours), "auth::kerberos::keytab_file: ")
				dir := t.TempDir()
				k.ConfigPath = writeTestFile(t, dir, "krb5.conf", []byte("[libdefaults]\n  default_realm = EXAMPLE.COM\n"))
				k.KeyTabPath = writeTestFile(t, dir, "kafka.keytab", []byte{5, 2})
			}
			require.NoError(t, confmap.Validate(ours))
		})
	}
}

func writeTestFile(t *testing.T, dir, name string, content []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, content, 0o600))
	return path
}

// TestContribDefaultsDiffer pins the three defaults the receiver sets
// otherwise than configkafka, which the README explains.
func TestContribDefaultsDiffer(t *testing.T) {
	contrib := configkafka.NewDefaultClientConfig()
	ours := NewFactory().CreateDefaultConfig().(*Config)
	got := asContrib(ours)
	require.Equal(t, "otel-kafkatimelag", got.ClientID)
	require.Equal(t, "4.3.1", got.ProtocolVersion)
	require.Equal(t, 1, got.Metadata.Retry.Max)
	got.ClientID, got.ProtocolVersion, got.Metadata.Retry.Max = contrib.ClientID, contrib.ProtocolVersion, contrib.Metadata.Retry.Max
	require.Equal(t, contrib, got, "every other default is configkafka's")
}

// TestMetadataFullFalseIsSaid: `metadata::full: false`, a no-op in contrib
// too, is accepted and said to change nothing rather than ignored silently.
func TestMetadataFullFalseIsSaid(t *testing.T) {
	_, _, cfg := loadContribBlock(t, "kafka/full")
	require.False(t, cfg.Metadata.Full)
	core, logs := observer.New(zap.InfoLevel)
	_, err := cfg.clusterSettings(context.Background(), nil, zap.New(core), nil)
	require.NoError(t, err)
	require.Equal(t, 1, logs.FilterMessageSnippet("metadata::full: false has no effect").Len())

	cfg.Metadata.Full = true
	core, logs = observer.New(zap.InfoLevel)
	_, err = cfg.clusterSettings(context.Background(), nil, zap.New(core), nil)
	require.NoError(t, err)
	require.Zero(t, logs.Len())
}
