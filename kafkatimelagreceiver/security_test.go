//go:build !unit

package kafkatimelagreceiver

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/configcheck"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/testca"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/oauth2"
)

const securityTestPassword = "s3cr3t-Pa55"

// loadSecurityConfig unmarshals the named entry of
// testdata/security_config.yaml over the default configuration.
func loadSecurityConfig(t *testing.T, name string) *Config {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "security_config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub(component.NewIDWithName(metadata.Type, name).String())
	require.NoError(t, err)
	require.NotEmpty(t, sub.AllKeys(), "no entry %s in testdata/security_config.yaml", name)
	cfg := NewFactory().CreateDefaultConfig()
	require.NoError(t, sub.Unmarshal(cfg))
	return cfg.(*Config)
}

func TestSecurityConfigUnmarshal(t *testing.T) {
	cfg := loadSecurityConfig(t, "sasl_scram_tls")
	require.NotNil(t, cfg.Auth.SASL)
	require.Equal(t, "SCRAM-SHA-512", cfg.Auth.SASL.Mechanism)
	require.Equal(t, "lag-monitor", cfg.Auth.SASL.Username)
	require.Equal(t, configopaque.String(securityTestPassword), cfg.Auth.SASL.Password)
	require.Equal(t, 1, cfg.Auth.SASL.Version, "the handshake version defaults to 1")
	require.NotNil(t, cfg.TLS)
	require.Equal(t, "/etc/kafka/ca.pem", cfg.TLS.CAFile)
	require.Equal(t, "/etc/kafka/client.pem", cfg.TLS.CertFile)
	require.Equal(t, "/etc/kafka/client-key.pem", cfg.TLS.KeyFile)
	require.Equal(t, "kafka.internal", cfg.TLS.ServerName)
	// The files do not exist here: everything but loading them is valid.
	err := confmap.Validate(cfg)
	require.ErrorContains(t, err, "tls: ")
	require.ErrorContains(t, err, "/etc/kafka/ca.pem")

	v0 := loadSecurityConfig(t, "sasl_plain_v0")
	require.NoError(t, confmap.Validate(v0))
	require.Equal(t, 0, v0.Auth.SASL.Version, "an explicit version 0 is kept")
	require.Nil(t, v0.TLS, "no tls key: plaintext")

	def := NewFactory().CreateDefaultConfig().(*Config)
	require.Nil(t, def.Auth.SASL, "no authentication by default")
	require.Nil(t, def.TLS, "no TLS by default")

	empty := loadSecurityConfig(t, "tls_empty")
	require.NotNil(t, empty.TLS, "tls: {} turns TLS on")
	require.NoError(t, confmap.Validate(empty))
	settings, err := empty.clusterSettings(context.Background(), nil, zap.NewNop(), nil)
	require.NoError(t, err)
	require.NotNil(t, settings.TLS, "the Kafka client is asked for TLS")
	cl, err := newCluster(context.Background(), empty, nil, zap.NewNop(), nil)
	require.NoError(t, err)
	require.NoError(t, cl.Close())
}

func TestSecurityConfigClientCredentialsUnmarshal(t *testing.T) {
	cfg := loadSecurityConfig(t, "sasl_oauthbearer_client_credentials")
	require.NoError(t, confmap.Validate(cfg))
	require.Equal(t, &OAuthBearerConfig{
		TokenURL:       "https://idp.example.com/oauth2/token",
		ClientID:       "lag-monitor",
		ClientSecret:   securityTestPassword,
		Scopes:         []string{"kafka", "offline"},
		EndpointParams: url.Values{"audience": {"kafka-cluster"}},
		Extensions:     map[string]string{"logicalCluster": "lkc-1", "identityPoolId": "pool-2"},
	}, cfg.Auth.SASL.OAuthBearer)
	settings, err := cfg.clusterSettings(context.Background(), nil, zap.NewNop(), nil)
	require.NoError(t, err)
	require.NotNil(t, settings.SASL.Tokens, "tokens come from the grant")
	require.Equal(t, cfg.Auth.SASL.OAuthBearer.Extensions, settings.SASL.Extensions)
}

// TestSecurityConfigTLSNull documents what a bare `tls:` key means: YAML
// null, which confmap leaves as no TLS configuration.
func TestSecurityConfigTLSNull(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "security_config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub(component.NewIDWithName(metadata.Type, "tls_null").String())
	require.NoError(t, err)
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	require.NoError(t, sub.Unmarshal(cfg))
	require.Nil(t, cfg.TLS, "a bare tls: is null: write tls: {} to turn TLS on with defaults")
	require.NoError(t, confmap.Validate(cfg))
}

