package dating

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/clocks"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

var tp = kafka.TopicPartition{Topic: "t"}

// indexLog answers as a time index does over records stamped stamps[i]
// (milliseconds) at offsets start+i.
type indexLog struct {
	start  int64
	stamps []int64
}

func (l indexLog) answer(asks []kafka.PartitionTimes) kafka.TimePoints {
	out := kafka.TimePoints{}
	for _, a := range asks {
		for _, at := range a.Millis {
			p := kafka.TimePoint{AtMillis: at, Offset: -1, TimestampMillis: -1}
			for i, s := range l.stamps {
				if s >= at {
					p = kafka.TimePoint{AtMillis: at, Found: true, Offset: l.start + int64(i), TimestampMillis: s}
					break
				}
			}
			out[a.TopicPartition] = append(out[a.TopicPartition], p)
		}
	}
	return out
}

// run searches l for targets, at most MaxIndexRounds rounds, and returns
// the rounds it took.
func run(s *indexSearch, l indexLog) int {
	rounds := 0
	for range MaxIndexRounds {
		asks := s.asks()
		if len(asks) == 0 {
			break
		}
		rounds++
		s.take(asks, l.answer(asks))
	}
	return rounds
}

// Records appended in batches share their batch's millisecond: a search
// from the table's guess finds the batch and proves the record's
// timestamp exact in two rounds, and every answer is an exact point.
func TestSearchDatesABatchInTwoRounds(t *testing.T) {
	var l indexLog
	for batch := range int64(10) {
		for range 16 {
			l.stamps = append(l.stamps, 1_000_000+batch*15_000)
		}
	}
	c := int64(9*16 + 5) // in the last batch, stamped 1,135,000
	s := searchOf(tp, IndexTarget{Offset: c, GuessMillis: 1_132_000, PrecisionMillis: 1})
	assert.Equal(t, 2, run(s, l))
	points, dated, fallback := s.results()
	assert.Empty(t, fallback)
	require.Len(t, dated[tp], 1)
	assert.Equal(t, int64(1_135_000), dated[tp][0].Timestamp)
	assert.Equal(t, clocks.TimeIndexClock, dated[tp][0].Producer)
	for _, p := range points[tp] {
		assert.Equal(t, l.stamps[p.Offset-l.start], p.Timestamp, "point at %d", p.Offset)
	}
}

// Records a millisecond apart, the guess half a second off: the search
// brackets the record and halves down to the precision within the round
// cap.
func TestSearchNarrowsToThePrecision(t *testing.T) {
	l := indexLog{start: 500}
	for i := range int64(100_000) {
		l.stamps = append(l.stamps, 2_000_000+i)
	}
	c := int64(500 + 70_000)
	s := searchOf(tp, IndexTarget{Offset: c, GuessMillis: 2_070_000 - 500, PrecisionMillis: 100})
	assert.LessOrEqual(t, run(s, l), MaxIndexRounds)
	_, dated, fallback := s.results()
	assert.Empty(t, fallback)
	require.Len(t, dated[tp], 1)
	assert.InDelta(t, float64(2_070_000), float64(dated[tp][0].Timestamp), 100)
}

// Timestamps that go back cannot show in the index's answers: a record
// is dated by the latest timestamp up to it, never earlier than its own.
func TestSearchDatesByTheLatestTimestampUpToTheRecord(t *testing.T) {
	l := indexLog{stamps: []int64{1000, 5000, 2000, 2001, 2002, 6000}}
	s := searchOf(tp, IndexTarget{Offset: 3, GuessMillis: 2001, PrecisionMillis: 1})
	run(s, l)
	_, dated, fallback := s.results()
	assert.Empty(t, fallback)
	require.Len(t, dated[tp], 1)
	assert.Equal(t, int64(5000), dated[tp][0].Timestamp)
}

// A record below the log start (the first record, f(0), is past it) is
// left to a record read, which finds the log start.
func TestSearchLeavesRecordsBelowTheLogStart(t *testing.T) {
	l := indexLog{start: 100, stamps: []int64{1000, 1001, 1002}}
	s := searchOf(tp, IndexTarget{Offset: 40, GuessMillis: 900, PrecisionMillis: 1})
	run(s, l)
	_, dated, fallback := s.results()
	assert.Empty(t, dated)
	assert.Equal(t, []kafka.PartitionOffsets{{TopicPartition: tp, Offsets: []int64{40}}}, fallback)
}

// A partition the index answered nothing for (an error) is left to record
// reads.
func TestSearchFallsBackWhereTheIndexFails(t *testing.T) {
	s := searchOf(tp, IndexTarget{Offset: 4, GuessMillis: 900, PrecisionMillis: 1})
	asks := s.asks()
	s.take(asks, kafka.TimePoints{})
	assert.Empty(t, s.asks())
	_, _, fallback := s.results()
	assert.Equal(t, []kafka.PartitionOffsets{{TopicPartition: tp, Offsets: []int64{4}}}, fallback)
}

