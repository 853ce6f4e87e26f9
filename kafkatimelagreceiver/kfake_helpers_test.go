package kafkatimelagreceiver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/kafkacount"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

// testKafka is an in-process Kafka cluster (kfake) with a franz-go client to
// drive it and counters of the requests the receiver sends it.
type testKafka struct {
	t       *testing.T
	cluster *kfake.Cluster
	addrs   []string
	client  *kgo.Client
	admin   *kadm.Client
	counts  *kafkacount.Counter
}

func newTestKafka(t *testing.T, brokers int, opts ...kfake.Opt) *testKafka {
	t.Helper()
	opts = append([]kfake.Opt{kfake.NumBrokers(brokers)}, opts...)
	c, err := kfake.NewCluster(opts...)
	require.NoError(t, err)
	k := &testKafka{t: t, cluster: c, addrs: c.ListenAddrs()}
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.addrs...), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	k.client = cl
	k.admin = kadm.NewClient(cl)
	k.counts = kafkacount.Observe(c)
	t.Cleanup(func() {
		cl.Close()
		c.Close()
	})
	return k
}

// requests returns how many requests with the API key the cluster served.
// The test's own franz-go client counts too: read it around receiver calls only.
func (k *testKafka) requests(key int16) int64 {
	return k.counts.Snapshot()[key]
}

func (k *testKafka) createTopic(topic string, partitions int32) {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := k.admin.CreateTopic(ctx, partitions, 1, nil, topic)
	require.NoError(k.t, err)
	require.NoError(k.t, resp.Err)
}

// produce appends records with the given timestamps to one partition and
// returns the offset of the first.
func (k *testKafka) produce(topic string, partition int32, timestamps ...time.Time) int64 {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	records := make([]*kgo.Record, len(timestamps))
	for i, ts := range timestamps {
		records[i] = &kgo.Record{Topic: topic, Partition: partition, Timestamp: ts, Value: []byte("x")}
	}
	results := k.client.ProduceSync(ctx, records...)
	require.NoError(k.t, results.FirstErr())
	return results[0].Record.Offset
}

// commit sets a group's committed offsets, as a consumer that has since left
// (or an admin tool) would.
func (k *testKafka) commit(group, topic string, offsets map[int32]int64) {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	os := kadm.Offsets{topic: map[int32]kadm.Offset{}}
	for p, at := range offsets {
		os[topic][p] = kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1}
	}
	resp, err := k.admin.CommitOffsets(ctx, group, os)
	require.NoError(k.t, err)
	require.NoError(k.t, resp.Error())
}

// testConfig is a receiver configuration pointed at the cluster, with a
// sampler slow enough that it stays out of the way unless a test wants it,
// and kafka.consumer_group.offset on (off by default): the tests read the
// committed offsets the receiver saw through it.
func (k *testKafka) testConfig() *Config {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.Brokers = k.addrs
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

// eachMetric calls fn with every metric of md, in order.
func eachMetric(md pmetric.Metrics, fn func(pmetric.Metric)) {
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				fn(ms.At(k))
			}
		}
	}
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
