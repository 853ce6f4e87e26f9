package saramatimes

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/saramatest"
)

// A broker that cuts its connection half way through a Fetch response (as
// Apache Kafka does when the log cleaner swaps the segment it was sending)
// costs the record read one more request, on a new connection, not its
// answer; one that cuts the retry too fails the read with an error naming
// the broker and the cut, and the read after it reads on a new connection.
func TestRecordReadOnACutConnection(t *testing.T) {
	r := newScriptedRead(t)
	now := time.Now().Truncate(time.Millisecond)
	body := fetchResponseV11(dataBatch(0, 1, now.UnixMilli()).encode(), 1, 1, -1, 0)
	at := saramatest.RecordAt{TopicPartition: kafka.TopicPartition{Topic: "t"}, Offset: 0}
	want := kafka.RecordTimestamp{Offset: 0, Timestamp: now.UnixNano()}

	r.broker.CutNext(1)
	answers, err := r.read(t, 0, body)
	require.NoError(t, err)
	require.Equal(t, want, answers[at], "answered on a new connection")

	r.broker.CutNext(2)
	answers, err = r.read(t, 0, body)
	require.ErrorContains(t, err, "fetch records from broker")
	require.ErrorContains(t, err, "EOF")
	require.Empty(t, answers)

	answers, err = r.read(t, 0, body)
	require.NoError(t, err)
	require.Equal(t, want, answers[at], "the cut connection was closed, not kept failing")
}
