package kafkatimelagreceiver

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
)

const (
	secAdminUser     = "admin"
	secAdminPassword = "admin-Pa55-4-tests"
	secMonitorUser   = "lag-monitor"
)

// newSecureTestKafka is newTestKafka for a cluster that wants SASL or TLS:
// the test's own franz-go client connects with clientOpts (as the
// superuser), the receiver with whatever the test configures.
func newSecureTestKafka(t *testing.T, brokers int, clientOpts []kgo.Opt, opts ...kfake.Opt) *testKafka {
	t.Helper()
	return &testKafka{kfaketest.New(t, brokers, clientOpts, opts...)}
}

// saslMechanismFor is the franz-go side of a mechanism, for the test client.
func saslMechanismFor(t *testing.T, mechanism, user, password string) sasl.Mechanism {
	t.Helper()
	switch mechanism {
	case kafka.SASLPlain:
		return plain.Auth{User: user, Pass: password}.AsMechanism()
	case kafka.SASLSCRAMSHA256:
		return scram.Auth{User: user, Pass: password}.AsSha256Mechanism()
	case kafka.SASLSCRAMSHA512:
		return scram.Auth{User: user, Pass: password}.AsSha512Mechanism()
	}
	t.Fatalf("no mechanism %s", mechanism)
	return nil
}

// startObservedScraper is startScraper with a logger the test can read.
func startObservedScraper(t *testing.T, cfg *Config, level zap.AtomicLevel) (*timeLagScraper, *observer.ObservedLogs) {
	t.Helper()
	return startObservedScraperOn(t, cfg, nil, level)
}

// startObservedScraperOn is startObservedScraper on a collector host (which
// has the extensions the configuration names).
func startObservedScraperOn(t *testing.T, cfg *Config, host component.Host, level zap.AtomicLevel) (*timeLagScraper, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(level)
	settings := receivertest.NewNopSettings(metadata.Type)
	settings.Logger = zap.New(core)
	s, err := newTimeLagScraper(cfg, settings, nil)
	require.NoError(t, err)
	require.NoError(t, s.start(context.Background(), host))
	t.Cleanup(func() { require.NoError(t, s.shutdown(context.Background())) })
	return s, logs
}

// requireNoSecretLogged fails when a password shows in any log entry.
func requireNoSecretLogged(t *testing.T, logs *observer.ObservedLogs, secrets ...string) {
	t.Helper()
	for _, entry := range logs.All() {
		text := fmt.Sprint(entry.Message, entry.ContextMap())
		for _, secret := range secrets {
			require.NotContains(t, text, secret, "log entry %q", entry.Message)
		}
	}
}

// secFixture produces two old records on one partition and commits a group
// at the first, so a working scrape reports lag 2 and a time lag.
func secFixture(k *testKafka) time.Time {
	k.CreateTopic("orders", 1)
	at := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	k.Produce("orders", 0, at, at.Add(time.Minute))
	k.Commit("billing", "orders", map[int32]int64{0: 0})
	return at
}

