//go:build !unit

package kafkatimelagreceiver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kafkacount"
)

// nearHead is a cluster whose groups sit near the head of partitions
// written in batches of real size, and counts of what each client id
// read, on the brokers' side of the sockets.
type nearHead struct {
	*testKafka
	wire   *kafkacount.Wire
	writer *kgo.Client
	rng    *rand.ChaCha8
	topic  string
	// ends are the partitions' end offsets: the test's writer is their
	// only one.
	ends                      []int64
	groups                    int
	batchRecords, recordBytes int
	maxBehind                 int
}

func newNearHead(t *testing.T, brokers, partitions, groups int) *nearHead {
	t.Helper()
	wire := kafkacount.NewWire()
	k := newTestKafka(t, brokers, kfake.ListenFn(wire.Listen))
	h := &nearHead{
		testKafka: k, wire: wire, rng: rand.NewChaCha8([32]byte{42}), topic: "near-head",
		ends: make([]int64, partitions), groups: groups, batchRecords: 16, recordBytes: 1 << 10, maxBehind: 12,
	}
	k.CreateTopic(h.topic, int32(partitions))
	// A producer of its own, flushed once per write: each partition's
	// records of a write are one batch, uncompressed.
	writer, err := kgo.NewClient(kgo.SeedBrokers(k.Addrs...), kgo.ClientID("near-head-writer"), kgo.ManualFlushing(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	require.NoError(t, err)
	t.Cleanup(writer.Close)
	h.writer = writer
	return h
}

// writeAndCommit writes one batch of random (incompressible) records to
// every partition, then commits every group on every partition 0 to
// maxBehind records behind the new end.
func (h *nearHead) writeAndCommit() {
	t := h.TB
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, len(h.ends)*h.batchRecords)
	for p := range h.ends {
		for range h.batchRecords {
			value := make([]byte, h.recordBytes)
			_, _ = h.rng.Read(value)
			h.writer.Produce(ctx, &kgo.Record{Topic: h.topic, Partition: int32(p), Value: value}, func(_ *kgo.Record, err error) { done <- err })
		}
	}
	require.NoError(t, h.writer.Flush(ctx))
	for range len(h.ends) * h.batchRecords {
		require.NoError(t, <-done)
	}
	behind := rand.New(h.rng)
	for p := range h.ends {
		h.ends[p] += int64(h.batchRecords)
	}
	for g := range h.groups {
		offsets := map[int32]int64{}
		for p, end := range h.ends {
			offsets[int32(p)] = end - int64(behind.IntN(h.maxBehind+1))
		}
		h.Commit(fmt.Sprintf("near-head-%03d", g), h.topic, offsets)
	}
}

// scrapeTraffic is what one scrape made the brokers send its client.
type scrapeTraffic struct{ requests, bytes kafkacount.Counts }

func (s scrapeTraffic) String() string {
	return fmt.Sprintf("%d B, requests %v, bytes %v", s.bytes.Total(), s.requests, s.bytes)
}

// scrape scrapes s, whose client id is clientID, and returns what the
// scrape read.
func (h *nearHead) scrape(s *timeLagScraper, clientID string) scrapeTraffic {
	t := h.TB
	requests, bytes := h.wire.Requests(clientID), h.wire.Bytes(clientID)
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	require.Len(t, pointsOf(md, "kafka.consumer_group.lag"), len(h.ends)*h.groups)
	return scrapeTraffic{h.wire.Requests(clientID).Since(requests), h.wire.Bytes(clientID).Since(bytes)}
}

// TestTimeIndexTrafficNearTheHead: groups 0-12 records behind the end of
// partitions written in 16 KiB batches (16 incompressible records of
// 1 KiB), the shape where reading the records at the groups' offsets
// re-reads about what the producers write. The receiver with
// timestamp_source time_index and the same receiver with record dating
// off (max_record_reads_per_scrape: 0) scrape the same cluster after the
// same writes and commits; requests are counted by API key and response
// bytes on the brokers' side of the sockets, by each one's client id. The
// groups per partition are those of docs/sizing.md's workload (100): the
// time index costs bytes per partition, the committed offsets per group
// and partition, so a few dozen partitions keep the ratio of a thousand.
//
// A round writes one batch to every partition and moves every group, then
// scrapes either at once, the scrape's end-offset read the first to see
// the write, or after a sample saw it and the end stood still for
// lag.IdleBeforeRecordRead, as a partition written every 15 s looks to
// most scrapes every 15 s. The first scrapes read, within
// max_record_read_bytes_per_scrape, a record of each partition whose
// table is too young to tell it still, which tells data from a
// transaction marker (the time index cannot): every partition's records
// are then known to be written outside transactions. From then on, still
// or not, a scrape sends no Fetch and reads at most 1.25 times what the
// scrape without record dating reads.
//
// The time-index receiver's own telemetry reports the requests and bytes
// the brokers counted.
func TestTimeIndexTrafficNearTheHead(t *testing.T) {
	const (
		brokers, partitions, groups = 3, 36, 100
		measured                    = 8
		bound                       = 1.25
		indexID, offsetsID          = "time-index", "offsets-only"
	)
	h := newNearHead(t, brokers, partitions, groups)

	indexCfg := h.testConfig()
	indexCfg.ClientID = indexID
	// The mode the bound is for.
	indexCfg.TimestampSource = TimestampSourceTimeIndex
	require.NoError(t, indexCfg.Validate())
	core, logs := observer.New(zap.DebugLevel)
	index, tt := startTelemetryScraperLogging(t, indexCfg, zap.New(core))

	offsetsCfg := h.testConfig()
	offsetsCfg.ClientID = offsetsID
	offsetsCfg.MaxRecordReadsPerScrape = 0
	offsetsOnly := startScraper(t, offsetsCfg)

	sampleBoth := func() {
		require.NoError(t, index.sampler.Sample(context.Background(), false))
		require.NoError(t, offsetsOnly.sampler.Sample(context.Background(), false))
	}
	// Each scrape reads as many partitions as the byte budget counts, until
	// every one was read once.
	perScrape := int(indexCfg.MaxRecordReadBytesPerScrape / (64 << 10))
	warmup := (partitions+perScrape-1)/perScrape + 1
	var moving, still int
	for round := range warmup + measured {
		h.writeAndCommit()
		endStill := round%2 == 1
		if endStill {
			sampleBoth()
			time.Sleep(lag.IdleBeforeRecordRead)
		}
		logs.TakeAll()
		got, base := h.scrape(index, indexID), h.scrape(offsetsOnly, offsetsID)
		ratio := float64(got.bytes.Total()) / float64(base.bytes.Total())
		dated := datingReport(logs)
		t.Logf("round %d, end still %v: %s %s (%.2f times), dating %v; record dating off %s", round, endStill, indexCfg.TimestampSource, got, ratio, dated, base)
		// A sample between scrapes, as the sampler takes several.
		sampleBoth()
		if round < warmup {
			require.LessOrEqual(t, dated["partitions read"], int64(perScrape), "round %d: as many as the byte budget counts", round)
			require.LessOrEqual(t, got.bytes.Of(kmsg.Fetch), indexCfg.MaxRecordReadBytesPerScrape, "round %d: record reads within max_record_read_bytes_per_scrape", round)
			continue
		}
		require.Zero(t, dated["partitions the index did not answer"], "round %d: every partition's index answers", round)
		require.Zero(t, dated["partitions to read for transaction markers or producers' clocks"], "round %d: every partition's records are known to be written outside transactions", round)
		require.Zero(t, got.requests.Of(kmsg.Fetch), "round %d, end still %v: Fetch requests (%d B of Fetch; %d B in all, %.2f times the %d B of record dating off)",
			round, endStill, got.bytes.Of(kmsg.Fetch), got.bytes.Total(), ratio, base.bytes.Total())
		require.LessOrEqual(t, ratio, bound, "round %d, end still %v: %d B read, record dating off %d B", round, endStill, got.bytes.Total(), base.bytes.Total())
		if endStill {
			still++
		} else {
			moving++
		}
	}
	require.Equal(t, measured/2, moving)
	require.Equal(t, measured/2, still)

	// What the receiver tells of itself is what the brokers counted.
	requests, bytes := telemetryByAPI(t, tt, "otelcol_kafka_time_lag_requests"), telemetryByAPI(t, tt, "otelcol_kafka_time_lag_response_bytes")
	sentRequests, sentBytes := h.wire.Requests(indexID), h.wire.Bytes(indexID)
	for _, key := range []kmsg.Key{kmsg.ListOffsets, kmsg.Fetch, kmsg.OffsetFetch} {
		require.Equal(t, sentRequests.Of(key), requests[key.Name()], "%s requests", key.Name())
	}
	for key, n := range sentBytes {
		require.Equal(t, n, bytes[kmsg.NameForKey(int16(key))], "%s response bytes", kmsg.NameForKey(int16(key)))
	}
}

// telemetryByAPI sums a counter of the receiver's own telemetry by its api
// attribute.
func telemetryByAPI(t *testing.T, tt *componenttest.Telemetry, name string) map[string]int64 {
	m, err := tt.GetMetric(name)
	require.NoError(t, err)
	out := map[string]int64{}
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		api, _ := dp.Attributes.Value("api")
		out[api.AsString()] += dp.Value
	}
	return out
}

// datingReport is the scrape's debug line on what it dated from the time
// index (read.Reader's), its counts by name.
func datingReport(logs *observer.ObservedLogs) map[string]int64 {
	out := map[string]int64{}
	for _, entry := range logs.FilterMessage("records dated from the time index").All() {
		for _, f := range entry.Context {
			out[f.Key] = f.Integer
		}
	}
	return out
}
