//go:build !unit

package kafkatimelagreceiver

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadatatest"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/scrapestatus"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/scrapestatus/scrapestatustest"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
)

// TestSelfTelemetry: one scrape reports its duration, the Kafka requests it
// sent by API and outcome, the tracked partitions, table points, the
// producers' clocks measured off and how each time lag was estimated,
// through the component's MeterProvider.
func TestSelfTelemetry(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("observed", 2)
	old := time.Now().Add(-time.Hour)
	k.Produce("observed", 0, old, old)
	k.Produce("observed", 1, old)
	k.Commit("watcher", "observed", map[int32]int64{0: 0, 1: 1})

	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	cfg := k.testConfig()
	// The records were stamped in the past: their stamps date them, as an
	// operator who knows their producers says (trusted_timestamp_topics).
	cfg.TrustedTimestampTopics = []string{"."}
	require.NoError(t, cfg.Validate())
	s, err := newTimeLagScraper(cfg, metadatatest.NewSettings(tt), nil)
	require.NoError(t, err)
	require.NoError(t, s.start(context.Background(), nil))
	t.Cleanup(func() { require.NoError(t, s.shutdown(context.Background())) })
	_, err = s.scrape(context.Background())
	require.NoError(t, err)

	got, err := tt.GetMetric("otelcol_kafka_time_lag_scrape_duration")
	require.NoError(t, err)
	require.Equal(t, uint64(1), got.Data.(metricdata.Histogram[float64]).DataPoints[0].Count)

	requests, err := tt.GetMetric("otelcol_kafka_time_lag_requests")
	require.NoError(t, err)
	byAPI := map[string]int64{}
	for _, dp := range requests.Data.(metricdata.Sum[int64]).DataPoints {
		api, _ := dp.Attributes.Value("api")
		outcome, _ := dp.Attributes.Value("outcome")
		require.Equal(t, "success", outcome.AsString())
		byAPI[api.AsString()] += dp.Value
	}
	require.Greater(t, byAPI["ListOffsets"], int64(1), "one broker: the end offsets, then the time index's rounds")
	require.Equal(t, int64(1), byAPI["Fetch"], "one record read for the lagging partition, a new one that may hold transaction markers")
	require.GreaterOrEqual(t, byAPI["OffsetFetch"], int64(1))

	responses, err := tt.GetMetric("otelcol_kafka_time_lag_response_bytes")
	require.NoError(t, err)
	bytesByAPI := map[string]int64{}
	for _, dp := range responses.Data.(metricdata.Sum[int64]).DataPoints {
		api, _ := dp.Attributes.Value("api")
		bytesByAPI[api.AsString()] += dp.Value
	}
	for _, api := range []string{"ApiVersions", "Metadata", "ListOffsets", "Fetch", "OffsetFetch"} {
		require.Positive(t, bytesByAPI[api], "the bytes of the %s responses read", api)
	}

	metadatatest.AssertEqualKafkaTimeLagTrackedPartitions(t, tt,
		[]metricdata.DataPoint[int64]{{Value: 2}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualKafkaTimeLagTablePoints(t, tt,
		[]metricdata.DataPoint[int64]{{Value: 2}}, metricdatatest.IgnoreTimestamp())
	// The record read is the test client's, whose clock is the broker's.
	metadatatest.AssertEqualKafkaTimeLagProducerClocksOff(t, tt,
		[]metricdata.DataPoint[int64]{{Value: 0}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualKafkaTimeLagProducerClockOffsetMax(t, tt,
		[]metricdata.DataPoint[float64]{{Value: 0}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualKafkaTimeLagEstimates(t, tt, []metricdata.DataPoint[int64]{
		{Attributes: attribute.NewSet(attribute.String("method", "caught_up")), Value: 1},
		{Attributes: attribute.NewSet(attribute.String("method", "record_timestamp")), Value: 1},
	}, metricdatatest.IgnoreTimestamp())
}

// TestStatusFollowsKafkaOutage: with the whole cluster down the receiver
// reports a recoverable error, and OK at the first scrape after it is back.
func TestStatusFollowsKafkaOutage(t *testing.T) {
	dir := t.TempDir()
	k := newTestKafka(t, 2, kfake.DataDir(dir))
	k.CreateTopic("orders", 1)
	k.Produce("orders", 0, time.Now().Add(-time.Minute), time.Now())
	k.Commit("billing", "orders", map[int32]int64{0: 1})
	cfg := k.testConfig()
	cfg.Timeout = 3 * time.Second
	host := scrapestatustest.NewHost()
	s, err := newTimeLagScraper(cfg, receivertest.NewNopSettings(metadata.Type), nil)
	require.NoError(t, err)
	require.NoError(t, s.start(context.Background(), host))
	t.Cleanup(func() { require.NoError(t, s.shutdown(context.Background())) })

	_, err = s.scrape(context.Background())
	require.NoError(t, err)
	require.Empty(t, host.Statuses(), "OK after start is the collector's to report")

	var ports []int
	for _, addr := range k.Addrs {
		_, p, err := net.SplitHostPort(addr)
		require.NoError(t, err)
		port, err := strconv.Atoi(p)
		require.NoError(t, err)
		ports = append(ports, port)
	}
	k.Client.Close()
	k.Cluster.Close()
	for range 2 {
		_, err = s.scrape(context.Background())
		require.Error(t, err)
	}
	require.Equal(t, []componentstatus.Status{componentstatus.StatusRecoverableError}, host.Statuses())
	require.Error(t, host.Last().Err())

	newTestKafka(t, 2, kfake.DataDir(dir), kfake.Ports(ports...))
	require.Eventually(t, func() bool {
		_, err := s.scrape(context.Background())
		return err == nil
	}, 60*time.Second, 100*time.Millisecond)
	require.Equal(t, []componentstatus.Status{componentstatus.StatusRecoverableError, componentstatus.StatusOK}, host.Statuses())
}

// TestStatusPermanentForRefusedCredentials: brokers that refuse the
// credentials from the start (as Kafka does, with SASL_AUTHENTICATION_FAILED)
// for longer than the grace make a permanent error: the configuration needs
// fixing.
func TestStatusPermanentForRefusedCredentials(t *testing.T) {
	const password = "wrong-Pa55-9"
	k := newSecureTestKafka(t, 1,
		[]kgo.Opt{kgo.SASL(saslMechanismFor(t, kafka.SASLPlain, secAdminUser, secAdminPassword))},
		kfake.EnableSASL(),
		kfake.Superuser(kafka.SASLPlain, secAdminUser, secAdminPassword),
	)
	// kfake closes the connection on a wrong password; Kafka answers.
	k.Cluster.ControlKey(int16(kmsg.SASLAuthenticate), func(req kmsg.Request) (kmsg.Response, error, bool) {
		k.Cluster.KeepControl()
		auth := req.(*kmsg.SASLAuthenticateRequest)
		if string(auth.SASLAuthBytes) == "\x00"+secAdminUser+"\x00"+secAdminPassword {
			return nil, nil, false
		}
		resp := auth.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := "Authentication failed: Invalid username or password"
		resp.ErrorMessage = &msg
		return resp, nil, true
	})
	cfg := k.testConfig()
	cfg.Auth.SASL = &SASLConfig{Mechanism: kafka.SASLPlain, Username: secMonitorUser, Password: password, Version: 1}
	host := scrapestatustest.NewHost()
	s, err := newTimeLagScraper(cfg, receivertest.NewNopSettings(metadata.Type), nil)
	require.NoError(t, err)
	require.NoError(t, s.start(context.Background(), host))
	t.Cleanup(func() { require.NoError(t, s.shutdown(context.Background())) })

	for range 2 {
		_, err = s.scrape(context.Background())
		require.Error(t, err)
	}
	require.Equal(t, []componentstatus.Status{componentstatus.StatusRecoverableError}, host.Statuses(),
		"refused from the start, within the grace")
	require.ErrorContains(t, host.Last().Err(), "SASL")

	past := time.Now().Add(scrapestatus.RefusalGrace)
	s.status.Now = func() time.Time { return past }
	_, err = s.scrape(context.Background())
	require.Error(t, err)
	require.Equal(t, []componentstatus.Status{componentstatus.StatusRecoverableError, componentstatus.StatusPermanentError}, host.Statuses())
	require.ErrorContains(t, host.Last().Err(), "SASL")
	require.NotContains(t, host.Last().Err().Error(), password)
}
