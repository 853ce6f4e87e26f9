package dating

import (
	"context"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// stampLog is a partition whose record at offset i was appended at
// appended(i) and stamped stamps[i] (milliseconds) by producer 1: it
// answers the time index as a broker does and record reads with each
// record's own stamp.
type stampLog struct {
	tp       kafka.TopicPartition
	stamps   []int64
	appended func(int64) int64
}

func (l stampLog) TimestampOffsets(_ context.Context, asks []kafka.PartitionTimes) (kafka.TimePoints, error) {
	return indexLog{stamps: l.stamps}.answer(asks), nil
}

func (l stampLog) RecordTimestamps(_ context.Context, wanted []kafka.PartitionOffsets) (kafka.RecordReads, error) {
	out := kafka.RecordReads{}
	for _, w := range wanted {
		for _, o := range append(append([]int64(nil), w.Offsets...), w.Near...) {
			if o < 0 || o >= int64(len(l.stamps)) {
				continue
			}
			rec := kafka.RecordTimestamp{Offset: o, Found: kafka.RecordUntimed}
			if ms := l.stamps[o]; ms > 0 && ms < 1<<42 {
				rec = kafka.RecordTimestamp{Offset: o, Timestamp: ms * int64(time.Millisecond), Found: kafka.RecordTimed, ByProducer: true, Producer: 1}
			}
			out[w.TopicPartition] = append(out[w.TopicPartition], kafka.RecordRead{Wanted: o, RecordTimestamp: rec})
		}
	}
	return out, nil
}

func (l stampLog) StartOffsets(_ context.Context, tps []kafka.TopicPartition) (kafka.OffsetRead, error) {
	read := kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{}}
	for _, tp := range tps {
		read.Offsets[tp] = 0
	}
	return read, nil
}

// wrapsTo is a timestamp in milliseconds, past the year 2262, whose
// conversion to nanoseconds in int64 arithmetic wraps to ns.
func wrapsTo(ns int64) int64 {
	m := new(big.Int).Add(big.NewInt(ns), new(big.Int).Lsh(big.NewInt(1), 64))
	m.Div(m, big.NewInt(int64(time.Millisecond)))
	return m.Int64() + 1
}

// TestStampPast2262DatesNothing: a record stamped past the year 2262 sits
// before a group's record, both older than the table (one record a second,
// sampled every second for the last 100 s, a group at offset 7, 193 s
// behind). The time index dates the group's record by the latest stamp up
// to it, the one past 2262, whose conversion to nanoseconds would wrap to
// a time 300 s before the scrape: judged in milliseconds, it gives no
// time, and the record is dated by a read of it, or withheld; never by the
// wrapped stamp.
func TestStampPast2262DatesNothing(t *testing.T) {
	tp := kafka.TopicPartition{Topic: "t"}
	t0 := time.Unix(1_700_000_000, 0).UnixNano()
	appended := func(o int64) int64 { return t0 + o*int64(time.Second) }
	at := t0 + int64(200500*time.Millisecond)
	stamps := make([]int64, 201)
	for o := range stamps {
		stamps[o] = appended(int64(o)) / int64(time.Millisecond)
	}
	stamps[5] = wrapsTo(at - int64(300*time.Second))
	src := stampLog{tp: tp, stamps: stamps, appended: appended}

	tables := timetable.NewStore(512, 0, nil)
	tables.Track(map[kafka.TopicPartition]struct{}{tp: {}}, time.Unix(0, t0), 0)
	for o := int64(100); o <= 200; o++ {
		read := time.Unix(0, appended(o)+int64(time.Millisecond))
		tables.Record(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{tp: o + 1}, Sent: read, Received: read})
	}
	snap := &lag.Snapshot{At: at, Committed: kafka.CommitsByGroup(map[string]map[kafka.TopicPartition]int64{"g": {tp: 7}}),
		End: map[kafka.TopicPartition]int64{tp: 201}, Start: map[kafka.TopicPartition]int64{}}
	idx := lag.NewIndex(snap)
	records := recordcache.New()
	est, _, err := Date(context.Background(), src, tables, records, snap, idx, Options{MaxReads: 10, TimeIndex: true, MaxReadBytes: 1 << 20, Now: func() time.Time { return time.Unix(0, at) }})
	require.NoError(t, err)
	dated := 0
	for _, pl := range est.GroupLags(nil, "g", at) {
		if !pl.HasTimeLag {
			continue
		}
		dated++
		truth := float64(at-appended(7)) / 1e9
		require.InDelta(t, truth, pl.TimeLag, 1, "time lag %.1f s for a record %.1f s old (%s)", pl.TimeLag, truth, pl.Method)
	}
	require.Equal(t, 1, dated, "the record is dated by its read")
}

// roundsCounted passes a Source's calls on and counts the rounds of the
// time index.
type roundsCounted struct {
	Source
	rounds int
}

func (r *roundsCounted) TimestampOffsets(ctx context.Context, asks []kafka.PartitionTimes) (kafka.TimePoints, error) {
	r.rounds++
	return r.Source.TimestampOffsets(ctx, asks)
}

// Where a partition's few groups sit apart (10 groups on the churn's 21
// records, a batch of 1 to 3 records a second), a record whose batch's
// first record was found below it and the next batch's above is dated by
// asking the millisecond after its batch's stamp, not by narrowing a
// third a round toward it: every pair is dated to its record's stamp
// (within a millisecond) in half the rounds a search may take, none left
// open to be dated by the middle of what the answers allow.
func TestSparseGroupsAreDatedToTheirBatchStamp(t *testing.T) {
	log, tables, snapshots, at := newChurn(40, 10)
	snap := snapshots[0]
	src := &roundsCounted{Source: log}
	est, rep, err := Date(context.Background(), src, tables, recordcache.New(), snap, lag.NewIndex(snap),
		Options{MaxReads: 40, TimeIndex: true, MaxReadBytes: 1 << 20, Now: func() time.Time { return at }})
	require.NoError(t, err)
	checkChurnDated(t, est, log, snap, at.UnixMilli())
	require.LessOrEqual(t, src.rounds, MaxIndexRounds/2)
	require.Zero(t, rep.Fetched, "nothing left to a read")
}
