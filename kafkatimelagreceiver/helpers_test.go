//go:build !unit

package kafkatimelagreceiver

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"fmt"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/emit"
	"sort"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadatatest"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// testKafka is an in-process Kafka cluster (kfake) with a franz-go client to
// drive it and counters of the requests the receiver sends it.
type testKafka struct{ *kfaketest.Kafka }

func newTestKafka(t *testing.T, brokers int, opts ...kfake.Opt) *testKafka {
	t.Helper()
	return &testKafka{kfaketest.New(t, brokers, nil, opts...)}
}

// testConfig is a receiver configuration pointed at the cluster, with a
// sampler slow enough that it stays out of the way unless a test wants it,
// and kafka.consumer_group.offset on (off by default): the tests read the
// committed offsets the receiver saw through it.
func (k *testKafka) testConfig() *Config {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.Brokers = k.Addrs
	cfg.SamplingInterval = time.Hour
	cfg.Timeout = 10 * time.Second
	cfg.Metrics.KafkaConsumerGroupOffset.Enabled = true
	return cfg
}

// startScraper builds and starts a scraper for cfg and stops it at cleanup.
func startScraper(t *testing.T, cfg *Config) *timeLagScraper {
	t.Helper()
	require.NoError(t, cfg.Validate())
	s, err := newTimeLagScraper(cfg, receivertest.NewNopSettings(metadata.Type), nil)
	require.NoError(t, err)
	require.NoError(t, s.start(context.Background(), nil))
	t.Cleanup(func() { require.NoError(t, s.shutdown(context.Background())) })
	return s
}

// point is one data point of a scraped metric, keyed by its attributes.
type point struct {
	intValue    int64
	doubleValue float64
	timestamp   time.Time
}

type pointKey struct {
	group, topic string
	partition    int64
}

// pointsOf collects the data points of a gauge by (group, topic, partition);
// attributes a metric lacks are left empty (partition -1).
func pointsOf(md pmetric.Metrics, name string) map[pointKey]point {
	out := map[pointKey]point{}
	emit.EachMetric(md, func(m pmetric.Metric) {
		if m.Name() != name {
			return
		}
		dps := m.Gauge().DataPoints()
		for d := range dps.Len() {
			dp := dps.At(d)
			key := pointKey{partition: -1}
			if v, ok := dp.Attributes().Get("group"); ok {
				key.group = v.Str()
			}
			if v, ok := dp.Attributes().Get("topic"); ok {
				key.topic = v.Str()
			}
			if v, ok := dp.Attributes().Get("partition"); ok {
				key.partition = v.Int()
			}
			out[key] = point{intValue: dp.IntValue(), doubleValue: dp.DoubleValue(), timestamp: dp.Timestamp().AsTime()}
		}
	})
	return out
}

func metricsByName(md pmetric.Metrics) map[string]pmetric.Metric {
	out := map[string]pmetric.Metric{}
	emit.EachMetric(md, func(m pmetric.Metric) { out[m.Name()] = m })
	return out
}

// oauthBroker makes kfake, which speaks PLAIN and SCRAM only, take
// OAUTHBEARER the way a Kafka broker with an OAuth validator does. A
// handshake for OAUTHBEARER goes on as PLAIN; the token of the
// authenticate request that follows is checked by accept, which names the
// principal it authenticates, and the request goes on as that principal's
// PLAIN login. So the token is checked here, and kfake itself tracks the
// connection's authentication (nothing but the handshake passes before it)
// and enforces the principal's ACLs. A refused token gets Kafka's answer,
// SASL_AUTHENTICATION_FAILED.
type oauthBroker struct {
	// accept returns the principal a token and its SASL extensions
	// authenticate, or false.
	accept func(token string, extensions map[string]string) (principal string, ok bool)
	// passwords are the kfake PLAIN passwords of the principals.
	passwords map[string]string

	mu       sync.Mutex
	tokens   []string // every token presented, in order
	refused  int
	lastExts map[string]string
}

func (o *oauthBroker) install(c *kfake.Cluster) {
	c.ControlKey(int16(kmsg.SASLHandshake), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if hs := req.(*kmsg.SASLHandshakeRequest); hs.Mechanism == "OAUTHBEARER" {
			hs.Mechanism = "PLAIN"
		}
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.SASLAuthenticate), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		auth := req.(*kmsg.SASLAuthenticateRequest)
		token, exts, ok := parseOAuthBearer(auth.SASLAuthBytes)
		if !ok {
			return nil, nil, false // the test's own PLAIN or SCRAM login
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		o.tokens = append(o.tokens, token)
		o.lastExts = exts
		principal, accepted := o.accept(token, exts)
		if !accepted {
			o.refused++
			resp := auth.ResponseKind().(*kmsg.SASLAuthenticateResponse)
			resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
			msg := "invalid token"
			resp.ErrorMessage = &msg
			return resp, nil, true
		}
		auth.SASLAuthBytes = []byte("\x00" + principal + "\x00" + o.passwords[principal])
		return nil, nil, false
	})
}

