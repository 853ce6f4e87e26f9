package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

func TestPartitionOffsetsAnsweredCountsOnlyTheWanted(t *testing.T) {
	w := kafka.PartitionOffsets{TopicPartition: kafka.TopicPartition{Topic: "t"}, Offsets: []int64{10, 20}, Near: []int64{15, 25}}
	read := func(offsets ...int64) []kafka.RecordRead {
		var reads []kafka.RecordRead
		for _, o := range offsets {
			reads = append(reads, kafka.RecordRead{Wanted: o})
		}
		return reads
	}
	require.True(t, w.Answered(read(10, 15, 20)))
	require.False(t, w.Answered(read(10, 15, 25)), "near answers do not stand in for a wanted one")
	require.False(t, w.Answered(nil))
}