func TestSecurityConfigInvalid(t *testing.T) {
	for name, tt := range map[string]struct {
		wants []string // substrings of the error, naming the key
		// onlyConfig: a key the Kafka client would not use; only the
		// configuration refuses it. Otherwise building the client
		// refuses it too.
		onlyConfig bool
	}{
		"sasl_unsupported_mechanism":     {wants: []string{"auth::sasl", "mechanism", `"GSSAPI" is not supported`, "auth::kerberos"}},
		"sasl_aws_msk_iam_with_password": {wants: []string{"auth::sasl", "username: not used by AWS_MSK_IAM_OAUTHBEARER", "password: not used", "aws_msk::region: must be set"}},
		"sasl_no_mechanism":              {wants: []string{"auth::sasl", "mechanism: must be set"}},
		"sasl_no_username":               {wants: []string{"auth::sasl", "username: must be set"}},
		"sasl_no_password":               {wants: []string{"auth::sasl", "password: must be set"}},
		"sasl_bad_version":               {wants: []string{"auth::sasl", "version: must be 0 or 1, got 2"}},
		"sasl_aws_msk_no_region":         {wants: []string{"auth::sasl: aws_msk::region: must be set for AWS_MSK_IAM_OAUTHBEARER"}, onlyConfig: true},
		"sasl_aws_msk_v0":                {wants: []string{"auth::sasl: version: AWS_MSK_IAM_OAUTHBEARER needs the version 1 handshake"}},
		"sasl_oauthbearer_no_source":     {wants: []string{"auth::sasl: oauthbearer_token_source: must name the extension", "oauthbearer::token_url"}},
		"sasl_oauthbearer_two_sources":   {wants: []string{"auth::sasl: oauthbearer_token_source: set it or oauthbearer::token_url, not both"}, onlyConfig: true},
		"sasl_oauthbearer_grant_incomplete": {wants: []string{
			`oauthbearer::token_url: "idp.example.com/token" is not an http(s) URL`, "oauthbearer::client_id: must be set with token_url",
		}, onlyConfig: true},
		"sasl_oauthbearer_bad_extension": {wants: []string{
			"oauthbearer::client_secret: used only with oauthbearer::token_url",
			`oauthbearer::extensions: "auth" is not a SASL extension name`, `"logical-cluster" is not a SASL extension name`,
		}, onlyConfig: true},
		"sasl_plain_with_token_keys": {wants: []string{
			"aws_msk::region: used only by AWS_MSK_IAM_OAUTHBEARER", "oauthbearer_token_source: used only by OAUTHBEARER", "oauthbearer: used only by OAUTHBEARER",
		}, onlyConfig: true},
		"sasl_and_kerberos": {wants: []string{"auth: only one of sasl or kerberos authentication can be configured"}},
		"kerberos_incomplete": {wants: []string{
			"auth::kerberos: ", "service_name: must be set", "realm: must be set", "username: must be set", "config_file: must be set",
			"keytab_file: must be set when use_keytab is true",
		}},
		"kerberos_missing_files": {wants: []string{"auth::kerberos: config_file: ", "/nonexistent/krb5.conf", "keytab_file: ", "/nonexistent/kafka.keytab"}, onlyConfig: true},
		"tls_missing_ca":         {wants: []string{"tls: ", "/nonexistent/kafka-ca.pem"}},
		"tls_cert_without_key":   {wants: []string{"tls: ", "key"}},
		"tls_bad_min_version":    {wants: []string{"0.9"}},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := loadSecurityConfig(t, name)
			err := confmap.Validate(cfg)
			require.Error(t, err)
			for _, want := range tt.wants {
				require.ErrorContains(t, err, want)
			}
			require.NotContains(t, err.Error(), securityTestPassword)
			if tt.onlyConfig {
				return
			}
			// Whatever Validate let through, building the client rejects.
			_, err = newCluster(context.Background(), cfg, nil, zap.NewNop(), nil)
			require.Error(t, err, "the Kafka client's configuration must refuse it too")
			require.NotContains(t, err.Error(), securityTestPassword)
		})
	}
}

func TestSASLMechanismIsCaseInsensitive(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.Brokers = []string{"kafka-1:9092"}
	cfg.Auth.SASL = &SASLConfig{Mechanism: "scram-sha-256", Username: "u", Password: "p", Version: 1}
	require.NoError(t, confmap.Validate(cfg))
	settings, err := cfg.clusterSettings(context.Background(), nil, zap.NewNop(), nil)
	require.NoError(t, err)
	require.Equal(t, kafka.SASLSCRAMSHA256, settings.SASL.Mechanism)
	cl, err := newCluster(context.Background(), cfg, nil, zap.NewNop(), nil)
	require.NoError(t, err)
	require.NoError(t, cl.Close())
}

// TestPasswordNeverPrinted: the secrets (SASL password, OAuth client
// secret, Kerberos password, TLS key) must not show in any way the
// configuration can be printed, marshaled or logged.
func TestPasswordNeverPrinted(t *testing.T) {
	secrets := []string{securityTestPassword, "client-S3cret-77", "krb-S3cret-88", "tls-Key-S3cret-99"}
	cfg := loadSecurityConfig(t, "all_secrets")
	require.Equal(t, configopaque.String(securityTestPassword), cfg.Auth.SASL.Password, "the values are there to leak")
	require.Equal(t, configopaque.String("client-S3cret-77"), cfg.Auth.SASL.OAuthBearer.ClientSecret)
	require.Equal(t, configopaque.String("krb-S3cret-88"), cfg.Auth.Kerberos.Password)

	// Only the verbs that call String and GoString: Go's fmt prints a
	// pointer field under a verb it does not fit (%s, %d) raw, without
	// calling any method, whatever the field's type.
	var outputs []string
	for _, verb := range []string{"%v", "%+v", "%#v"} {
		outputs = append(outputs, fmt.Sprintf(verb, cfg), fmt.Sprintf(verb, *cfg.Auth.SASL), fmt.Sprintf(verb, cfg.Auth),
			fmt.Sprintf(verb, *cfg.Auth.SASL.OAuthBearer), fmt.Sprintf(verb, *cfg.Auth.Kerberos))
	}
	conf := confmap.New()
	require.NoError(t, conf.Marshal(cfg))
	outputs = append(outputs, fmt.Sprint(conf.ToStringMap()))
	for _, key := range []string{"auth::sasl::password", "auth::sasl::oauthbearer::client_secret", "auth::kerberos::password", "tls::key_pem"} {
		require.Equal(t, "[REDACTED]", conf.Get(key), key)
	}

	js, err := json.Marshal(cfg)
	require.NoError(t, err)
	outputs = append(outputs, string(js))

	var logged bytes.Buffer
	logger := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&logged), zapcore.DebugLevel))
	logger.Info("configuration", zap.Any("config", cfg), zap.Any("sasl", cfg.Auth.SASL), zap.Any("kerberos", cfg.Auth.Kerberos), zap.Reflect("reflected", cfg))
	outputs = append(outputs, logged.String())

	// Validation errors of a configuration holding them.
	outputs = append(outputs, confmap.Validate(cfg).Error())

	for _, out := range outputs {
		for _, secret := range secrets {
			require.NotContains(t, out, secret)
		}
	}
	require.Contains(t, logged.String(), "[REDACTED]")
}