func (o *oauthBroker) presented() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.tokens...)
}

func (o *oauthBroker) refusals() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.refused
}

func (o *oauthBroker) extensions() map[string]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lastExts
}

// parseOAuthBearer reads RFC 7628's client first message:
// "n,," 0x01 "auth=Bearer " token 0x01 (key "=" value 0x01)* 0x01.
func parseOAuthBearer(msg []byte) (token string, extensions map[string]string, ok bool) {
	if !bytes.HasPrefix(msg, []byte("n,")) || !bytes.Contains(msg, []byte("\x01auth=Bearer ")) {
		return "", nil, false
	}
	extensions = map[string]string{}
	for _, kv := range strings.Split(string(msg), "\x01")[1:] {
		key, value, found := strings.Cut(kv, "=")
		switch {
		case !found:
		case key == "auth":
			token = strings.TrimPrefix(value, "Bearer ")
		default:
			extensions[key] = value
		}
	}
	return token, extensions, token != ""
}

// producedLog remembers when each produced record was stamped, by offset.
type producedLog struct {
	mu      sync.Mutex
	offsets []int64
	stamps  []time.Time
}

// firstAfter returns the offset of the first record stamped after t.
func (l *producedLog) firstAfter(t time.Time) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := sort.Search(len(l.stamps), func(i int) bool { return l.stamps[i].After(t) })
	if i == len(l.stamps) {
		return 0, false
	}
	return l.offsets[i], true
}

func (l *producedLog) stampOf(offset int64) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := sort.Search(len(l.offsets), func(i int) bool { return l.offsets[i] >= offset })
	if i == len(l.offsets) || l.offsets[i] != offset {
		return time.Time{}, false
	}
	return l.stamps[i], true
}

// startScraperWith starts a scraper for cfg logging to logger, whose Kafka
// access goes through wrap.
func startScraperWith(t *testing.T, cfg *Config, logger *zap.Logger, wrap func(kafka.Cluster) kafka.Cluster) *timeLagScraper {
	t.Helper()
	require.NoError(t, cfg.Validate())
	settings := receivertest.NewNopSettings(metadata.Type)
	settings.Logger = logger
	s, err := newTimeLagScraper(cfg, settings, nil)
	require.NoError(t, err)
	build := s.newCluster
	s.newCluster = func(ctx context.Context, host component.Host) (kafka.Cluster, error) {
		c, err := build(ctx, host)
		if err != nil {
			return nil, err
		}
		return wrap(c), nil
	}
	require.NoError(t, s.start(context.Background(), nil))
	t.Cleanup(func() { require.NoError(t, s.shutdown(context.Background())) })
	return s
}

// healthPoint is one data point of a group-health metric.
type healthPoint struct {
	attrs map[string]string
	value int64
	start pcommon.Timestamp
}

// healthPointsOf returns the points of a gauge or sum with their attributes
// as strings.
func healthPointsOf(md pmetric.Metrics, name string) []healthPoint {
	var out []healthPoint
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				if m.Name() != name {
					continue
				}
				var dps pmetric.NumberDataPointSlice
				switch m.Type() {
				case pmetric.MetricTypeGauge:
					dps = m.Gauge().DataPoints()
				case pmetric.MetricTypeSum:
					dps = m.Sum().DataPoints()
				default:
					continue
				}
				for d := 0; d < dps.Len(); d++ {
					dp := dps.At(d)
					attrs := map[string]string{}
					dp.Attributes().Range(func(k string, v pcommon.Value) bool {
						attrs[k] = v.AsString()
						return true
					})
					out = append(out, healthPoint{attrs: attrs, value: dp.IntValue(), start: dp.StartTimestamp()})
				}
			}
		}
	}
	return out
}

func viewGroup(t *testing.T, md pmetric.Metrics, group string) groupView {
	t.Helper()
	v := groupView{partitionStatus: map[int64]string{}, assigned: map[string]map[string]int64{}}
	current := func(name, attr string) string {
		found := ""
		for _, p := range healthPointsOf(md, name) {
			if p.attrs["group"] != group || p.value != 1 {
				continue
			}
			require.Empty(t, found, "%s has two current values for %s", name, group)
			found = p.attrs[attr]
		}
		return found
	}
	v.state = current("kafka.consumer_group.state", "state")
	v.status = current("kafka.consumer_group.status", "status")
	for _, p := range healthPointsOf(md, "kafka.consumer_group.members") {
		if p.attrs["group"] == group {
			v.described, v.members, v.protocol = true, p.value, p.attrs["protocol"]
		}
	}
	for _, p := range healthPointsOf(md, "kafka.consumer_group.rebalances") {
		if p.attrs["group"] == group {
			v.hasCount, v.rebalances = true, p.value
		}
	}
	for _, p := range healthPointsOf(md, "kafka.consumer_group.partition_status") {
		if p.attrs["group"] == group && p.value == 1 {
			var partition int64
			_, err := fmt.Sscan(p.attrs["partition"], &partition)
			require.NoError(t, err)
			v.partitionStatus[partition] = p.attrs["status"]
		}
	}
	for _, p := range healthPointsOf(md, "kafka.consumer_group.assigned_partitions") {
		if p.attrs["group"] == group {
			if v.assigned[p.attrs["member"]] == nil {
				v.assigned[p.attrs["member"]] = map[string]int64{}
			}
			v.assigned[p.attrs["member"]][p.attrs["group_instance_id"]] += p.value
		}
	}
	return v
}

