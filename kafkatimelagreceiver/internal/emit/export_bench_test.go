//go:build !unit

package emit_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/emit"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
)

// BenchmarkExportPath1M: what the per-pair gauges of one scrape of
// 1,000,000 pairs (100 groups x 10,000 partitions, lag and time lag each)
// cost on their way out, with nothing read from Kafka and nothing computed:
// the receiver's pdata points, then the least an OTLP/HTTP exporter does
// with each pushed chunk (the export request's protobuf, then zstd at the
// exporter's default level, one encoder reused as its pool does). No
// network, queue or retry. It is the floor under any collector that sends
// these points over OTLP. cpu-ms/op is the process's CPU, the garbage
// collector's included.
func BenchmarkExportPath1M(b *testing.B) {
	groups := millionPairs()
	encoder, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(0)))
	if err != nil {
		b.Fatal(err)
	}
	var body, compressed bytes.Buffer
	steps := []struct {
		name string
		push emit.PushFunc
	}{
		{"points", func(context.Context, pmetric.Metrics) error { return nil }},
		{"points+protobuf", func(_ context.Context, md pmetric.Metrics) error {
			_, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
			return err
		}},
		{"points+protobuf+zstd", func(_ context.Context, md pmetric.Metrics) error {
			raw, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
			if err != nil {
				return err
			}
			body.Reset()
			body.Write(raw)
			compressed.Reset()
			encoder.Reset(&compressed)
			if _, err := body.WriteTo(encoder); err != nil {
				return err
			}
			return encoder.Close()
		}},
	}
	for _, step := range steps {
		b.Run(step.name, func(b *testing.B) {
			cfg := newSettings()
			sent, bytesOut := 0, 0
			cfg.Push = func(ctx context.Context, md pmetric.Metrics) error {
				sent += md.DataPointCount()
				compressed.Reset()
				err := step.push(ctx, md)
				bytesOut += compressed.Len()
				return err
			}
			w := newWriter(b, cfg)
			at := time.Now().UnixNano()
			b.ReportAllocs()
			cpu := kfaketest.CPUTime(b)
			for b.Loop() {
				sent, bytesOut = 0, 0
				out := w.Begin(context.Background(), at, 1_000_000)
				for _, lags := range groups {
					out.Pairs(lags)
				}
				if _, err := out.Finish(); err != nil {
					b.Fatal(err)
				}
			}
			kfaketest.ReportCPU(b, kfaketest.CPUTime(b)-cpu)
			b.ReportMetric(float64(sent), "points/op")
			b.ReportMetric(float64(bytesOut)/(1<<20), "zstd-MiB/op")
		})
	}
}

// millionPairs is 100 groups, each committed on all 10,000 partitions of
// one topic, every pair with a lag and a time lag.
func millionPairs() [][]lag.PartitionLag {
	groups := make([][]lag.PartitionLag, 100)
	for g := range groups {
		lags := make([]lag.PartitionLag, 10_000)
		for p := range lags {
			lags[p] = lag.PartitionLag{
				Group: fmt.Sprintf("group-%03d", g), TopicPartition: kafka.TopicPartition{Topic: "topic-0", Partition: int32(p)},
				Committed: int64(1000 * p), HasEnd: true, End: int64(1000*p + (g+p)%5), Lag: int64((g + p) % 5),
				HasTimeLag: true, TimeLag: float64((g+p)%5) * 2.5,
			}
		}
		groups[g] = lags
	}
	return groups
}
