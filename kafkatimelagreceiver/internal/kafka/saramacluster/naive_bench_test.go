package saramacluster

// BenchmarkNaiveEndOffsets, on the scale workloads of the receiver's
// BenchmarkScrape (see kafkatimelagreceiver/scale_bench_test.go): an
// in-process kfake cluster of 3 brokers, with every request counted by API
// key by kfake's Control observer.
//
// kfake runs in the benchmark's process, so ns/op, cpu-ms/op, B/op and
// allocs/op include the broker's side of every request. BENCHMARKS.md has the
// figures and the commands.

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/kafkacount"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/scaleload"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// scaleBrokers is the broker count of every scale cluster.
const scaleBrokers = 3

// scaleWorkload is a scaleload.Workload with the name its benchmark runs under.
type scaleWorkload struct {
	name string
	scaleload.Workload
}

// scrapeWorkloads are the scrape sizes of BenchmarkScrape; 100k is 50 groups
// on one topic of 2,000 partitions.
var scrapeWorkloads = []scaleWorkload{
	{"1k", scaleload.Workload{Groups: 10, Topics: 1, PartitionsPerTopic: 100}},
	{"10k", scaleload.Workload{Groups: 20, Topics: 1, PartitionsPerTopic: 500}},
	{"100k", scaleload.Workload{Groups: 50, Topics: 1, PartitionsPerTopic: 2000}},
}

// scaleKafka is the scale cluster of one test or benchmark, closed with it.
type scaleKafka struct{ *scaleload.Cluster }

func newScaleKafka(tb testing.TB, opts ...kfake.Opt) *scaleKafka {
	tb.Helper()
	c, err := scaleload.Start(scaleBrokers, opts...)
	require.NoError(tb, err)
	tb.Cleanup(c.Close)
	return &scaleKafka{c}
}

// requestCounts are requests served, by API key.
type requestCounts = kafkacount.Counts

func (k *scaleKafka) snapshot() requestCounts { return k.Requests() }

// reportRequests adds one metric per API key seen, as requests per operation.
func reportRequests(b *testing.B, a requestCounts) {
	for key, n := range a {
		if n != 0 {
			b.ReportMetric(float64(n)/float64(b.N), kmsg.NameForKey(int16(key))+"/op")
		}
	}
	b.ReportMetric(float64(a.Total())/float64(b.N), "requests/op")
}

// load loads the workload: scaleload.RecordsPerPartition records an hour
// to ten minutes old on every partition, every group committed on every
// partition.
func (k *scaleKafka) load(tb testing.TB, w scaleWorkload) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	require.NoError(tb, k.Load(ctx, w.Workload))
}

// settings are the settings the receiver's default configuration gives,
// pointed at the cluster, with the one-minute timeout of the scale
// benchmarks.
func (k *scaleKafka) settings() Settings {
	return Settings{
		Brokers:         k.Addrs,
		ClientID:        "otel-kafkatimelag",
		ProtocolVersion: "3.0.0",
		RequestTimeout:  time.Minute,
	}
}

// cpuTime is the CPU time (user + system) the process has used so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	require.NoError(tb, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports CPU time per operation; kfake's share is in it.
func reportCPU(b *testing.B, cpu time.Duration) {
	b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
}

// BenchmarkNaiveEndOffsets compares the end-offset reads of one scrape:
//
//   - naive: one ListOffsets per partition and again per group, with sarama's
//     client.GetOffset, as kafka_exporter does;
//   - batched: the receiver's EndOffsets, one ListOffsets per leader broker
//     for the distinct partitions.
//
// Both run on the same cluster and workload as BenchmarkScrape; the ratio of
// their ns/op (and of naive to BenchmarkScrape/<size>/steady) is in
// BENCHMARKS.md.
func BenchmarkNaiveEndOffsets(b *testing.B) {
	for _, w := range scrapeWorkloads {
		b.Run(w.name, func(b *testing.B) {
			k := newScaleKafka(b)
			k.load(b, w)
			settings := k.settings()
			var partitions []kafka.TopicPartition
			for t := range w.Topics {
				for p := range w.PartitionsPerTopic {
					partitions = append(partitions, kafka.TopicPartition{Topic: w.Topic(t), Partition: p})
				}
			}
			b.Run("naive", func(b *testing.B) {
				sc, err := newConfig(settings)
				require.NoError(b, err)
				client, err := sarama.NewClient(settings.Brokers, sc)
				require.NoError(b, err)
				b.Cleanup(func() { _ = client.Close() })
				// Leaders known and connections open before the timer.
				_, err = client.GetOffset(partitions[0].Topic, partitions[0].Partition, sarama.OffsetNewest)
				require.NoError(b, err)
				b.ReportAllocs()
				b.ResetTimer()
				before, cpu := k.snapshot(), cpuTime(b)
				for range b.N {
					for range w.Groups {
						for _, tp := range partitions {
							if _, err := client.GetOffset(tp.Topic, tp.Partition, sarama.OffsetNewest); err != nil {
								b.Fatal(err)
							}
						}
					}
				}
				b.StopTimer()
				reportRequests(b, k.snapshot().Since(before))
				reportCPU(b, cpuTime(b)-cpu)
				b.ReportMetric(float64(w.Pairs()), "pairs")
			})
			b.Run("batched", func(b *testing.B) {
				cl, err := New(settings)
				require.NoError(b, err)
				b.Cleanup(func() { _ = cl.Close() })
				ctx := context.Background()
				_, err = cl.EndOffsets(ctx, partitions)
				require.NoError(b, err)
				b.ReportAllocs()
				b.ResetTimer()
				before, cpu := k.snapshot(), cpuTime(b)
				for range b.N {
					read, err := cl.EndOffsets(ctx, partitions)
					if err != nil {
						b.Fatal(err)
					}
					if len(read.Offsets) != len(partitions) {
						b.Fatalf("read %d end offsets, want %d", len(read.Offsets), len(partitions))
					}
				}
				b.StopTimer()
				reportRequests(b, k.snapshot().Since(before))
				reportCPU(b, cpuTime(b)-cpu)
				b.ReportMetric(float64(w.Pairs()), "pairs")
			})
		})
	}
}
