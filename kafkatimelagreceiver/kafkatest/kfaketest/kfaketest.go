// Package kfaketest drives an in-process Kafka cluster (kfake) from tests
// and benchmarks: a cluster with a franz-go client to create topics, produce
// and commit, the requests it serves counted by API key (kafkacount), and
// the scale workloads of the benchmarks (scaleload) with their reporting.
// Everything it starts is closed when the test or benchmark ends.
package kfaketest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kafkacount"
)

// opTimeout bounds every request the helpers send.
const opTimeout = 30 * time.Second

// Kafka is an in-process Kafka cluster with a franz-go client to drive it
// and counters of the requests it serves. Its methods fail TB on an error.
type Kafka struct {
	TB      testing.TB
	Cluster *kfake.Cluster
	Addrs   []string
	Client  *kgo.Client
	Admin   *kadm.Client
	Counts  *kafkacount.Counter
	// clientOpts are New's options of the test's client, which producers
	// of their own connect with too.
	clientOpts []kgo.Opt
	// appendTime are the topics created LogAppendTime: kfake keeps the
	// producer's stamps where Kafka writes its append time, so the helpers
	// stamp their records with the time they send them, as a broker would
	// within the produce's round trip.
	appendTime *sync.Map
}

// New serves a cluster of brokers brokers, configured by opts, and connects
// a client to it: no producer linger, records go to the partition they
// name, then clientOpts (SASL or TLS for a secured cluster). Both are closed
// at tb's cleanup.
func New(tb testing.TB, brokers int, clientOpts []kgo.Opt, opts ...kfake.Opt) *Kafka {
	tb.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(brokers)}, opts...)...)
	require.NoError(tb, err)
	tb.Cleanup(c.Close)
	k := &Kafka{TB: tb, Cluster: c, Addrs: c.ListenAddrs(), Counts: kafkacount.Observe(c), appendTime: &sync.Map{}}
	k.clientOpts = append([]kgo.Opt{
		kgo.SeedBrokers(k.Addrs...),
		kgo.ProducerLinger(0),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}, clientOpts...)
	k.Client = k.newClient()
	k.Admin = kadm.NewClient(k.Client)
	return k
}

// newClient connects a client with New's options, then opts, closed at
// cleanup (cleanups run last first: the client before the cluster).
func (k *Kafka) newClient(opts ...kgo.Opt) *kgo.Client {
	k.TB.Helper()
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, k.clientOpts...), opts...)...)
	require.NoError(k.TB, err)
	k.TB.Cleanup(cl.Close)
	return cl
}

// Producer produces to the cluster with a client of its own: a producer
// ID of its own, or none.
type Producer struct {
	tb         testing.TB
	Client     *kgo.Client
	appendTime *sync.Map
}

// NewProducer connects a producer as New connects the test's client, then
// with opts: kgo.DisableIdempotentWrite() makes a producer without an ID,
// whose batches do not say which producer wrote them (a librdkafka client's
// default). Its records are flushed by Produce, so that one call's records
// to a partition are one batch however slow the machine. It is closed at
// cleanup.
func (k *Kafka) NewProducer(opts ...kgo.Opt) *Producer {
	k.TB.Helper()
	return &Producer{tb: k.TB, Client: k.newClient(append([]kgo.Opt{kgo.ManualFlushing()}, opts...)...), appendTime: k.appendTime}
}

// Requests returns how many requests with the API key the cluster served.
// The counter sees every client, the test's own included: read it around
// the calls under test only.
func (k *Kafka) Requests(key int16) int64 {
	return k.Counts.Snapshot()[key]
}

// RequestsByBroker returns how many requests with the API key each broker
// served, by node id (brokers that served none are absent).
func (k *Kafka) RequestsByBroker(key int16) map[int32]int64 {
	out := map[int32]int64{}
	for node, counts := range k.Counts.ByBroker() {
		if n := counts[key]; n > 0 {
			out[node] = n
		}
	}
	return out
}

// CreateTopic creates a topic of partitions partitions, replication 1.
func (k *Kafka) CreateTopic(topic string, partitions int32) {
	k.TB.Helper()
	k.CreateTopicWith(topic, partitions, nil)
}

// CreateAppendTimeTopic creates a topic whose records carry the broker's
// append time (message.timestamp.type LogAppendTime): their timestamps are
// append times, which the receiver takes as such from the topic's
// configuration.
func (k *Kafka) CreateAppendTimeTopic(topic string, partitions int32) {
	k.TB.Helper()
	logAppendTime := "LogAppendTime"
	k.CreateTopicWith(topic, partitions, map[string]*string{"message.timestamp.type": &logAppendTime})
	k.appendTime.Store(topic, true)
}

// CreateTopicWith creates a topic of partitions partitions, replication 1,
// with configs.
func (k *Kafka) CreateTopicWith(topic string, partitions int32, configs map[string]*string) {
	k.TB.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	resp, err := k.Admin.CreateTopic(ctx, partitions, 1, configs, topic)
	require.NoError(k.TB, err)
	require.NoError(k.TB, resp.Err)
}

// Produce appends records with the given timestamps to one partition, from
// the test's client (an idempotent producer), and returns the offset of the
// first.
func (k *Kafka) Produce(topic string, partition int32, timestamps ...time.Time) int64 {
	k.TB.Helper()
	return (&Producer{tb: k.TB, Client: k.Client, appendTime: k.appendTime}).Produce(topic, partition, timestamps...)
}

// Produce appends records with the given timestamps to one partition and
// returns the offset of the first.
func (p *Producer) Produce(topic string, partition int32, timestamps ...time.Time) int64 {
	p.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	results := make(kgo.ProduceResults, len(timestamps))
	var wg sync.WaitGroup
	wg.Add(len(timestamps))
	_, appendTime := p.appendTime.Load(topic)
	sent := time.Now()
	for i, ts := range timestamps {
		if appendTime {
			ts = sent
		}
		p.Client.Produce(ctx, &kgo.Record{Topic: topic, Partition: partition, Timestamp: ts, Value: []byte("x")}, func(r *kgo.Record, err error) {
			results[i] = kgo.ProduceResult{Record: r, Err: err}
			wg.Done()
		})
	}
	require.NoError(p.tb, p.Client.Flush(ctx))
	wg.Wait()
	require.NoError(p.tb, results.FirstErr())
	return results[0].Record.Offset
}

// Commit sets a group's committed offsets, as a consumer that has since
// left (or an admin tool) would.
func (k *Kafka) Commit(group, topic string, offsets map[int32]int64) {
	k.TB.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	os := kadm.Offsets{topic: map[int32]kadm.Offset{}}
	for p, at := range offsets {
		os[topic][p] = kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1}
	}
	resp, err := k.Admin.CommitOffsets(ctx, group, os)
	require.NoError(k.TB, err)
	require.NoError(k.TB, resp.Error())
}

// ProduceRaw appends records, encoded record batches as they are (written
// by hand, so as to be what no well-behaved producer sends), to one
// partition.
func (k *Kafka) ProduceRaw(topic string, partition int32, records []byte) {
	k.TB.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = int32(opTimeout / time.Millisecond)
	topics, err := k.Admin.ListTopics(ctx, topic)
	require.NoError(k.TB, err)
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rt.TopicID = topics[topic].ID // produce v13 names topics by id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := k.Client.Request(ctx, req)
	require.NoError(k.TB, err)
	for _, t := range resp.(*kmsg.ProduceResponse).Topics {
		for _, p := range t.Partitions {
			require.Zero(k.TB, p.ErrorCode, "produce to %s/%d", topic, p.Partition)
		}
	}
}
