//go:build !unit

package saramaoffsets

// BenchmarkNaiveEndOffsets, on the scale workloads of the receiver's
// BenchmarkScrape (kfaketest.ScrapeWorkloads, see
// kafkatimelagreceiver/scale_bench_test.go): an in-process kfake cluster of 3
// brokers, with every request counted by API key by kfake's Control
// observer.
//
// kfake runs in the benchmark's process, so ns/op, cpu-ms/op, B/op and
// allocs/op include the broker's side of every request. BENCHMARKS.md has the
// figures and the commands.

import (
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramaconfig"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/saramatest"
)

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
	for _, w := range kfaketest.ScrapeWorkloads {
		b.Run(w.Name, func(b *testing.B) {
			k := kfaketest.NewScale(b)
			k.LoadWorkload(b, w.Workload)
			settings := saramatest.Settings(k.Addrs)
			settings.RequestTimeout = time.Minute // the scale benchmarks' timeout
			var partitions []kafka.TopicPartition
			for t := range w.Topics {
				for p := range w.PartitionsPerTopic {
					partitions = append(partitions, kafka.TopicPartition{Topic: w.Topic(t), Partition: p})
				}
			}
			b.Run("naive", func(b *testing.B) {
				sc, err := saramaconfig.ClientConfig(settings)
				require.NoError(b, err)
				client, err := sarama.NewClient(settings.Brokers, sc)
				require.NoError(b, err)
				b.Cleanup(func() { _ = client.Close() })
				// Leaders known and connections open before the timer.
				_, err = client.GetOffset(partitions[0].Topic, partitions[0].Partition, sarama.OffsetNewest)
				require.NoError(b, err)
				b.ReportAllocs()
				b.ResetTimer()
				before, cpu := k.Requests(), kfaketest.CPUTime(b)
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
				kfaketest.ReportRequests(b, k.Requests().Since(before))
				kfaketest.ReportCPU(b, kfaketest.CPUTime(b)-cpu)
				b.ReportMetric(float64(w.Pairs()), "pairs")
			})
			b.Run("batched", func(b *testing.B) {
				cl, err := open(settings)
				require.NoError(b, err)
				b.Cleanup(func() { _ = cl.Close() })
				ctx := context.Background()
				_, err = cl.EndOffsets(ctx, partitions)
				require.NoError(b, err)
				b.ReportAllocs()
				b.ResetTimer()
				before, cpu := k.Requests(), kfaketest.CPUTime(b)
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
				kfaketest.ReportRequests(b, k.Requests().Since(before))
				kfaketest.ReportCPU(b, kfaketest.CPUTime(b)-cpu)
				b.ReportMetric(float64(w.Pairs()), "pairs")
			})
		})
	}
}