const (
	secAdminUser     = "admin"
	secAdminPassword = "admin-Pa55-4-tests"
	secMonitorUser   = "lag-monitor"
)

func TestSASLAgainstKafka(t *testing.T) {
	for _, mechanism := range []string{kafka.SASLPlain, kafka.SASLSCRAMSHA256, kafka.SASLSCRAMSHA512} {
		t.Run(mechanism, func(t *testing.T) {
			const password = "monitor-Pa55-" + "x9"
			k := newSecureTestKafka(t, 2,
				[]kgo.Opt{kgo.SASL(saslMechanismFor(t, mechanism, secAdminUser, secAdminPassword))},
				kfake.EnableSASL(),
				kfake.Superuser(mechanism, secAdminUser, secAdminPassword),
				kfake.User(mechanism, secMonitorUser, password),
			)
			secFixture(k)

			cfg := k.testConfig()
			cfg.Auth.SASL = &SASLConfig{Mechanism: mechanism, Username: secMonitorUser, Password: configopaque.String(password), Version: 1}
			s, logs := startObservedScraper(t, cfg, zap.NewAtomicLevelAt(zap.DebugLevel))
			requireBillingLag(t, s)
			require.Equal(t, 1, logs.FilterMessageSnippet("without TLS").Len(), "SASL in the clear is worth a warning")
			requireNoSecretLogged(t, logs, password)
		})
	}
}

// TestSASLWrongPasswordRetried: a wrong password fails the scrape with an
// error that says so and does not contain it; the receiver tries again at
// the next scrape, so fixing the credentials on the broker side is enough.
func TestSASLWrongPasswordRetried(t *testing.T) {
	const password = "not-yet-Valid-77"
	k := newSecureTestKafka(t, 2,
		[]kgo.Opt{kgo.SASL(saslMechanismFor(t, kafka.SASLSCRAMSHA256, secAdminUser, secAdminPassword))},
		kfake.EnableSASL(),
		kfake.Superuser(kafka.SASLSCRAMSHA256, secAdminUser, secAdminPassword),
		kfake.User(kafka.SASLSCRAMSHA256, secMonitorUser, "the-Real-one-88"),
	)
	secFixture(k)

	cfg := k.testConfig()
	cfg.Timeout = 3 * time.Second
	cfg.Auth.SASL = &SASLConfig{Mechanism: kafka.SASLSCRAMSHA256, Username: secMonitorUser, Password: password, Version: 1}
	s, logs := startObservedScraper(t, cfg, zap.NewAtomicLevelAt(zap.DebugLevel))

	for range 2 {
		_, err := s.scrape(context.Background())
		require.Error(t, err)
		require.False(t, scrapererror.IsPartialScrapeError(err), "nothing could be read: %v", err)
		// Kafka answers SASL_AUTHENTICATION_FAILED ("SASL Authentication
		// failed"); kfake just closes the connection, so the error says
		// what was attempted.
		require.Contains(t, err.Error(), `SASL SCRAM-SHA-256 as "lag-monitor"`, "the error must say what authentication failed: %v", err)
		require.NotContains(t, err.Error(), password)
		require.NotContains(t, err.Error(), "the-Real-one-88")
	}

	// The operator sets the password the receiver was given.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	altered, err := k.Admin.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{
		User: secMonitorUser, Mechanism: kadm.ScramSha256, Iterations: 4096, Password: password,
	}})
	require.NoError(t, err)
	require.NoError(t, altered.Error())

	require.Eventually(t, func() bool {
		md, err := s.scrape(context.Background())
		return err == nil && len(pointsOf(md, "kafka.consumer_group.lag")) == 1
	}, 30*time.Second, 100*time.Millisecond, "the next scrapes connect again with the same configuration")
	requireBillingLag(t, s)
	requireNoSecretLogged(t, logs, password, "the-Real-one-88")
}

