package batchguard

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// A producer may stamp a record 1 s after the epoch (Kafka bounds how old a
// CreateTime may be only when message.timestamp.before.max.ms is set): no
// Kafka cluster existed then, and the decades of time lag it would give
// page someone for nothing. Such a record gives no time, as one from 1970
// already did; later timestamps are kept as they are.
func TestRecordStampedBeforeKafkaExistedGivesNoTime(t *testing.T) {
	now := time.Now()
	require.Equal(t, kafka.RecordTimestamp{Offset: 7, Found: kafka.RecordUntimed}, Timed(7, time.Unix(1, 0), now))
	require.Equal(t, kafka.RecordTimestamp{Offset: 7, Found: kafka.RecordUntimed}, Timed(7, time.Date(2009, 6, 1, 0, 0, 0, 0, time.UTC), now))
	old := time.Date(2015, 6, 1, 0, 0, 0, 0, time.UTC)
	require.Equal(t, kafka.RecordTimestamp{Offset: 7, Timestamp: old.UnixNano()}, Timed(7, old, now), "an old record of a real cluster keeps its time")
}
