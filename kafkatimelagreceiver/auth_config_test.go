package kafkatimelagreceiver

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
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

// testCA is a certificate authority made for one test.
type testCA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kafka_time_lag test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a leaf certificate for the DNS names and IPs (a server) or
// for neither (a client), and returns its PEM certificate and key.
func (ca *testCA) issue(t testing.TB, commonName string, dnsNames []string, ips []net.IP) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     dnsNames,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// serverTLS is a broker's TLS configuration with a certificate for the
// names; clientCAs, when set, makes the broker require client certificates.
func (ca *testCA) serverTLS(t testing.TB, dnsNames []string, ips []net.IP, clientCAs *x509.CertPool) *tls.Config {
	t.Helper()
	certPEM, keyPEM := ca.issue(t, "kafka", dnsNames, ips)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	c := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if clientCAs != nil {
		c.ClientCAs = clientCAs
		c.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return c
}

func (ca *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}
