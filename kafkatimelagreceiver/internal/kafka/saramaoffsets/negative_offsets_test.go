package saramaoffsets

import (
	"context"
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/saramatest"
)

// listOffsetsResponseV5 is a ListOffsets v5 response body for partitions
// 0, 1, ... of topic "t", with the given offsets.
func listOffsetsResponseV5(offsets ...int64) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0) // throttle time
	b = binary.BigEndian.AppendUint32(b, 1)    // topics
	b = binary.BigEndian.AppendUint16(b, 1)
	b = append(b, 't')
	b = binary.BigEndian.AppendUint32(b, uint32(len(offsets)))
	for p, offset := range offsets {
		b = binary.BigEndian.AppendUint32(b, uint32(p))
		b = binary.BigEndian.AppendUint16(b, 0)                  // no error
		b = binary.BigEndian.AppendUint64(b, math.MaxUint64)     // timestamp -1
		b = binary.BigEndian.AppendUint64(b, uint64(offset))     //
		b = binary.BigEndian.AppendUint32(b, uint32(0xffffffff)) // leader epoch -1
	}
	return b
}

// TestNegativeListedOffsetIsNoOffset: a broker answering a negative end
// offset (MinInt64, -1) gives that partition no offset and an error naming
// it, and is not asked again as if its leader had moved; the other
// partitions of the answer are read.
func TestNegativeListedOffsetIsNoOffset(t *testing.T) {
	broker := saramatest.NewScriptedBroker(t)
	c, err := open(clientsettings.Settings{Brokers: []string{broker.Addr()}, ProtocolVersion: "2.2.0", RequestTimeout: 5 * time.Second, DialTimeout: 5 * time.Second})
	require.NoError(t, err)
	conf := *c.Config()
	conf.ApiVersionsRequest = false // the scripted broker answers only what it is given
	b := sarama.NewBroker(broker.Addr())
	require.NoError(t, b.Open(&conf))
	t.Cleanup(func() { _ = b.Close() })
	broker.Answer(listOffsetsResponseV5(math.MinInt64, 7, -1))

	tp := func(p int32) kafka.TopicPartition { return kafka.TopicPartition{Topic: "t", Partition: p} }
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offsets := map[kafka.TopicPartition]int64{}
	call, stop := c.Begin(ctx)
	defer stop()
	a := c.ListFrom(ctx, call, map[*sarama.Broker][]kafka.TopicPartition{b: {tp(0), tp(1), tp(2)}}, offsetsListing(sarama.OffsetNewest, sarama.ReadUncommitted, offsets))
	require.Equal(t, map[kafka.TopicPartition]int64{tp(1): 7}, offsets)
	require.Empty(t, a.Moved(), "not a leader move: not asked again")
	err = a.Err()
	require.ErrorContains(t, err, "t/0")
	require.ErrorContains(t, err, "negative offset -9223372036854775808")
	require.ErrorContains(t, err, "t/2")
}
