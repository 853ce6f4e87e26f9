package read

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/dating"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// refusingSource refuses record reads of one topic as a broker's ACL does,
// and counts the partitions it was asked to read.
type refusingSource struct {
	dating.Source
	refused string
	asked   map[string]int
}

func (s *refusingSource) RecordTimestamps(_ context.Context, wanted []kafka.PartitionOffsets) (kafka.RecordReads, error) {
	var errs []error
	for _, w := range wanted {
		s.asked[w.Topic]++
		if w.Topic == s.refused {
			errs = append(errs, &kafka.TopicError{Topic: w.Topic, Operation: kafka.OperationRead,
				Err: &kafka.AuthorizationError{Err: errors.New("TOPIC_AUTHORIZATION_FAILED")}})
		}
	}
	return kafka.RecordReads{}, kafka.Join(errs...)
}

// TestRefusedReadNotSentAgain: a topic whose read an ACL refused is not read
// again until readDeniedFor has passed, and each scrape that skips it
// reports the same refusal (one warning a scrape, as before); other topics
// and other errors are read as usual.
func TestRefusedReadNotSentAgain(t *testing.T) {
	src := &refusingSource{refused: "secret", asked: map[string]int{}}
	var denials readDenials
	wanted := []kafka.PartitionOffsets{
		{TopicPartition: kafka.TopicPartition{Topic: "secret", Partition: 0}, Offsets: []int64{1}},
		{TopicPartition: kafka.TopicPartition{Topic: "orders", Partition: 0}, Offsets: []int64{1}},
	}
	start := time.Unix(1_000_000, 0)
	for i, at := range []time.Time{start, start.Add(time.Minute), start.Add(readDeniedFor - time.Second), start.Add(readDeniedFor)} {
		_, err := deniedReadSource{Source: src, denials: &denials, now: at}.RecordTimestamps(context.Background(), wanted)
		d := kafka.NewDenials()
		require.NoError(t, d.Split(err), "read %d: the refusal alone, a denial", i)
		require.False(t, d.Empty(), "read %d: the refusal is reported", i)
	}
	require.Equal(t, 2, src.asked["secret"], "read at the start and once readDeniedFor had passed")
	require.Equal(t, 4, src.asked["orders"])
}