func requireBillingLag(t *testing.T, s *timeLagScraper) {
	t.Helper()
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	lag := pointsOf(md, "kafka.consumer_group.lag")
	require.Equal(t, int64(2), lag[pointKey{"billing", "orders", 0}].intValue)
	require.Contains(t, pointsOf(md, "kafka.consumer_group.time_lag"), pointKey{"billing", "orders", 0})
}

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
	ca := newTestCA(t)
	loopback := []net.IP{net.ParseIP("127.0.0.1")}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(caFile, ca.certPEM, 0o600))
	clientTLS := func(serverName string) *tls.Config {
		return &tls.Config{RootCAs: ca.pool(), ServerName: serverName, MinVersion: tls.VersionTLS12}
	}

	t.Run("server certificate for the broker address", func(t *testing.T) {
		k := newSecureTestKafka(t, 2, []kgo.Opt{kgo.DialTLSConfig(clientTLS(""))},
			kfake.TLS(ca.serverTLS(t, nil, loopback, nil)))
		secFixture(k)
		for name, tc := range map[string]configtls.ClientConfig{
			"ca_pem":               {Config: configtls.Config{CAPem: configopaque.String(ca.certPEM)}},
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
			cfg.TLS = &configtls.ClientConfig{Config: configtls.Config{CAPem: configopaque.String(newTestCA(t).certPEM)}}
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
			kfake.TLS(ca.serverTLS(t, []string{"kafka.test"}, nil, nil)))
		secFixture(k)

		cfg := k.testConfig()
		cfg.TLS = &configtls.ClientConfig{ServerName: "kafka.test", Config: configtls.Config{CAPem: configopaque.String(ca.certPEM)}}
		requireBillingLag(t, startScraper(t, cfg))

		mismatch := k.testConfig()
		mismatch.Timeout = 3 * time.Second
		mismatch.TLS = &configtls.ClientConfig{Config: configtls.Config{CAPem: configopaque.String(ca.certPEM)}}
		_, err := startScraper(t, mismatch).scrape(context.Background())
		require.Error(t, err)
		require.Contains(t, err.Error(), "certificate", "a certificate for another name is refused: %v", err)
	})

	t.Run("client certificate", func(t *testing.T) {
		clientCert, clientKey := ca.issue(t, secMonitorUser, nil, nil)
		pair, err := tls.X509KeyPair(clientCert, clientKey)
		require.NoError(t, err)
		adminTLS := clientTLS("")
		adminTLS.Certificates = []tls.Certificate{pair}
		k := newSecureTestKafka(t, 2, []kgo.Opt{kgo.DialTLSConfig(adminTLS)},
			kfake.TLS(ca.serverTLS(t, nil, loopback, ca.pool())))
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
	ca := newTestCA(t)
	const password = "over-Tls-Pa55-5"
	k := newSecureTestKafka(t, 2,
		[]kgo.Opt{
			kgo.SASL(saslMechanismFor(t, kafka.SASLSCRAMSHA512, secAdminUser, secAdminPassword)),
			kgo.DialTLSConfig(&tls.Config{RootCAs: ca.pool(), MinVersion: tls.VersionTLS12}),
		},
		kfake.EnableSASL(),
		kfake.Superuser(kafka.SASLSCRAMSHA512, secAdminUser, secAdminPassword),
		kfake.User(kafka.SASLSCRAMSHA512, secMonitorUser, password),
		kfake.TLS(ca.serverTLS(t, nil, []net.IP{net.ParseIP("127.0.0.1")}, nil)),
	)
	secFixture(k)
	cfg := k.testConfig()
	cfg.Auth.SASL = &SASLConfig{Mechanism: "SCRAM-SHA-512", Username: secMonitorUser, Password: password, Version: 1}
	cfg.TLS = &configtls.ClientConfig{Config: configtls.Config{CAPem: configopaque.String(ca.certPEM)}}
	s, logs := startObservedScraper(t, cfg, zap.NewAtomicLevelAt(zap.DebugLevel))
	requireBillingLag(t, s)
	require.Zero(t, logs.FilterLevelExact(zap.WarnLevel).Len(), "nothing insecure to warn about: %v", logs.All())
	requireNoSecretLogged(t, logs, password)
}

// aclsFor is the least-privilege ACL set of SECURITY.md for the principal,
// on the given group prefix and topics; readTopics also get Read.
func aclsFor(groupPrefix string, describeTopics, readTopics []string) []kfake.ACL {
	acls := []kfake.ACL{{
		Resource: kmsg.ACLResourceTypeGroup, Name: groupPrefix, Pattern: kmsg.ACLResourcePatternTypePrefixed,
		Operation: kmsg.ACLOperationDescribe, Allow: true,
	}}
	for _, topic := range describeTopics {
		acls = append(acls, kfake.ACL{
			Resource: kmsg.ACLResourceTypeTopic, Name: topic, Pattern: kmsg.ACLResourcePatternTypeLiteral,
			Operation: kmsg.ACLOperationDescribe, Allow: true,
		})
	}
	for _, topic := range readTopics {
		acls = append(acls, kfake.ACL{
			Resource: kmsg.ACLResourceTypeTopic, Name: topic, Pattern: kmsg.ACLResourcePatternTypeLiteral,
			Operation: kmsg.ACLOperationRead, Allow: true,
		})
	}
	return acls
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

func aclScraperConfig(k *testKafka, password string) *Config {
	cfg := k.testConfig()
	cfg.Timeout = 5 * time.Second
	cfg.Auth.SASL = &SASLConfig{Mechanism: kafka.SASLSCRAMSHA256, Username: secMonitorUser, Password: configopaque.String(password), Version: 1}
	return cfg
}

// deniedWarnings are the scrape's authorization warnings.
func deniedWarnings(logs *observer.ObservedLogs) []observer.LoggedEntry {
	return logs.FilterLevelExact(zap.WarnLevel).FilterMessageSnippet("not authorized").All()
}

// TestACLLeastPrivilege runs the receiver as a principal with only the ACLs
// SECURITY.md lists: what it may see is reported, a topic it may not
// describe and a topic it may not read are skipped with one warning per
// scrape, and a group it may not describe is invisible (Kafka leaves it out
// of ListGroups).
func TestACLLeastPrivilege(t *testing.T) {
	const password = "least-Privilege-3"
	k := newACLTestKafka(t, password, aclsFor("team-", []string{"orders", "audit"}, []string{"orders"}))
	for _, topic := range []string{"orders", "audit", "secret"} {
		k.CreateTopic(topic, 2)
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
	cfg.SamplingInterval = minSamplingInterval
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
		require.NotContains(t, timeLag, pointKey{"team-a", "audit", 0}, "audit is not readable and the record predates the table")

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

func intValues(points map[pointKey]point) map[pointKey]int64 {
	out := make(map[pointKey]int64, len(points))
	for k, p := range points {
		out[k] = p.intValue
	}
	return out
}
