package lag

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// stampKind is how a producer stamps its records.
type stampKind int

const (
	sendTime   stampKind = iota // when it sends, on a clock off by up to a day either way
	eventTime                   // when its event happened: up to hours before, in no order
	past2262                    // beyond what nanoseconds hold
	microsAsMs                  // microseconds where Kafka wants milliseconds
	stampKinds
)

// stampLog is one partition's records: when each was appended, what its
// producer stamped it (unix milliseconds, as Kafka keeps them), which
// producer ID wrote it, and whether compaction removed it.
type stampLog struct {
	appended, stampMs, producer []int64
	removed                     []bool
}

func (l *stampLog) endAt(t int64) int64 {
	n, _ := slices.BinarySearch(l.appended, t+1)
	return int64(n)
}

// next is the first record left at or after offset, below end; not ok when
// none is.
func (l *stampLog) next(offset, end int64) (int64, bool) {
	for o := offset; o < end; o++ {
		if !l.removed[o] {
			return o, true
		}
	}
	return 0, false
}

// randomStamps writes 10 minutes of records from one to three producers,
// each of a random kind; on a LogAppendTime topic every stamp is the
// append; after a restart (restartAt, 0 for none) the producer IDs are
// another process's, of another kind.
func randomStamps(rng *rand.Rand, t0, restartAt int64, logAppendTime, compacted bool) *stampLog {
	const second = int64(time.Second)
	producers := 1 + rng.IntN(3)
	kinds := make([]stampKind, 2*producers) // before and after the restart
	skew := make([]int64, 2*producers)
	for i := range kinds {
		kinds[i] = stampKind(rng.IntN(int(stampKinds)))
		skew[i] = rng.Int64N(2*24*3600*second) - 24*3600*second
		if rng.IntN(2) == 0 {
			skew[i] = rng.Int64N(60*second) - 30*second
		}
	}
	l := &stampLog{}
	for at := t0; at < t0+10*60*second; at += int64(50*time.Millisecond) + rng.Int64N(2*second) {
		p := rng.IntN(producers)
		k := p
		if restartAt > 0 && at >= restartAt {
			k += producers
		}
		for range 1 + rng.IntN(5) {
			var stamp int64
			switch kinds[k] {
			case sendTime:
				stamp = (at + skew[k] - rng.Int64N(int64(600*time.Millisecond))) / 1e6
			case eventTime:
				stamp = (at - rng.Int64N(3*3600*second)) / 1e6
			case past2262:
				stamp = 87_697_617_913_735_311
			case microsAsMs:
				stamp = at / 1e3
			}
			if logAppendTime {
				stamp = at / 1e6
			}
			l.appended = append(l.appended, at)
			l.stampMs = append(l.stampMs, stamp)
			l.producer = append(l.producer, int64(100+p))
			l.removed = append(l.removed, false)
		}
	}
	if compacted {
		// Runs of records the log cleaner removed (their keys written
		// again), never the last.
		for range 1 + rng.IntN(8) {
			from := rng.IntN(len(l.removed) - 1)
			for o := from; o < min(from+1+rng.IntN(200), len(l.removed)-1); o++ {
				l.removed[o] = true
			}
		}
	}
	return l
}

// read answers a wanted offset as a record read does: the first record
// left at or after it, its stamp as batchguard.Timed judges it.
func (l *stampLog) read(wanted, end, at int64) (kafka.RecordRead, bool) {
	n, ok := l.next(wanted, end)
	if !ok {
		return kafka.RecordRead{}, false
	}
	rec := kafka.RecordTimestamp{Offset: n, Found: kafka.RecordUntimed}
	if kafka.MillisGiveTime(l.stampMs[n], time.Unix(0, at)) {
		rec = kafka.RecordTimestamp{Offset: n, Timestamp: l.stampMs[n] * 1e6, Found: kafka.RecordTimed, ByProducer: true, Producer: l.producer[n]}
	}
	return kafka.RecordRead{Wanted: wanted, RecordTimestamp: rec}, true
}

