//go:build !unit

package saramatimes

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/saramatest"
)

// A compressed batch of a few kilobytes that inflates to hundreds of
// megabytes, on a partition whose group is committed at it: the record read
// gives no timestamp for that partition, answers the other partition of the
// same request, and allocates nowhere near the inflated size.
func TestCompressionBombIsNoTimestampForItsPartitionOnly(t *testing.T) {
	for _, bomb := range []struct {
		name  string
		codec int16
		size  int64
	}{
		{"zstd", codecZstd, 1 << 30},
		{"gzip", codecGzip, 512 << 20},
	} {
		t.Run(bomb.name, func(t *testing.T) {
			k := kfaketest.New(t, 1, nil)
			k.CreateTopic("bombed", 2)
			stamp := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
			b := bombBatch(t, bomb.codec, bomb.size, stamp.UnixMilli())
			t.Logf("%s bomb: %d bytes inflating to %d", bomb.name, len(b.records), bomb.size)
			k.ProduceRaw("bombed", 0, b.encode())
			k.Produce("bombed", 1, stamp)

			c, err := open(saramatest.Settings(k.Addrs))
			require.NoError(t, err)
			defer c.Close()
			at := func(p int32) saramatest.RecordAt {
				return saramatest.RecordAt{TopicPartition: kafka.TopicPartition{Topic: "bombed", Partition: p}}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err = c.EndOffsets(ctx, []kafka.TopicPartition{at(0).TopicPartition}) // connect and learn leaders first
			require.NoError(t, err)

			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			found, err := saramatest.RecordTimestamps(ctx, c, []saramatest.RecordAt{at(0), at(1)})
			// What stays in use is what the read holds on to, not garbage a
			// collection has not reached yet.
			runtime.GC()
			runtime.ReadMemStats(&after)

			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("record read allocated %d MiB; heap in use %+d MiB", allocated>>20, (int64(after.HeapInuse)-int64(before.HeapInuse))>>20)
			// Each decoding attempt stops at the 16 MiB bound, but the read may
			// try the batch more than once (alone, after the request that held
			// it failed) and -race inflates allocations, so the bound on what
			// is allocated in all is loose; what stays in use is the tight one.
			require.Less(t, allocated, uint64(bomb.size)*3/4, "bounded below the %d MiB the batch inflates to", bomb.size>>20)
			require.Less(t, int64(after.HeapInuse)-int64(before.HeapInuse), int64(128<<20))
			require.Equal(t, kafka.RecordTimestamp{Offset: 0, Found: kafka.RecordUntimed}, found[at(0)], "the bomb's partition has an answer: no timestamp")
			require.Equal(t, kafka.RecordTimestamp{Offset: 0, Timestamp: stamp.UnixNano(), ByProducer: true, Producer: found[at(1)].Producer}, found[at(1)], "the other partition is answered")
			require.Error(t, err, "the bomb is reported")
			require.ErrorContains(t, err, "bombed/0")
		})
	}
}
