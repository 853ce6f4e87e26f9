//go:build !unit

package saramacluster

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kafkacount"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/saramatest"
)

// TestResponseBytesAreWhatTheBrokersSent: the bytes the observer is told of,
// by API, are exactly what the brokers wrote to the receiver's connections
// (counted on the brokers' side of the sockets), and a record read of
// 16 KiB of incompressible records per partition reads those 16 KiB and
// little more.
func TestResponseBytesAreWhatTheBrokersSent(t *testing.T) {
	const (
		brokers, partitions = 3, 6
		records, size       = 16, 1 << 10
	)
	wire := kafkacount.NewWire()
	k := kfaketest.New(t, brokers, nil, kfake.ListenFn(wire.Listen))
	k.CreateTopic("sized", partitions)
	old := time.Now().Add(-time.Hour)
	var batch []*kgo.Record
	for p := range int32(partitions) {
		for range records {
			value := make([]byte, size)
			_, _ = rand.Read(value)
			batch = append(batch, &kgo.Record{Topic: "sized", Partition: p, Timestamp: old, Value: value})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, k.Client.ProduceSync(ctx, batch...).FirstErr())

	observed := newRequestLog()
	s := saramatest.Settings(k.Addrs)
	s.Observer = observed
	cl, err := New(s)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cl.Close()) })
	var tps []kafka.TopicPartition
	var wanted []kafka.PartitionOffsets
	for p := range int32(partitions) {
		tp := kafka.TopicPartition{Topic: "sized", Partition: p}
		tps = append(tps, tp)
		wanted = append(wanted, kafka.PartitionOffsets{TopicPartition: tp, Offsets: []int64{0}})
	}
	_, err = cl.EndOffsets(ctx, tps)
	require.NoError(t, err)
	readBefore := observed.responseBytes()
	_, err = cl.RecordTimestamps(ctx, wanted)
	require.NoError(t, err)

	told := observed.responseBytes()
	sent := wire.Bytes(s.ClientID)
	var sentByName = map[string]int{}
	for key, n := range sent {
		if n > 0 {
			sentByName[kmsg.NameForKey(int16(key))] = int(n)
		}
	}
	require.Equal(t, sentByName, told, "what the receiver read is what the brokers sent it")
	require.Positive(t, told["ApiVersions"])
	require.Positive(t, told["Metadata"])
	require.Positive(t, told["ListOffsets"])
	require.Less(t, told["ListOffsets"], 2<<10, "three ListOffsets of six partitions")

	fetched := told["Fetch"] - readBefore["Fetch"]
	produced := partitions * records * size
	require.GreaterOrEqual(t, fetched, produced, "every batch from offset 0 came back")
	require.Less(t, fetched, produced+partitions*records*64, "plus headers of a few dozen bytes a record at the most")
	t.Logf("record read of %d KiB produced: Fetch %d B, ListOffsets %d B, Metadata %d B, ApiVersions %d B",
		produced>>10, fetched, told["ListOffsets"], told["Metadata"], told["ApiVersions"])
}