// TestRandomStampsAreRightOrWithheld drives the scrape's dating over
// producers of every kind the receiver meets: stamping when they send on
// clocks up to a day off, stamping event times hours before the append in
// no order, stamping past 2262 or in microseconds; on LogAppendTime and
// compacted topics; across restarts with the clocks saved and their
// producer IDs reused by processes of another kind. Every time lag that
// leaves it lies within max(1 s, 10 %) of the record's true age, plus the
// sampling interval the tables date within; any other is withheld, and
// counted (unproven or withheld).
func TestRandomStampsAreRightOrWithheld(t *testing.T) {
	const second = int64(time.Second)
	tp := kafka.TopicPartition{Topic: "random", Partition: 0}
	t0 := time.Unix(1_700_000_000, 0).UnixNano()
	scenarios := 120
	if testing.Short() {
		scenarios = 30
	}
	var dated, unproven, withheld int
	for seed := range uint64(scenarios) {
		rng := rand.New(rand.NewPCG(seed, 50))
		logAppendTime, compacted := rng.IntN(6) == 0, rng.IntN(6) == 0
		var restartAt int64
		if rng.IntN(3) == 0 {
			restartAt = t0 + 5*60*second + rng.Int64N(60*second)
		}
		log := randomStamps(rng, t0, restartAt, logAppendTime, compacted)
		sampling := []int64{second, 5 * second}[rng.IntN(2)]
		watchFrom := t0 + 2*60*second + rng.Int64N(2*60*second)
		tables := timetable.NewStore(512, 3*time.Duration(sampling), nil)
		topics := map[string]kafka.TopicRetention{tp.Topic: {LogAppendTime: logAppendTime, Compact: compacted}}
		records := recordcache.New()
		records.SetTopics(topics)
		tracked := map[kafka.TopicPartition]struct{}{tp: {}}
		tables.Track(tracked, time.Unix(0, watchFrom), 0)
		sample := func(at int64) int64 {
			end := log.endAt(at)
			read := time.Unix(0, at)
			tables.Record(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{tp: end}, Sent: read, Received: read})
			return end
		}
		restarted := restartAt == 0
		nextSample := watchFrom
		for at := watchFrom + 3*second; at < t0+10*60*second; at += 15 * second {
			if !restarted && at >= restartAt {
				// The collector restarts: its clocks saved and restored,
				// the records it read forgotten.
				saved := records.EncodeClocks()
				records = recordcache.New()
				records.SetTopics(topics)
				_, err := records.RestoreClocks(saved, time.Unix(0, at))
				require.NoError(t, err)
				restarted = true
			}
			for ; nextSample < at; nextSample += sampling {
				sample(nextSample)
			}
			tables.Track(tracked, time.Unix(0, at), 0)
			end := sample(at)
			committed := map[string]map[kafka.TopicPartition]int64{}
			for g := range 6 {
				committed[fmt.Sprint("g", g)] = map[kafka.TopicPartition]int64{tp: rng.Int64N(end + 1)}
			}
			snap := &Snapshot{At: at, Committed: kafka.CommitsByGroup(committed), End: map[kafka.TopicPartition]int64{tp: end}, Start: map[kafka.TopicPartition]int64{}}
			idx := NewIndex(snap).ResolveTables(tables)
			missing, used := OutOfTable(idx, at, tables, records)
			var reads []kafka.RecordRead
			for _, w := range missing {
				for _, o := range append(slices.Clone(w.Offsets), w.Near...) {
					if r, ok := log.read(o, end, at); ok {
						reads = append(reads, r)
					}
				}
			}
			records.PutAll(kafka.RecordReads{tp: reads}, recordcache.Existed{End: snap.End, EndAt: at, Received: at}, Proof(idx, tables, at))
			records.Retain(used)
			est := Estimate(idx.Index, AppendTimes(idx, tables, records, at))
			for g := range committed {
				for _, pl := range est.GroupLags(nil, g, at) {
					switch {
					case pl.Method == MethodUnproven:
						unproven++
						continue
					case pl.Method == MethodWithheld:
						withheld++
						continue
					case !pl.HasTimeLag || pl.CaughtUp:
						continue
					}
					n, ok := log.next(pl.Committed, end)
					require.True(t, ok, "seed %d: a time lag for a group with nothing left (%s)", seed, pl.Method)
					age := float64(at-log.appended[n]) / 1e9
					bound := math.Max(1, age/10) + float64(sampling)/1e9
					dated++
					require.InDelta(t, age, pl.TimeLag, bound, "seed %d (append time %v, compacted %v, restart %v), scrape at %+.0f s, offset %d (next record %d, producer %d): time lag %.3f s, true age %.3f s (%s)",
						seed, logAppendTime, compacted, restartAt > 0, float64(at-t0)/1e9, pl.Committed, n, log.producer[n], pl.TimeLag, age, pl.Method)
				}
			}
		}
	}
	t.Logf("%d time lags dated within the bound, %d withheld as unproven, %d as outside what the tables prove", dated, unproven, withheld)
	require.Greater(t, dated, 5_000, "time lags checked")
	require.Positive(t, unproven, "stamps not shown to be append times are withheld")
}
