//go:build kafka

package kafkatimelagreceiver

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/apachekafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kafkacount"
)

// TestApacheKafkaRecordReadsPastAFullResponse: a record read of more
// partitions than one Fetch response holds (the receiver asks 8 MiB a
// response and 64 KiB a partition first). 160 partitions hold 240 KB each in
// batches of about 40 KB, and a group sits on each one's first record, read
// with timestamp_source record_reads. Apache Kafka fills a response with the
// first 64 KiB of 128 of them and sends the others empty: those are asked
// 64 KiB again in a second Fetch, not taken for partitions whose batch is
// larger than that and asked 1 MiB (which would read all 240 KB of each).
// The broker counts what it sent the receiver: two Fetch responses, and no
// more than 64 KiB a partition in them.
func TestApacheKafkaRecordReadsPastAFullResponse(t *testing.T) {
	requireNoLeakedGoroutines(t)
	const (
		topic                       = "full"
		partitions                  = 160
		batches, recordsPerBatch    = 6, 40
		recordBytes                 = 1000
		firstAsk                    = 64 << 10
		group, clientID             = "far-behind", "full-response"
		responseHeaderAllowance     = 64 << 10
		fetchesForTheFirstRecordsOf = 2
	)
	wire := kafkacount.NewWire()
	k := newRealKafka(t, apachekafka.Options{Wire: wire})
	k.createTopic(topic, partitions, nil)
	producer, err := k.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(48<<10))
	require.NoError(t, err)
	t.Cleanup(producer.Close)
	random := rand.NewChaCha8([32]byte{7})
	for range batches {
		var records []*kgo.Record
		for p := range int32(partitions) {
			for range recordsPerBatch {
				value := make([]byte, recordBytes)
				_, _ = random.Read(value) // incompressible
				records = append(records, &kgo.Record{Topic: topic, Partition: p, Value: value})
			}
		}
		k.produceSync(producer, records...)
	}
	firsts := kadm.Offsets{}
	for p := range int32(partitions) {
		firsts.Add(kadm.Offset{Topic: topic, Partition: p, At: 0, LeaderEpoch: -1})
	}
	committed, err := k.admin.CommitOffsets(context.Background(), group, firsts)
	require.NoError(t, err)
	require.NoError(t, committed.Error())

	cfg := k.config()
	cfg.ClientID = clientID
	cfg.TimestampSource = TimestampSourceRecordReads
	s, _ := startTelemetryScraper(t, cfg)
	before, beforeBytes := wire.Requests(clientID), wire.Bytes(clientID)
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	fetches := wire.Requests(clientID).Since(before).Of(kmsg.Fetch)
	fetched := wire.Bytes(clientID).Since(beforeBytes).Of(kmsg.Fetch)
	t.Logf("record reads of %d partitions far behind: %d Fetch, %d bytes", partitions, fetches, fetched)

	// A partition the read left unanswered is an error of the scrape
	// (above); the records' time lags wait for the tables to prove when
	// they were appended, before the receiver started.
	require.Len(t, pointsOf(md, "kafka.consumer_group.lag"), partitions)
	require.EqualValues(t, fetchesForTheFirstRecordsOf, fetches, "Fetch requests: %d partitions of 64 KiB in responses of 8 MiB", partitions)
	require.LessOrEqual(t, fetched, int64(partitions*firstAsk+responseHeaderAllowance),
		"Fetch bytes: at most the first 64 KiB of each partition")
}