// TestTLSAgainstKafka generates a CA and broker certificates, and connects
// the receiver with each way of trusting them.
func TestTLSAgainstKafka(t *testing.T) {
	ca := testca.New(t)
	loopback := []net.IP{net.ParseIP("127.0.0.1")}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(caFile, ca.CertPEM, 0o600))
	clientTLS := func(serverName string) *tls.Config {
		return &tls.Config{RootCAs: ca.Pool(), ServerName: serverName, MinVersion: tls.VersionTLS12}
	}

	t.Run("server certificate for the broker address", func(t *testing.T) {
		k := newSecureTestKafka(t, 2, []kgo.Opt{kgo.DialTLSConfig(clientTLS(""))},
			kfake.TLS(ca.ServerTLS(t, nil, loopback, nil)))
		secFixture(k)
		for name, tc := range map[string]configtls.ClientConfig{
			"ca_pem":               {Config: configtls.Config{CAPem: configopaque.String(ca.CertPEM)}},
			"ca_file":              {Config: configtls.Config{CAFile: caFile}},
			"insecure_skip_verify": {InsecureSkipVerify: true},
		} {
			t.Run(name, func(t *testing.T) {
				cfg := k.testConfig()
				cfg.TLS = &tc
				require.NoError(t, cfg.Validate())
				s := startScraper(t, cfg)
				requireBillingLag(t, s)
			})
		}
		t.Run("untrusted", func(t *testing.T) {
			cfg := k.testConfig()
			cfg.Timeout = 3 * time.Second
			cfg.TLS = &configtls.ClientConfig{Config: configtls.Config{CAPem: configopaque.String(testca.New(t).CertPEM)}}
			s := startScraper(t, cfg)
			_, err := s.scrape(context.Background())
			require.Error(t, err)
			require.Contains(t, err.Error(), "certificate", "the error must name the TLS failure: %v", err)
		})
		t.Run("plaintext client", func(t *testing.T) {
			cfg := k.testConfig()
			cfg.Timeout = 2 * time.Second
			s := startScraper(t, cfg)
			_, err := s.scrape(context.Background())
			require.Error(t, err)
		})
	})

	t.Run("server name override", func(t *testing.T) {
		k := newSecureTestKafka(t, 1, []kgo.Opt{kgo.DialTLSConfig(clientTLS("kafka.test"))},
			kfake.TLS(ca.ServerTLS(t, []string{"kafka.test"}, nil, nil)))
		secFixture(k)

		cfg := k.testConfig()
		cfg.TLS = &configtls.ClientConfig{ServerName: "kafka.test", Config: configtls.Config{CAPem: configopaque.String(ca.CertPEM)}}
		requireBillingLag(t, startScraper(t, cfg))

		mismatch := k.testConfig()
		mismatch.Timeout = 3 * time.Second
		mismatch.TLS = &configtls.ClientConfig{Config: configtls.Config{CAPem: configopaque.String(ca.CertPEM)}}
		_, err := startScraper(t, mismatch).scrape(context.Background())
		require.Error(t, err)
		require.Contains(t, err.Error(), "certificate", "a certificate for another name is refused: %v", err)
	})

	t.Run("client certificate", func(t *testing.T) {
		clientCert, clientKey := ca.Issue(t, secMonitorUser, nil, nil)
		pair, err := tls.X509KeyPair(clientCert, clientKey)
		require.NoError(t, err)
		adminTLS := clientTLS("")
		adminTLS.Certificates = []tls.Certificate{pair}
		k := newSecureTestKafka(t, 2, []kgo.Opt{kgo.DialTLSConfig(adminTLS)},
			kfake.TLS(ca.ServerTLS(t, nil, loopback, ca.Pool())))
		secFixture(k)

		dir := t.TempDir()
		certFile, keyFile := filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
		require.NoError(t, os.WriteFile(certFile, clientCert, 0o600))
		require.NoError(t, os.WriteFile(keyFile, clientKey, 0o600))
		cfg := k.testConfig()
		cfg.TLS = &configtls.ClientConfig{Config: configtls.Config{CAFile: caFile, CertFile: certFile, KeyFile: keyFile}}
		require.NoError(t, cfg.Validate())
		requireBillingLag(t, startScraper(t, cfg))

		without := k.testConfig()
		without.Timeout = 3 * time.Second
		without.TLS = &configtls.ClientConfig{Config: configtls.Config{CAFile: caFile}}
		_, err = startScraper(t, without).scrape(context.Background())
		require.Error(t, err, "the broker requires a client certificate")
	})
}

// TestSASLOverTLS is SASL_SSL: SCRAM inside a verified TLS connection, and
// then no warning about credentials in the clear.
func TestSASLOverTLS(t *testing.T) {
	ca := testca.New(t)
	const password = "over-Tls-Pa55-5"
	k := newSecureTestKafka(t, 2,
		[]kgo.Opt{
			kgo.SASL(saslMechanismFor(t, kafka.SASLSCRAMSHA512, secAdminUser, secAdminPassword)),
			kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}),
		},
		kfake.EnableSASL(),
		kfake.Superuser(kafka.SASLSCRAMSHA512, secAdminUser, secAdminPassword),
		kfake.User(kafka.SASLSCRAMSHA512, secMonitorUser, password),
		kfake.TLS(ca.ServerTLS(t, nil, []net.IP{net.ParseIP("127.0.0.1")}, nil)),
	)
	secFixture(k)
	cfg := k.testConfig()
	cfg.Auth.SASL = &SASLConfig{Mechanism: "SCRAM-SHA-512", Username: secMonitorUser, Password: password, Version: 1}
	cfg.TLS = &configtls.ClientConfig{Config: configtls.Config{CAPem: configopaque.String(ca.CertPEM)}}
	s, logs := startObservedScraper(t, cfg, zap.NewAtomicLevelAt(zap.DebugLevel))
	requireBillingLag(t, s)
	require.Zero(t, logs.FilterLevelExact(zap.WarnLevel).Len(), "nothing insecure to warn about: %v", logs.All())
	requireNoSecretLogged(t, logs, password)
}

