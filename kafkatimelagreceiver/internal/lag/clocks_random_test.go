package lag

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// randomClockLog is one partition's records: when each was appended, and
// what its producer stamped it.
type randomClockLog struct {
	appended, stamp, producer []int64
}

// endAt is the end offset at t.
func (l *randomClockLog) endAt(t int64) int64 {
	n, _ := slices.BinarySearch(l.appended, t+1)
	return int64(n)
}

// randomClocks writes 10 minutes of batches from one to three producers,
// each with a clock off by up to 30 s either way (or exact), stamping up to
// 600 ms before the append (linger) with up to 300 ms of jitter either way,
// some clocks stepped by up to 10 s halfway.
func randomClocks(rng *rand.Rand, t0 int64) (*randomClockLog, map[int64]int64) {
	const second = int64(time.Second)
	producers := 1 + rng.IntN(3)
	skew := make([]int64, producers)
	jitter := make([]int64, producers)
	linger := make([]int64, producers)
	step := make([]int64, producers)
	for p := range producers {
		if rng.IntN(3) > 0 {
			skew[p] = rng.Int64N(60*second) - 30*second
		}
		if rng.IntN(2) == 0 {
			jitter[p] = rng.Int64N(300*int64(time.Millisecond)) + 1
		}
		linger[p] = rng.Int64N(600*int64(time.Millisecond)) + 1
		if rng.IntN(3) == 0 {
			step[p] = rng.Int64N(20*second) - 10*second
		}
	}
	log := &randomClockLog{}
	for at := t0; at < t0+10*60*second; at += int64(50*time.Millisecond) + rng.Int64N(2*second) {
		p := rng.IntN(producers)
		stamp := at + skew[p] - rng.Int64N(linger[p])
		if jitter[p] > 0 {
			stamp += rng.Int64N(2*jitter[p]) - jitter[p]
		}
		if at > t0+5*60*second {
			stamp += step[p]
		}
		stamp = stamp / 1e6 * 1e6 // Kafka's milliseconds
		for range 1 + rng.IntN(5) {
			log.appended = append(log.appended, at)
			log.stamp = append(log.stamp, stamp)
			log.producer = append(log.producer, int64(100+p))
		}
	}
	// How far each producer's records can be dated early: by the spread
	// of its offsets (append minus stamp), which no measurement of its
	// clock can tell apart, plus the largest offset behind, which its
	// stamps carry before any read measures it.
	early := map[int64]int64{}
	lo, hi := map[int64]int64{}, map[int64]int64{}
	for i, p := range log.producer {
		o := log.appended[i] - log.stamp[i]
		if _, ok := lo[p]; !ok {
			lo[p], hi[p] = o, o
		}
		lo[p], hi[p] = min(lo[p], o), max(hi[p], o)
		early[p] = hi[p] - lo[p] + max(0, hi[p])
	}
	return log, early
}

// TestRandomClocksStayWithinWhatIsProven drives the scrape's dating
// (OutOfTable, the reads answered from the log, PutAll, Estimate) over
// random producer clocks: skewed either way by up to 30 s, jittering,
// lingering, stepped, with watching starting minutes into the log (a cold
// start with data older than the table), at several sampling intervals.
// No time lag may be below 0, nor older than the record's true age plus
// the spread of its producer's clock offsets (what no clock measurement
// can tell apart), its largest offset behind (what a stamp carries before
// a read measures it) and the sampling interval (what the tables prove
// of an append time).
func TestRandomClocksStayWithinWhatIsProven(t *testing.T) {
	const second = int64(time.Second)
	tp := kafka.TopicPartition{Topic: "random", Partition: 0}
	t0 := time.Unix(1_700_000_000, 0).UnixNano()
	scenarios := 150
	if testing.Short() {
		scenarios = 30
	}
	checked := 0
	for seed := range uint64(scenarios) {
		rng := rand.New(rand.NewPCG(seed, 41))
		log, early := randomClocks(rng, t0)
		sampling := []int64{second, 5 * second, 10 * second}[rng.IntN(3)]
		watchFrom := t0 + 2*60*second + rng.Int64N(6*60*second)
		tables := timetable.NewStore(512, 3*time.Duration(sampling), nil)
		records := recordcache.New()
		tracked := map[kafka.TopicPartition]struct{}{tp: {}}
		tables.Track(tracked, time.Unix(0, watchFrom), 0)
		record := func(at int64) int64 {
			end := log.endAt(at)
			read := time.Unix(0, at)
			tables.Record(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{tp: end}, Sent: read, Received: read})
			return end
		}
		end := t0 + 10*60*second
		nextSample := watchFrom
		for at := watchFrom + 3*second; at < end; at += 15 * second {
			for ; nextSample < at; nextSample += sampling {
				record(nextSample)
			}
			tables.Track(tracked, time.Unix(0, at), 0)
			endOffset := record(at)
			committed := map[string]map[kafka.TopicPartition]int64{}
			for g := range 6 {
				committed[fmt.Sprint("g", g)] = map[kafka.TopicPartition]int64{tp: rng.Int64N(endOffset + 1)}
			}
			snap := &Snapshot{At: at, Committed: kafka.CommitsByGroup(committed), End: map[kafka.TopicPartition]int64{tp: endOffset}, Start: map[kafka.TopicPartition]int64{}}
			idx := NewIndex(snap).ResolveTables(tables)
			missing, used := OutOfTable(idx, at, tables, records)
			var reads []kafka.RecordRead
			for _, w := range missing {
				for _, o := range append(slices.Clone(w.Offsets), w.Near...) {
					reads = append(reads, kafka.RecordRead{Wanted: o, RecordTimestamp: kafka.RecordTimestamp{
						Offset: o, Timestamp: log.stamp[o], Found: kafka.RecordTimed, ByProducer: true, Producer: log.producer[o]}})
				}
			}
			records.PutAll(kafka.RecordReads{tp: reads}, recordcache.Existed{End: snap.End, EndAt: at, Received: at}, Proof(idx, tables, at))
			records.Retain(used)
			est := Estimate(idx.Index, AppendTimes(idx, tables, records, at))
			for g := range committed {
				for _, pl := range est.GroupLags(nil, g, at) {
					if !pl.HasTimeLag || pl.CaughtUp {
						continue
					}
					checked++
					c := pl.Committed
					age := float64(at-log.appended[c]) / 1e9
					// A clock is measured within the tables' brackets, which
					// a sampling interval (two, where the table merged
					// points) bounds: its middle can be half that off.
					bound := age + float64(early[log.producer[c]]+sampling)/1e9 + 0.002
					require.GreaterOrEqual(t, pl.TimeLag, 0.0, "seed %d, scrape at %+.0f s", seed, float64(at-t0)/1e9)
					require.LessOrEqual(t, pl.TimeLag, bound, "seed %d, scrape at %+.0f s, offset %d: time lag %.3f s, true age %.3f s, bound %.3f s (%s)",
						seed, float64(at-t0)/1e9, c, pl.TimeLag, age, bound, pl.Method)
				}
			}
		}
	}
	require.Greater(t, checked, 10_000, "time lags checked")
	t.Logf("%d time lags checked over %d scenarios", checked, scenarios)
}
