package lag

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/clocks"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
)

// TestIndexPointAheadMovesNoRecord: the time index answers, besides the
// points of records its table bounds (stamped when appended), a record
// older than the table stamped an hour ahead (a producer's clock, or an
// application's timestamp). That stamp gives no time and measures no
// clock: the group's record, older than the table and dated from the
// index, is dated by its own stamp, not moved an hour back.
func TestIndexPointAheadMovesNoRecord(t *testing.T) {
	idx, tables, at, tp := recordsFixture(t, 0)
	const p = 0 // the fixture's partition
	t0 := time.Unix(1_700_000_000, 0).UnixNano()
	index := func(offset, stamp int64) kafka.RecordTimestamp {
		return kafka.RecordTimestamp{Offset: offset, Timestamp: stamp, ByProducer: true, Producer: clocks.TimeIndexClock}
	}
	// Records the table bounds, stamped at their expected appends (100 to
	// 200 over 100 s from t0), then, in the next round, the one ahead.
	points := map[recordAt]kafka.RecordTimestamp{}
	for _, o := range []int64{110, 130, 150, 170, 190} {
		points[recordAt{TopicPartition: tp, Offset: o}] = index(o, t0+(o-100)*int64(time.Second))
	}
	existed := recordcache.Existed{End: map[kafka.TopicPartition]int64{tp: 250}, EndAt: at, Received: at}
	proof := Proof(idx, tables, at)
	records := recordcache.New()
	records.PutAll(readsOf(points), existed, proof)
	records.PutAll(readsOf(map[recordAt]kafka.RecordTimestamp{{TopicPartition: tp, Offset: 60}: index(60, at+int64(time.Hour))}), existed, proof)
	stamp := t0 - int64(time.Minute)
	records.PutAll(readsOf(map[recordAt]kafka.RecordTimestamp{{TopicPartition: tp, Offset: 50}: index(50, stamp)}), recordcache.Existed{Received: at}, recordcache.Proof{})
	got, method, ok := AppendTimes(idx, tables, records, at)(p, 50)
	require.True(t, ok, "dated: the index's clock is shown by the records the table bounds (%s)", method)
	require.InDelta(t, stamp, got, float64(time.Second), "dated %v off its stamp", time.Duration(got-stamp))
}
