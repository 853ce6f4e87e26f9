//go:build !unit

package saramatimes

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/saramatest"
)

// TestNearOffsetsAnsweredOnlyFromTheBatchesRead: a read answers the near
// offsets (kafka.PartitionOffsets.Near) that the batches it returns for
// the wanted ones hold, each with its record's producer, and asks for no
// other: one behind a batch too large for the first read stays unanswered
// and costs no Fetch.
func TestNearOffsetsAnsweredOnlyFromTheBatchesRead(t *testing.T) {
	k := kfaketest.New(t, 1, nil)
	k.CreateTopic("near", 1)
	start := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	stamps := make([]time.Time, 100)
	for i := range stamps {
		stamps[i] = start.Add(time.Duration(i) * time.Second)
	}
	k.Produce("near", 0, stamps...) // offsets 0-99
	value := make([]byte, 300<<10)
	_, _ = rand.NewChaCha8([32]byte{2}).Read(value) // incompressible
	large := &kgo.Record{Topic: "near", Partition: 0, Timestamp: start.Add(100 * time.Second), Value: value}
	require.NoError(t, k.Client.ProduceSync(context.Background(), large).FirstErr()) // offset 100
	k.Produce("near", 0, start.Add(101*time.Second), start.Add(102*time.Second))     // offsets 101-102

	cl, err := open(saramatest.Settings(k.Addrs))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cl.Close()) })
	tp := kafka.TopicPartition{Topic: "near", Partition: 0}
	_, err = cl.EndOffsets(context.Background(), []kafka.TopicPartition{tp}) // connect first
	require.NoError(t, err)

	want := kafka.PartitionOffsets{TopicPartition: tp, Offsets: []int64{10}, Near: []int64{5, 12, 50, 101}}
	before := k.Requests(int16(kmsg.Fetch))
	found, err := cl.RecordTimestamps(context.Background(), []kafka.PartitionOffsets{want})
	require.NoError(t, err)
	require.Equal(t, int64(1), k.Requests(int16(kmsg.Fetch))-before, "near offsets cost no Fetch of their own")
	require.True(t, want.Answered(found[tp]))
	answered := map[int64]kafka.RecordTimestamp{}
	for _, read := range found[tp] {
		answered[read.Wanted] = read.RecordTimestamp
	}
	require.Len(t, answered, 3, "10, and the near 12 and 50; not 5, below where the read started, nor 101, past the large batch: %v", answered)
	producer := answered[10].Producer
	for _, o := range []int64{10, 12, 50} {
		require.Equal(t, kafka.RecordTimestamp{Offset: o, Timestamp: stamps[o].UnixNano(), ByProducer: true, Producer: producer}, answered[o], "offset %d", o)
	}
}