// newACLTestKafka is a cluster with SASL and ACLs on, a superuser for the
// test and the monitoring principal with the given ACLs.
func newACLTestKafka(t *testing.T, password string, acls []kfake.ACL) *testKafka {
	t.Helper()
	return newSecureTestKafka(t, 3,
		[]kgo.Opt{kgo.SASL(saslMechanismFor(t, kafka.SASLSCRAMSHA256, secAdminUser, secAdminPassword))},
		kfake.EnableSASL(),
		kfake.EnableACLs(),
		kfake.Superuser(kafka.SASLSCRAMSHA256, secAdminUser, secAdminPassword),
		kfake.User(kafka.SASLSCRAMSHA256, secMonitorUser, password, acls...),
	)
}

// TestACLLeastPrivilege runs the receiver as a principal with only the ACLs
// docs/security.md lists: what it may see is reported, a topic it may not
// describe and a topic it may not read are skipped with one warning per
// scrape, and a group it may not describe is invisible (Kafka leaves it out
// of ListGroups).
func TestACLLeastPrivilege(t *testing.T) {
	const password = "least-Privilege-3"
	k := newACLTestKafka(t, password, aclsFor("team-", []string{"orders", "audit"}, []string{"orders"}))
	for _, topic := range []string{"orders", "audit", "secret"} {
		// LogAppendTime: the records' stamps date them from the first
		// scrape, read (orders) or from the time index (audit).
		k.CreateAppendTimeTopic(topic, 2)
	}
	at := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for _, topic := range []string{"orders", "audit", "secret"} {
		for p := range int32(2) {
			k.Produce(topic, p, at, at.Add(time.Minute), at.Add(2*time.Minute))
		}
	}
	k.Commit("team-a", "orders", map[int32]int64{0: 0, 1: 1})
	k.Commit("team-a", "audit", map[int32]int64{0: 0})
	k.Commit("team-a", "secret", map[int32]int64{0: 0, 1: 0})
	k.Commit("team-b", "orders", map[int32]int64{0: 2})
	k.Commit("hidden", "orders", map[int32]int64{0: 0})

	cfg := aclScraperConfig(k, password)
	// The sampler runs too: it samples the denied topic's partitions (the
	// group committed on them) and must not fall into a failure streak.
	cfg.SamplingInterval = configcheck.SamplingInterval.Min
	s, logs := startObservedScraper(t, cfg, zap.NewAtomicLevelAt(zap.InfoLevel))
	for scrape := 1; scrape <= 2; scrape++ {
		md, err := s.scrape(context.Background())
		require.NoError(t, err, "denials are skipped, not errors")

		lag := pointsOf(md, "kafka.consumer_group.lag")
		require.Equal(t, map[pointKey]int64{
			{"team-a", "orders", 0}: 3,
			{"team-a", "orders", 1}: 2,
			{"team-a", "audit", 0}:  3,
			{"team-b", "orders", 0}: 1,
		}, intValues(lag), "scrape %d: what the principal may describe, and nothing else", scrape)

		timeLag := pointsOf(md, "kafka.consumer_group.time_lag")
		require.Contains(t, timeLag, pointKey{"team-a", "orders", 0}, "orders is readable: its record timestamps give the time lag")
		require.Contains(t, timeLag, pointKey{"team-a", "audit", 0}, "audit is not readable: its time lag comes from the time index, which Describe allows")

		warnings := deniedWarnings(logs)
		require.Len(t, warnings, scrape, "one warning per scrape")
		fields := warnings[scrape-1].ContextMap()
		require.Equal(t, []any{"audit (Read)", "secret (Describe)"}, fields["topics"])
		require.EqualValues(t, 0, fields["groups_denied"], "Kafka does not list groups the principal may not describe")
	}
	sent := k.Requests(kmsg.ListOffsets.Int16())
	require.Eventually(t, func() bool {
		return k.Requests(kmsg.ListOffsets.Int16()) >= sent+10
	}, faultDeadline, 20*time.Millisecond, "the sampler keeps sampling")
	require.Zero(t, logs.FilterMessageSnippet("sampling end offsets failed").Len(), "denials are not sampling failures: %v", logs.All())
	require.Len(t, deniedWarnings(logs), 2, "the sampler adds no denial warnings of its own")
	requireNoSecretLogged(t, logs, password)
}

