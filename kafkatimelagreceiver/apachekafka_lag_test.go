//go:build kafka

package kafkatimelagreceiver

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/apachekafka"
)

// TestApacheKafkaLagWithRealClients writes with franz-go, sarama and Kafka's
// own Java producer (ProducerPerformance, zstd, linger.ms 200) to a
// LogAppendTime topic and a CreateTime one, reads part of them with Kafka's
// console consumer in a classic group and a KIP-848 one
// (group.protocol=consumer), and at the quiet moment after checks the
// receiver's offset lag and committed offsets against kafka-consumer-groups
// --describe, row for row, and its time lag against the append times: the
// LogAppendTime topic's stamps, within the accuracy target on every
// partition; the CreateTime topic's stamps (written at most the linger and
// a send before the append), where the receiver gives one. With nothing
// new, the scrapes stop reading records within a few and send no Fetch
// from then on.
func TestApacheKafkaLagWithRealClients(t *testing.T) {
	requireNoLeakedGoroutines(t)
	k := newRealKafka(t, apachekafka.Options{})
	const appended, created = "appended", "created"
	k.createTopic(appended, 3, map[string]string{"message.timestamp.type": "LogAppendTime"})
	k.createTopic(created, 3, nil)

	// franz-go: 100 records to each partition, zstd, in batches a linger
	// makes.
	fr, err := k.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(100*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.ZstdCompression()), kgo.ClientID("franz-go-producer"))
	require.NoError(t, err)
	defer fr.Close()
	var records []*kgo.Record
	for _, topic := range []string{appended, created} {
		for p := range int32(3) {
			for i := range 100 {
				records = append(records, &kgo.Record{Topic: topic, Partition: p, Value: []byte("franz-go " + strconv.Itoa(i))})
			}
		}
	}
	k.produceSync(fr, records...)

	// sarama: 300 records to each topic, zstd.
	scfg := sarama.NewConfig()
	scfg.Version = sarama.V3_0_0_0
	scfg.ClientID = "sarama-producer"
	scfg.Producer.Return.Successes = true
	scfg.Producer.Compression = sarama.CompressionZSTD
	scfg.Producer.Flush.Frequency = 50 * time.Millisecond
	sp, err := sarama.NewSyncProducer(k.Addrs(), scfg)
	require.NoError(t, err)
	var msgs []*sarama.ProducerMessage
	for _, topic := range []string{appended, created} {
		for i := range 300 {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(fmt.Sprintf("sarama %d", i))})
		}
	}
	require.NoError(t, sp.SendMessages(msgs))
	require.NoError(t, sp.Close())

	// Kafka's Java producer: 3,000 records to each topic at 1,500/s.
	for _, topic := range []string{appended, created} {
		out := k.tool(apachekafka.ProducerPerformance, "--topic", topic, "--num-records", "3000", "--record-size", "100",
			"--throughput", "1500", "--command-property", "linger.ms=200", "--command-property", "compression.type=zstd", "--command-property", "acks=all")
		require.Contains(t, out, "3000 records sent")
	}

	// Kafka's console consumer reads part of both topics in a classic group,
	// and part of the LogAppendTime one in a KIP-848 group, commits, and
	// leaves.
	partitionsOf := map[string]int{"classic": 6, "consumer": 3}
	for group, read := range map[string][2]string{"classic": {appended + "|" + created, "4000"}, "consumer": {appended, "1500"}} {
		_, err := k.Tool(context.Background(), apachekafka.ConsoleConsumer, "--bootstrap-server", k.Addrs()[0],
			"--include", read[0], "--group", group, "--from-beginning", "--max-messages", read[1],
			"--consumer-property", "group.protocol="+group, "--formatter-property", "print.value=false")
		require.NoError(t, err)
	}

	cfg := k.config()
	s, tt := startTelemetryScraper(t, cfg)
	// A first scrape reads records within max_record_read_bytes_per_scrape
	// and withholds the time lag of those past it: they are read on the
	// next scrapes. Every record was appended before the receiver started:
	// the LogAppendTime topic's stamps are append times, and its partitions
	// get a time lag; a CreateTime stamp older than the receiver's tables is
	// not shown to be one, and its partition gets a right one or none.
	var lags, offsets, ends, timeLags map[pointKey]point
	appendTimeDated := func() int {
		n := 0
		for key := range timeLags {
			if key.topic == appended {
				n++
			}
		}
		return n
	}
	for scrape := 0; ; scrape++ {
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		lags, offsets, ends = pointsOf(md, "kafka.consumer_group.lag"), pointsOf(md, "kafka.consumer_group.offset"), pointsOf(md, "kafka.partition.current_offset")
		timeLags = pointsOf(md, "kafka.consumer_group.time_lag")
		if appendTimeDated() == 6 {
			break
		}
		require.Less(t, scrape, 5, "time lag of %d of the LogAppendTime topic's 6 (group, partition) pairs after %d scrapes", appendTimeDated(), scrape+1)
	}
	behind, datedBehind := 0, 0
	for _, group := range []string{"classic", "consumer"} {
		described := k.describeGroup(group)
		require.Len(t, described, partitionsOf[group], "%s committed on every partition it read", group)
		for key, row := range described {
			if row.lag > 0 {
				behind++
			}
			require.Equal(t, row.lag, lags[key].intValue, "%s: offset lag, kafka-consumer-groups --describe says %d", describeKey(key), row.lag)
			require.Equal(t, row.committed, offsets[key].intValue, "%s: committed offset", describeKey(key))
			require.Equal(t, row.end, ends[pointKey{"", key.topic, key.partition}].intValue, "%s: end offset", describeKey(key))
			tl, ok := timeLags[key]
			if !ok {
				require.Equal(t, created, key.topic, "%s: no time lag", describeKey(key))
				continue
			}
			if row.lag == 0 {
				require.Zero(t, tl.doubleValue, "%s: caught up", describeKey(key))
				continue
			}
			if key.topic == appended {
				datedBehind++
			}
			next := k.recordAt(key.topic, int32(key.partition), row.committed)
			if key.topic == appended {
				requireTimeLag(t, tl, next.Timestamp, describeKey(key))
				continue
			}
			// A CreateTime stamp is taken before the linger and the send:
			// the append follows it by up to the linger and a round trip.
			truth := tl.timestamp.Sub(next.Timestamp).Seconds()
			require.LessOrEqual(t, tl.doubleValue, truth+timeLagBound(truth), "%s: time lag %.3fs, record stamped %.3fs before", describeKey(key), tl.doubleValue, truth)
			require.GreaterOrEqual(t, tl.doubleValue, truth-0.2-1-timeLagBound(truth), "%s: time lag %.3fs, record stamped %.3fs before", describeKey(key), tl.doubleValue, truth)
		}
	}
	require.GreaterOrEqual(t, behind, 5, "the groups read part of the records: most partitions are behind")
	require.GreaterOrEqual(t, datedBehind, 2, "LogAppendTime partitions behind, dated")

	// Nothing new: once the reads the byte budget left for later are done
	// (within a few scrapes), a scrape reads no record, and the next ones
	// neither.
	fetches := func() int64 {
		t.Helper()
		_, err := s.scrape(context.Background())
		require.NoError(t, err)
		return telemetryByAPI(t, tt, "otelcol_kafka_time_lag_requests")[kmsg.Fetch.Name()]
	}
	last := telemetryByAPI(t, tt, "otelcol_kafka_time_lag_requests")[kmsg.Fetch.Name()]
	for scrape := 0; ; scrape++ {
		n := fetches()
		if n == last {
			break
		}
		last = n
		require.Less(t, scrape, 4, "every scrape with nothing new still reads records (%d Fetch so far)", n)
	}
	for scrape := range 2 {
		require.Equal(t, last, fetches(), "steady scrape %d with nothing new sends no Fetch", scrape)
	}
}
