package saramacluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/kafkacount"
)

// testKafka is an in-process Kafka cluster (kfake) with a franz-go client to
// drive it and counters of the requests the cluster serves.
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
// The test's own franz-go client counts too: read it around Cluster calls only.
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

// testSettings are the settings the receiver's default configuration gives,
// pointed at the cluster: its client id and protocol version, and a 10 s
// request timeout.
func (k *testKafka) testSettings() Settings {
	return Settings{
		Brokers:         k.addrs,
		ClientID:        "otel-kafkatimelag",
		ProtocolVersion: "3.0.0",
		RequestTimeout:  10 * time.Second,
	}
}