// TestACLDeniedGroupSkipped: where Kafka lists a group that the principal
// may not read the offsets of (as it does for a principal with Describe on
// the cluster), the group is skipped with the warning and the rest is
// reported. kfake lists only describable groups, so the denial is injected
// where Kafka makes it. The listing names each group's coordinator, so no
// FindCoordinator is sent for a listed group: Kafka's denial comes on
// OffsetFetch (and on FindCoordinator only for a group the listing did not
// place, see TestCoordinatorFromListing).
func TestACLDeniedGroupSkipped(t *testing.T) {
	for name, keys := range map[string][]kmsg.Key{
		"offset fetch": {kmsg.OffsetFetch},
	} {
		t.Run(name, func(t *testing.T) {
			const password = "group-Denied-4"
			k := newACLTestKafka(t, password, aclsFor("team-", []string{"orders"}, []string{"orders"}))
			k.CreateTopic("orders", 1)
			now := time.Now()
			k.Produce("orders", 0, now, now)
			k.Commit("team-a", "orders", map[int32]int64{0: 1})
			k.Commit("team-b", "orders", map[int32]int64{0: 0})
			k.Commit("team-c", "orders", map[int32]int64{0: 0})
			k.Cluster.Fault(kfake.Fault{Keys: keys, Group: "team-b", Err: kerr.GroupAuthorizationFailed, Count: -1})

			s, logs := startObservedScraper(t, aclScraperConfig(k, password), zap.NewAtomicLevelAt(zap.InfoLevel))
			for scrape := 1; scrape <= 2; scrape++ {
				md, err := s.scrape(context.Background())
				require.NoError(t, err)
				require.Equal(t, map[pointKey]int64{
					{"team-a", "orders", 0}: 1,
					{"team-c", "orders", 0}: 2,
				}, intValues(pointsOf(md, "kafka.consumer_group.lag")))
				warnings := deniedWarnings(logs)
				require.Len(t, warnings, scrape)
				require.Equal(t, []any{"team-b"}, warnings[scrape-1].ContextMap()["groups"])
			}
		})
	}
}

// TestACLMissingDescribeEverywhere: a principal with no ACL at all sees an
// empty cluster; that is reported as nothing, not as an error.
func TestACLMissingDescribeEverywhere(t *testing.T) {
	const password = "no-Acls-At-all-1"
	k := newACLTestKafka(t, password, nil)
	secFixture(k)
	s, _ := startObservedScraper(t, aclScraperConfig(k, password), zap.NewAtomicLevelAt(zap.InfoLevel))
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	require.Empty(t, pointsOf(md, "kafka.consumer_group.lag"))
}

const (
	oauthClientSecret  = "idp-Client-Secret-61"
	oauthPrincipalPass = "kfake-side-Pa55-3"
)

// testIdP is an identity provider's token endpoint for the
// client-credentials grant; issue makes the n-th token (from 1) and says
// how long it lives.
type testIdP struct {
	url    string
	grants atomic.Int32
}

