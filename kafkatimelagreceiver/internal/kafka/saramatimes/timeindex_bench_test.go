//go:build !unit

package saramatimes

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/saramatest"
)

// BenchmarkTimestampOffsets is one search round of a scrape where every
// partition's groups moved, as dating's first round asks it: each of 2,000
// partitions on three brokers asks eight times spread over its 40 records,
// five records apart, so that no answer implies the next time's and each
// time is a request of its own to every broker (24 an op).
func BenchmarkTimestampOffsets(b *testing.B) {
	const partitions, records, times = 2000, 40, 8
	k := kfaketest.New(b, 3, nil)
	k.CreateTopic("busy", partitions)
	start := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	stamps := make([]time.Time, records)
	for i := range stamps {
		stamps[i] = start.Add(time.Duration(i) * 1500 * time.Millisecond)
	}
	asks := make([]kafka.PartitionTimes, 0, partitions)
	for p := range int32(partitions) {
		k.Produce("busy", p, stamps...)
		ask := kafka.PartitionTimes{TopicPartition: kafka.TopicPartition{Topic: "busy", Partition: p}}
		for i := range times {
			ask.Millis = append(ask.Millis, start.Add(time.Duration(i*records/times)*1500*time.Millisecond+time.Duration(p%7)*100*time.Millisecond).UnixMilli())
		}
		asks = append(asks, ask)
	}
	cl, err := open(saramatest.Settings(k.Addrs))
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, cl.Close()) })
	ctx := context.Background()
	_, err = cl.EndOffsets(ctx, []kafka.TopicPartition{{Topic: "busy", Partition: 0}})
	require.NoError(b, err)
	before := k.Requests(int16(kmsg.ListOffsets))
	for b.Loop() {
		found, err := cl.TimestampOffsets(ctx, asks)
		require.NoError(b, err)
		require.Len(b, found, partitions)
	}
	b.ReportMetric(float64(k.Requests(int16(kmsg.ListOffsets))-before)/float64(b.N), "requests/op")
}
