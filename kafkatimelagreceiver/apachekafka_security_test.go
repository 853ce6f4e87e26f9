//go:build kafka

package kafkatimelagreceiver

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configtls"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/apachekafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/testca"
)

// TestApacheKafkaSASLSSLDescribeNotRead: the receiver connects to a
// SASL_SSL listener with SCRAM-SHA-512 (a certificate it verifies against
// the test's CA) as a principal whose ACLs allow Describe on the groups and
// Describe and DescribeConfigs on the topic, but not Read. Over three
// scrapes: the lag is right, the time lag comes from the time index
// (within the target of the LogAppendTime stamps), at most one warning a
// scrape says what was denied, and the one Fetch refused (the first scrape
// reads a partition for its transaction markers) is not sent again; the
// password is never logged.
func TestApacheKafkaSASLSSLDescribeNotRead(t *testing.T) {
	requireNoLeakedGoroutines(t)
	const user, password = "lag-monitor", "describe-Only-Pa55"
	ca := testca.New(t)
	certPEM, ecKeyPEM := ca.Issue(t, "kafka", nil, []net.IP{net.ParseIP("127.0.0.1")})
	k := newRealKafka(t, apachekafka.Options{SASLSSL: &apachekafka.SASLSSL{
		CertPEM: certPEM, KeyPEM: pkcs8PEM(t, ecKeyPEM), Users: map[string]string{user: password},
	}})
	const topic = "orders"
	k.createTopic(topic, 2, map[string]string{"message.timestamp.type": "LogAppendTime"})
	k.fill(topic, 2, 30)
	resp, err := k.admin.CommitOffsets(context.Background(), "team-a", kadm.Offsets{topic: {
		0: {Topic: topic, Partition: 0, At: 10, LeaderEpoch: -1}, 1: {Topic: topic, Partition: 1, At: 25, LeaderEpoch: -1},
	}})
	require.NoError(t, err)
	require.NoError(t, resp.Error())

	principal := "User:" + user
	acls := kadm.NewACLs().Allow(principal).AllowHosts().ResourcePatternType(kadm.ACLPatternPrefixed).Groups("team-").Operations(kadm.OpDescribe)
	topicACLs := kadm.NewACLs().Allow(principal).AllowHosts().ResourcePatternType(kadm.ACLPatternLiteral).Topics(topic).Operations(kadm.OpDescribe, kadm.OpDescribeConfigs)
	for _, b := range []*kadm.ACLBuilder{acls, topicACLs} {
		created, err := k.admin.CreateACLs(context.Background(), b)
		require.NoError(t, err)
		for _, c := range created {
			require.NoError(t, c.Err)
		}
	}

	cfg := k.config()
	cfg.Brokers = k.SecureAddrs()
	cfg.Auth.SASL = &SASLConfig{Mechanism: "SCRAM-SHA-512", Username: user, Password: configopaque.String(password), Version: 1}
	cfg.TLS = &configtls.ClientConfig{Config: configtls.Config{CAPem: configopaque.String(ca.CertPEM)}}
	cfg.TimestampSource = TimestampSourceTimeIndex
	core, logs := observer.New(zap.InfoLevel)
	s, tt := startTelemetryScraperLogging(t, cfg, zap.New(core))
	for scrape := 1; scrape <= 3; scrape++ {
		md, err := s.scrape(context.Background())
		require.NoError(t, err, "scrape %d", scrape)
		require.Equal(t, map[pointKey]int64{{"team-a", topic, 0}: 20, {"team-a", topic, 1}: 5}, intValues(pointsOf(md, "kafka.consumer_group.lag")), "scrape %d", scrape)
		timeLags := pointsOf(md, "kafka.consumer_group.time_lag")
		for p, committed := range map[int32]int64{0: 10, 1: 25} {
			key := topicPartitionKey("team-a", topic, p)
			tl, ok := timeLags[key]
			require.True(t, ok, "scrape %d: %s: the time index dates it with Describe alone", scrape, describeKey(key))
			requireTimeLag(t, tl, k.recordAt(topic, p, committed).Timestamp, describeKey(key))
		}
		require.NoError(t, s.sampler.Sample(context.Background(), true))
		require.LessOrEqual(t, len(deniedWarnings(logs)), scrape, "scrape %d: at most a warning a scrape: %v", scrape, logs.All())
		requests := telemetryByAPI(t, tt, "otelcol_kafka_time_lag_requests")
		require.LessOrEqual(t, requests[kmsg.Fetch.Name()], int64(1), "scrape %d: a refused Fetch is not sent again (requests %v)", scrape, requests)
	}
	require.Zero(t, logs.FilterLevelExact(zap.ErrorLevel).Len(), "no error: %v", logs.All())
	requireNoSecretLogged(t, logs, password)
}

// pkcs8PEM re-encodes an EC key as the unencrypted PKCS#8 PEM a broker's
// PEM keystore reads.
func pkcs8PEM(t *testing.T, ecKeyPEM []byte) []byte {
	t.Helper()
	block, _ := pem.Decode(ecKeyPEM)
	require.NotNil(t, block)
	key, err := x509.ParseECPrivateKey(block.Bytes)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}