func newTestIdP(t *testing.T, issue func(n int32) (token string, expiresIn int)) *testIdP {
	t.Helper()
	idp := &testIdP{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		id, secret, ok := r.BasicAuth()
		if !ok {
			id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		w.Header().Set("Content-Type", "application/json")
		if id != secMonitorUser || secret != oauthClientSecret || r.PostForm.Get("grant_type") != "client_credentials" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"invalid_client"}`))
			return
		}
		token, expiresIn := issue(idp.grants.Add(1))
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": token, "token_type": "Bearer", "expires_in": expiresIn})
	}))
	t.Cleanup(srv.Close)
	idp.url = srv.URL + "/oauth2/token"
	return idp
}

// newOAuthTestKafka is a cluster that takes OAUTHBEARER tokens accept
// approves as the monitoring principal; the test's client is a PLAIN
// superuser.
func newOAuthTestKafka(t *testing.T, brokers int, ob *oauthBroker, opts ...kfake.Opt) *testKafka {
	t.Helper()
	ob.passwords = map[string]string{secMonitorUser: oauthPrincipalPass}
	opts = append([]kfake.Opt{
		kfake.EnableSASL(),
		kfake.Superuser(kafka.SASLPlain, secAdminUser, secAdminPassword),
		kfake.User(kafka.SASLPlain, secMonitorUser, oauthPrincipalPass),
	}, opts...)
	k := newSecureTestKafka(t, brokers, []kgo.Opt{kgo.SASL(saslMechanismFor(t, kafka.SASLPlain, secAdminUser, secAdminPassword))}, opts...)
	ob.install(k.Cluster)
	return k
}

// extensionHost is a collector host with the given extensions.
type extensionHost map[component.ID]component.Component

func (h extensionHost) GetExtensions() map[component.ID]component.Component { return h }

func clientCredentialsConfig(k *testKafka, tokenURL string) *Config {
	cfg := k.testConfig()
	cfg.Timeout = 5 * time.Second
	cfg.Auth.SASL = &SASLConfig{Mechanism: kafka.SASLOAuthBearer, Version: 1, OAuthBearer: &OAuthBearerConfig{
		TokenURL:       tokenURL,
		ClientID:       secMonitorUser,
		ClientSecret:   oauthClientSecret,
		Scopes:         []string{"kafka"},
		EndpointParams: url.Values{"audience": {"kafka-cluster"}},
		Extensions:     map[string]string{"logicalCluster": "lkc-1", "identityPoolId": "pool-2"},
	}}
	return cfg
}

// TestOAuthBearerClientCredentialsAgainstKafka: the receiver gets a token
// from the identity provider with its client credentials and logs in with
// it, with the SASL extensions, on every broker: one grant for all of them.
func TestOAuthBearerClientCredentialsAgainstKafka(t *testing.T) {
	idp := newTestIdP(t, func(n int32) (string, int) { return fmt.Sprintf("cc-token-%d", n), 3600 })
	ob := &oauthBroker{accept: func(token string, _ map[string]string) (string, bool) {
		return secMonitorUser, strings.HasPrefix(token, "cc-token-")
	}}
	k := newOAuthTestKafka(t, 3, ob)
	secFixture(k)

	cfg := clientCredentialsConfig(k, idp.url)
	require.NoError(t, confmap.Validate(cfg))
	s, logs := startObservedScraper(t, cfg, zap.NewAtomicLevelAt(zap.DebugLevel))
	requireBillingLag(t, s)
	requireBillingLag(t, s)

	require.EqualValues(t, 1, idp.grants.Load(), "one token for every connection")
	presented := ob.presented()
	require.NotEmpty(t, presented)
	for _, tok := range presented {
		require.Equal(t, "cc-token-1", tok)
	}
	require.Equal(t, map[string]string{"logicalCluster": "lkc-1", "identityPoolId": "pool-2"}, ob.extensions())
	require.Equal(t, 1, logs.FilterMessageSnippet("token_url is plain http").Len())
	require.Equal(t, 1, logs.FilterMessageSnippet("without TLS").Len())
	requireNoSecretLogged(t, logs, oauthClientSecret, "cc-token-1")
}

// TestOAuthBearerRefusedTokenReplaced: a token the brokers refuse before it
// expires (revoked) fails the scrape with an error that names the
// mechanism and not the token; the next scrape gets a new token rather than
// presenting the refused one until it expires.
func TestOAuthBearerRefusedTokenReplaced(t *testing.T) {
	idp := newTestIdP(t, func(n int32) (string, int) { return fmt.Sprintf("token-%d", n), 3600 })
	ob := &oauthBroker{accept: func(token string, _ map[string]string) (string, bool) {
		return secMonitorUser, token != "token-1" // token-1 was revoked
	}}
	k := newOAuthTestKafka(t, 2, ob)
	secFixture(k)

	cfg := clientCredentialsConfig(k, idp.url)
	cfg.Timeout = 3 * time.Second
	s, logs := startObservedScraper(t, cfg, zap.NewAtomicLevelAt(zap.DebugLevel))
	_, err := s.scrape(context.Background())
	require.Error(t, err)
	require.Contains(t, err.Error(), "SASL OAUTHBEARER", "the error must say what authentication failed: %v", err)
	require.NotContains(t, err.Error(), "token-1")
	require.NotContains(t, err.Error(), oauthClientSecret)

	requireBillingLag(t, s)
	require.EqualValues(t, 2, idp.grants.Load())
	require.Contains(t, ob.presented(), "token-2")
	requireNoSecretLogged(t, logs, oauthClientSecret, "token-1", "token-2")
}

// TestOAuthBearerReauthenticationRefreshesToken: a broker that limits
// sessions (connections.max.reauth.ms, KIP-368) has the client log in again
// on the open connection; a token about to expire is replaced by then.
func TestOAuthBearerReauthenticationRefreshesToken(t *testing.T) {
	const session = 1500 * time.Millisecond
	// Tokens that live less than the refresh margin are never reused.
	idp := newTestIdP(t, func(n int32) (string, int) { return fmt.Sprintf("short-%d", n), 30 })
	ob := &oauthBroker{accept: func(token string, _ map[string]string) (string, bool) {
		return secMonitorUser, strings.HasPrefix(token, "short-")
	}}
	k := newOAuthTestKafka(t, 1, ob,
		kfake.BrokerConfigs(map[string]string{"connections.max.reauth.ms": fmt.Sprint(session.Milliseconds())}))
	secFixture(k)

	s, _ := startObservedScraper(t, clientCredentialsConfig(k, idp.url), zap.NewAtomicLevelAt(zap.DebugLevel))
	requireBillingLag(t, s)
	before := len(ob.presented())
	time.Sleep(session + 100*time.Millisecond) // past the session's end, whatever the jitter
	requireBillingLag(t, s)
	after := ob.presented()
	require.Greater(t, len(after), before, "the client logged in again")
	require.NotEqual(t, after[0], after[len(after)-1], "with a new token")
}

// tokenExtension is a collector extension that supplies tokens, as
// contrib's oauth2client does.
type tokenExtension struct {
	component.StartFunc
	component.ShutdownFunc
	calls atomic.Int32
}

func (e *tokenExtension) Token(context.Context) (*oauth2.Token, error) {
	return &oauth2.Token{AccessToken: fmt.Sprintf("ext-token-%d", e.calls.Add(1)), Expiry: time.Now().Add(time.Hour)}, nil
}

// TestOAuthBearerTokenSourceExtension: contrib's oauthbearer_token_source
// names the extension that supplies the tokens.
func TestOAuthBearerTokenSourceExtension(t *testing.T) {
	ob := &oauthBroker{accept: func(token string, _ map[string]string) (string, bool) {
		return secMonitorUser, strings.HasPrefix(token, "ext-token-")
	}}
	k := newOAuthTestKafka(t, 2, ob)
	secFixture(k)

	id := component.MustNewID("oauth2client")
	cfg := k.testConfig()
	cfg.Auth.SASL = &SASLConfig{Mechanism: "oauthbearer", Version: 1, OAuthBearerTokenSource: id}
	require.NoError(t, confmap.Validate(cfg))
	ext := &tokenExtension{}
	s, logs := startObservedScraperOn(t, cfg, extensionHost{id: ext}, zap.NewAtomicLevelAt(zap.DebugLevel))
	requireBillingLag(t, s)
	require.EqualValues(t, 1, ext.calls.Load())
	require.Contains(t, ob.presented(), "ext-token-1")
	requireNoSecretLogged(t, logs, "ext-token-1")

	for name, host := range map[string]component.Host{
		"no such extension": extensionHost{},
		"extension without tokens": extensionHost{id: struct {
			component.StartFunc
			component.ShutdownFunc
		}{}},
		"no host": nil,
	} {
		t.Run(name, func(t *testing.T) {
			s, err := newTimeLagScraper(cfg, receivertest.NewNopSettings(metadata.Type), nil)
			require.NoError(t, err)
			err = s.start(context.Background(), host)
			require.ErrorContains(t, err, "auth::sasl::oauthbearer_token_source")
			require.ErrorContains(t, err, `"oauth2client"`)
			require.NoError(t, s.shutdown(context.Background()))
		})
	}
}

// mskTestCredentials are AWS credentials for the standard chain to find in
// the environment, and nowhere else: no shared files, no instance role.
func mskTestCredentials(t *testing.T) aws.Credentials {
	creds := aws.Credentials{AccessKeyID: "AKIDMSKTEST0001", SecretAccessKey: "msk-Secret-Access-Key-0f9e8d", SessionToken: "msk-session-token-7"}
	t.Setenv("AWS_ACCESS_KEY_ID", creds.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", creds.SecretAccessKey)
	t.Setenv("AWS_SESSION_TOKEN", creds.SessionToken)
	none := t.TempDir() + "/none"
	t.Setenv("AWS_CONFIG_FILE", none)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, unset := range []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"} {
		t.Setenv(unset, "")
	}
	return creds
}

// verifyMSKToken is the broker's side of AWS MSK IAM: the token is a
// presigned kafka-cluster:Connect request for the region, and its SigV4
// signature must be the one the principal's secret key makes.
func verifyMSKToken(token, region string, creds aws.Credentials) error {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return err
	}
	presigned, err := url.Parse(string(raw))
	if err != nil {
		return err
	}
	q := presigned.Query()
	if presigned.Host != "kafka."+region+".amazonaws.com" || q.Get("Action") != "kafka-cluster:Connect" {
		return fmt.Errorf("not a kafka-cluster:Connect request for %s: %s", region, presigned.Host)
	}
	signedAt, err := time.Parse("20060102T150405Z", q.Get("X-Amz-Date"))
	if err != nil {
		return err
	}
	unsigned := url.URL{Scheme: "https", Host: presigned.Host, Path: "/",
		RawQuery: url.Values{"Action": {"kafka-cluster:Connect"}, "X-Amz-Expires": {q.Get("X-Amz-Expires")}}.Encode()}
	req, err := http.NewRequest(http.MethodGet, unsigned.String(), http.NoBody)
	if err != nil {
		return err
	}
	resigned, _, err := v4.NewSigner().PresignHTTP(context.Background(), creds, req,
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "kafka-cluster", region, signedAt)
	if err != nil {
		return err
	}
	want, err := url.Parse(resigned)
	if err != nil {
		return err
	}
	if got := q.Get("X-Amz-Signature"); got == "" || got != want.Query().Get("X-Amz-Signature") {
		return fmt.Errorf("signature %q does not verify", got)
	}
	return nil
}

// TestAWSMSKIAMAgainstKafka runs AWS_MSK_IAM_OAUTHBEARER end to end but for
// AWS itself: credentials from the standard chain (here the environment),
// the real signer, and a broker that verifies the signature for the
// configured region.
func TestAWSMSKIAMAgainstKafka(t *testing.T) {
	const region = "eu-central-1"
	creds := mskTestCredentials(t)
	ob := &oauthBroker{accept: func(token string, _ map[string]string) (string, bool) {
		err := verifyMSKToken(token, region, creds)
		if err != nil {
			t.Logf("the broker refuses the token: %v", err)
		}
		return secMonitorUser, err == nil
	}}
	k := newOAuthTestKafka(t, 2, ob)
	secFixture(k)

	cfg := k.testConfig()
	cfg.Auth.SASL = &SASLConfig{Mechanism: kafka.SASLAWSMSKIAM, Version: 1, AWSMSK: AWSMSKConfig{Region: region}}
	require.NoError(t, confmap.Validate(cfg))
	s, logs := startObservedScraper(t, cfg, zap.NewAtomicLevelAt(zap.DebugLevel))
	requireBillingLag(t, s)
	require.Zero(t, ob.refusals(), "every token verifies")
	presented := ob.presented()
	require.NotEmpty(t, presented)
	for _, tok := range presented {
		require.Equal(t, presented[0], tok, "one signed token for every connection")
		require.NotContains(t, tok, creds.SecretAccessKey)
	}
	requireNoSecretLogged(t, logs, creds.SecretAccessKey, creds.SessionToken, presented[0])
	forged := creds
	forged.SecretAccessKey = "not-" + creds.SecretAccessKey
	require.ErrorContains(t, verifyMSKToken(presented[0], region, forged), "does not verify", "the broker's check is a real one")

	// Signed for another region, the token is refused.
	wrong := k.testConfig()
	wrong.Timeout = 3 * time.Second
	wrong.Auth.SASL = &SASLConfig{Mechanism: kafka.SASLAWSMSKIAM, Version: 1, AWSMSK: AWSMSKConfig{Region: "us-west-2"}}
	_, err := startScraper(t, wrong).scrape(context.Background())
	require.Error(t, err)
	require.Contains(t, err.Error(), "SASL AWS_MSK_IAM_OAUTHBEARER")
	require.NotContains(t, err.Error(), creds.SecretAccessKey)
}