// Six groups at six batches of one partition: each round asks for the
// lowest and highest target between two answers, whose answers split the
// others, so that all six are dated exactly in a few rounds, not one after
// the other.
func TestSearchDatesAPartitionsTargetsTogether(t *testing.T) {
	var l indexLog
	for batch := range int64(60) {
		for range 16 {
			l.stamps = append(l.stamps, 1_000_000+batch*1_000)
		}
	}
	var targets []IndexTarget
	for g := range int64(6) {
		batch := 10 + 8*g
		targets = append(targets, IndexTarget{Offset: batch*16 + g, GuessMillis: 1_000_000 + batch*1_000 + 300, PrecisionMillis: 1, RecordsPerMilli: 0.016})
	}
	s := searchOf(tp, targets...)
	assert.LessOrEqual(t, run(s, l), 6)
	_, dated, fallback := s.results()
	assert.Empty(t, fallback)
	require.Len(t, dated[tp], 6)
	for _, d := range dated[tp] {
		assert.Equal(t, l.stamps[d.Offset], d.Timestamp, "offset %d", d.Offset)
	}
}

// A record hours older than its table, on a partition writing steadily:
// the first guess comes from the rate at the table's start, and the line
// through the answers dates it to its precision in a few rounds.
func TestSearchFindsARecordHoursOlderThanItsTable(t *testing.T) {
	var l indexLog
	for i := range int64(200_000) {
		l.stamps = append(l.stamps, 1_000_000+i*90+i%7*10) // about 11 a second
	}
	c := int64(20_000) // 5 h before the table's first point at offset 200,000
	s := searchOf(tp, IndexTarget{Offset: c, GuessMillis: 1_000_000 + c*100, PrecisionMillis: 50, RecordsPerMilli: 1.0 / 100})
	assert.LessOrEqual(t, run(s, l), 4)
	_, dated, fallback := s.results()
	assert.Empty(t, fallback)
	require.Len(t, dated[tp], 1)
	assert.InDelta(t, float64(l.stamps[c]), float64(dated[tp][0].Timestamp), 50)
}

// A record the rounds cannot bound on both sides (its table's guess a day
// off, and no rate to correct it) is left to a record read rather than
// dated from one side.
func TestSearchLeavesARecordOpenOnOneSideToARead(t *testing.T) {
	l := indexLog{stamps: []int64{1_000, 1_001, 1_002}}
	s := searchOf(tp, IndexTarget{Offset: 1, GuessMillis: 86_400_000, PrecisionMillis: 1})
	run(s, l)
	_, dated, fallback := s.results()
	assert.Empty(t, dated)
	assert.Equal(t, []kafka.PartitionOffsets{{TopicPartition: tp, Offsets: []int64{1}}}, fallback)
}

// A group on every record of a partition's last 10 s, written a batch of
// one to three records a second (sharing its millisecond) and sampled
// every 5 s: the targets outnumber the records between the answers, so
// each run is walked a batch at a time from its lowest exact point (the
// millisecond after it, once a batch) rather than by the line, whose asks
// fall between batches and find the same one twice; a run with room for
// one batch between its answers, by the partition's spacing of stamps,
// asks only that walk (oneBatchBetween). Every record is dated exactly in
// 17 times asked over 3 rounds (20 with two asks for every run; the line
// alone: 26 in 4).
func TestSearchWalksARunDenseInTargetsABatchAtATime(t *testing.T) {
	const base = 1_700_000_000_000
	var l indexLog
	var batchOf []int64 // each record's batch stamp
	for b := range int64(10) {
		for range 1 + b%3 {
			l.stamps = append(l.stamps, base+b*1000+b*13%50)
			batchOf = append(batchOf, base+b*1000+b*13%50)
		}
	}
	n := int64(len(l.stamps))
	var targets []IndexTarget
	for c := range n {
		// The table's line: n records over the 10 s.
		targets = append(targets, IndexTarget{Offset: c, GuessMillis: base + c*10_000/n, PrecisionMillis: 1, RecordsPerMilli: float64(n) / 10_000})
	}
	s := searchOf(tp, targets...)
	asked := 0
	rounds := 0
	for asks := s.asks(); len(asks) > 0; asks = s.asks() {
		rounds++
		for _, a := range asks {
			asked += len(a.Millis)
		}
		s.take(asks, l.answer(asks))
	}
	_, dated, fallback := s.results()
	assert.Empty(t, fallback)
	require.Len(t, dated[tp], int(n))
	for _, d := range dated[tp] {
		assert.Equal(t, batchOf[d.Offset], d.Timestamp, "offset %d", d.Offset)
	}
	assert.LessOrEqual(t, asked, 17, "times asked")
	assert.LessOrEqual(t, rounds, 3)
}

// searchOf is the search of one partition's targets, as the plan makes it.
func searchOf(tp kafka.TopicPartition, its ...IndexTarget) *indexSearch {
	ps := partitionSearch{tp: tp}
	for _, it := range its {
		ps.targets = append(ps.targets, newTarget(it))
	}
	return newIndexSearch([]partitionSearch{ps})
}

// A busy scrape searches hundreds of thousands of targets at once: what
// their partition shares is not kept a target.
func TestTargetSize(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("sizes are those of a 64-bit platform")
	}
	require.Equal(t, uintptr(128), unsafe.Sizeof(target{}))
}
