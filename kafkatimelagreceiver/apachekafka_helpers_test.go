//go:build kafka

package kafkatimelagreceiver

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/apachekafka"
)

// The real-Kafka suite: the receiver against Apache Kafka clusters that
// kafkatest/apachekafka starts (make test-kafka). Its tests are named
// TestApacheKafka*.

// realKafka is an Apache Kafka cluster with a franz-go client to drive it.
type realKafka struct {
	*apachekafka.Cluster
	t      *testing.T
	client *kgo.Client
	admin  *kadm.Client
}

func newRealKafka(t *testing.T, opts apachekafka.Options) *realKafka {
	t.Helper()
	c := apachekafka.New(t, opts)
	cl, err := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return &realKafka{Cluster: c, t: t, client: cl, admin: kadm.NewClient(cl)}
}

// config is a receiver configuration pointed at the cluster, as
// testKafka's testConfig.
func (k *realKafka) config() *Config {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.Brokers = k.Addrs()
	cfg.SamplingInterval = time.Hour
	cfg.Timeout = 10 * time.Second
	cfg.Metrics.KafkaConsumerGroupOffset.Enabled = true
	return cfg
}

func (k *realKafka) createTopic(name string, partitions int32, configs map[string]string) {
	k.t.Helper()
	require.NoError(k.t, k.CreateTopic(context.Background(), name, partitions, configs))
}

// tool runs one of Kafka's tools against the plaintext listeners.
func (k *realKafka) tool(class string, args ...string) string {
	k.t.Helper()
	out, err := k.Tool(context.Background(), class, append([]string{"--bootstrap-server", strings.Join(k.Addrs(), ",")}, args...)...)
	require.NoError(k.t, err)
	return out
}

// describedPartition is one row of kafka-consumer-groups --describe.
type describedPartition struct {
	committed, end, lag int64
}

// describeGroup is kafka-consumer-groups --describe of a group: its rows by
// (topic, partition); a partition without a commit is left out.
func (k *realKafka) describeGroup(group string) map[pointKey]describedPartition {
	k.t.Helper()
	out := k.tool(apachekafka.ConsumerGroups, "--describe", "--group", group)
	rows := map[pointKey]describedPartition{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[0] != group {
			continue
		}
		partition, err := strconv.ParseInt(f[2], 10, 64)
		require.NoError(k.t, err, line)
		if f[3] == "-" {
			continue
		}
		var row describedPartition
		for i, dst := range []*int64{&row.committed, &row.end, &row.lag} {
			*dst, err = strconv.ParseInt(f[3+i], 10, 64)
			require.NoError(k.t, err, line)
		}
		rows[pointKey{group, f[1], partition}] = row
	}
	require.NotEmpty(k.t, rows, "kafka-consumer-groups --describe --group %s:\n%s", group, out)
	return rows
}

// recordAt is the record at offset of a partition.
func (k *realKafka) recordAt(topic string, partition int32, offset int64) *kgo.Record {
	k.t.Helper()
	cl, err := k.Client(
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(offset)}}),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()),
	)
	require.NoError(k.t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		fetches := cl.PollFetches(ctx)
		require.NoError(k.t, ctx.Err(), "no record at %s[%d]@%d", topic, partition, offset)
		for _, r := range fetches.Records() {
			if r.Offset >= offset {
				return r
			}
		}
	}
}

// produceSync produces records (topic, partition and value set) and waits
// for every acknowledgement.
func (k *realKafka) produceSync(cl *kgo.Client, records ...*kgo.Record) {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(k.t, cl.ProduceSync(ctx, records...).FirstErr())
}

// fill writes n small records to each of a topic's first partitions and
// waits for their acknowledgements.
func (k *realKafka) fill(topic string, partitions int32, n int) {
	k.t.Helper()
	var records []*kgo.Record
	for p := range partitions {
		for range n {
			records = append(records, &kgo.Record{Topic: topic, Partition: p, Value: []byte("record")})
		}
	}
	k.produceSync(k.client, records...)
}

// timeLagBound is the receiver's accuracy target for one estimate
// (docs/accuracy.md): max(1 s, 1 % of the true time lag).
func timeLagBound(truth float64) float64 { return max(1, truth/100) }

// requireTimeLag checks a time lag point against the append time of the
// record at the group's committed offset.
func requireTimeLag(t *testing.T, p point, appended time.Time, what string) {
	t.Helper()
	truth := p.timestamp.Sub(appended).Seconds()
	require.InDelta(t, truth, p.doubleValue, timeLagBound(truth), "%s: time lag %.3fs, the record at the committed offset was appended %.3fs before the scrape", what, p.doubleValue, truth)
}

func topicPartitionKey(group, topic string, partition int32) pointKey {
	return pointKey{group, topic, int64(partition)}
}

func describeKey(k pointKey) string { return fmt.Sprintf("%s %s[%d]", k.group, k.topic, k.partition) }
