package recordcache

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/clocks"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// Forget drops what the cache knows of a partition whose log was
// recreated or truncated: its records and its producers' clocks.
func TestForgetDropsThePartitionsClocks(t *testing.T) {
	r := New()
	tp := kafka.TopicPartition{Topic: "orders"}
	r.clocks[tp], _, _ = clocks.Partition{}.Learn(7, 0, 0, 1, 0)
	r.known[tp] = r.known[tp].put(5, kafka.RecordTimestamp{Offset: 5, Found: kafka.RecordTimed})
	r.Forget([]kafka.TopicPartition{tp})
	require.Empty(t, r.clocks)
	require.Empty(t, r.known)
}
