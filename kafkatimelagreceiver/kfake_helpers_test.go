package kafkatimelagreceiver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
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
	eachMetric(md, func(m pmetric.Metric) {
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