// healthConfig is a test configuration with every group-health metric on
// and a short status window.
func (k *testKafka) healthConfig(window int) *Config {
	cfg := k.testConfig()
	cfg.Status.Window = window
	cfg.Metrics.KafkaConsumerGroupAssignedPartitions.Enabled = true
	cfg.Metrics.KafkaConsumerGroupPartitionStatus.Enabled = true
	return cfg
}

func scrapeGroup(t *testing.T, s *timeLagScraper, group string) groupView {
	t.Helper()
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	return viewGroup(t, md, group)
}

// Fault tests never wait on the clock for an outcome: they poll with
// generous deadlines, or count scrapes.
const faultDeadline = 60 * time.Second

// requireNoLeakedGoroutines checks, after the test and all its cleanups,
// that the goroutines the test started are gone. Call it first, so that its
// cleanup runs last.
func requireNoLeakedGoroutines(t *testing.T) {
	t.Helper()
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		goleak.VerifyNone(t, before, goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick"))
	})
}

// faultConfig is a receiver configuration with timeouts small enough that a
// dead broker costs seconds, not the default ten.
func faultConfig(k *testKafka) *Config {
	cfg := k.testConfig()
	cfg.Timeout = 2 * time.Second
	return cfg
}

// tableHeads is the oldest point of every table: a reset or dropped table
// changes it.
func tableHeads(s *timeLagScraper) map[kafka.TopicPartition]timetable.Sample {
	out := map[kafka.TopicPartition]timetable.Sample{}
	tps := s.reader.Tables.Partitions()
	for i, ref := range s.reader.Tables.Refs(tps) {
		if head, ok := s.reader.Tables.Oldest(ref); ok {
			out[tps[i]] = head
		}
	}
	return out
}

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

// secFixture produces two records on one partition of a LogAppendTime
// topic (their stamps are the broker's append times, which the receiver
// trusts from the topic's configuration) and commits a group at the first,
// so a working scrape reports lag 2 and a time lag.
func secFixture(k *testKafka) time.Time {
	k.CreateAppendTimeTopic("orders", 1)
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

// aclsFor is the least-privilege ACL set of docs/security.md for the principal,
// on the given group prefix and topics; readTopics also get Read.
func aclsFor(groupPrefix string, describeTopics, readTopics []string) []kfake.ACL {
	acls := []kfake.ACL{{
		Resource: kmsg.ACLResourceTypeGroup, Name: groupPrefix, Pattern: kmsg.ACLResourcePatternTypePrefixed,
		Operation: kmsg.ACLOperationDescribe, Allow: true,
	}}
	for _, topic := range describeTopics {
		for _, op := range []kmsg.ACLOperation{kmsg.ACLOperationDescribe, kmsg.ACLOperationDescribeConfigs} {
			acls = append(acls, kfake.ACL{
				Resource: kmsg.ACLResourceTypeTopic, Name: topic, Pattern: kmsg.ACLResourcePatternTypeLiteral,
				Operation: op, Allow: true,
			})
		}
	}
	for _, topic := range readTopics {
		acls = append(acls, kfake.ACL{
			Resource: kmsg.ACLResourceTypeTopic, Name: topic, Pattern: kmsg.ACLResourcePatternTypeLiteral,
			Operation: kmsg.ACLOperationRead, Allow: true,
		})
	}
	return acls
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

func intValues(points map[pointKey]point) map[pointKey]int64 {
	out := make(map[pointKey]int64, len(points))
	for k, p := range points {
		out[k] = p.intValue
	}
	return out
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

// startTelemetryScraper is startScraper with the receiver's own telemetry
// kept, to be read with metadatatest.
func startTelemetryScraper(t *testing.T, cfg *Config) (*timeLagScraper, *componenttest.Telemetry) {
	t.Helper()
	return startTelemetryScraperLogging(t, cfg, nil)
}

// startTelemetryScraperLogging is startTelemetryScraper logging to logger
// (nil: the telemetry settings' own).
func startTelemetryScraperLogging(t *testing.T, cfg *Config, logger *zap.Logger) (*timeLagScraper, *componenttest.Telemetry) {
	t.Helper()
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	settings := metadatatest.NewSettings(tt)
	if logger != nil {
		settings.Logger = logger
	}
	s, err := newTimeLagScraper(cfg, settings, nil)
	require.NoError(t, err)
	require.NoError(t, s.start(context.Background(), nil))
	t.Cleanup(func() { require.NoError(t, s.shutdown(context.Background())) })
	return s, tt
}
