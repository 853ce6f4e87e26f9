package accuracy

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestTimelineAnswersEndOffsetsAndAppendTimes(t *testing.T) {
	tl := &Timeline{}
	tl.Append(10, 3) // offsets 0-2
	tl.Append(20, 1) // offset 3
	tl.Append(20, 2) // offsets 4-5, same instant
	tl.Append(15, 9) // before the last batch: ignored
	require.Equal(t, int64(6), tl.EndOffset())
	for at, want := range map[int64]int64{9: 0, 10: 3, 19: 3, 20: 6, 99: 6} {
		require.Equal(t, want, tl.EndAt(at), "end at %d", at)
	}
	for offset, want := range map[int64]int64{0: 10, 2: 10, 3: 20, 5: 20} {
		got, ok := tl.AppendTime(offset)
		require.True(t, ok)
		require.Equal(t, want, got, "append time of %d", offset)
	}
	_, ok := tl.AppendTime(6)
	require.False(t, ok, "no record at the end offset")
	// The first batch whole, then whole batches up to the end within the
	// limit.
	upTo, bytes := tl.Fetch(1, 3, 10)
	require.Equal(t, int64(3), upTo)
	require.Equal(t, int64(3*RecordSize+batchHeader), bytes)
	upTo, bytes = tl.Fetch(1, 6, 1<<20)
	require.Equal(t, int64(6), upTo)
	require.Equal(t, int64(6*RecordSize+3*batchHeader), bytes)
	upTo, _ = tl.Fetch(1, 6, 3*RecordSize+batchHeader+RecordSize+batchHeader)
	require.Equal(t, int64(4), upTo, "the third batch does not fit")
	rounds, _ := tl.FetchRounds([]int64{0, 2, 4, 5}, 6, 3*RecordSize+batchHeader)
	require.Equal(t, int64(2), rounds, "offsets 0 and 2 in one read, 4 and 5 in another")
}

func TestTimelineKeepsProducerStampsApartFromAppendTimes(t *testing.T) {
	tl := &Timeline{}
	tl.AppendStamped(1, 10, 12, 2) // offsets 0-1, a clock 2 ahead
	tl.AppendStamped(2, 20, 15, 1) // offset 2, a clock 5 behind
	at, _ := tl.AppendTime(2)
	stamp, _ := tl.Stamp(2)
	require.Equal(t, []int64{20, 15}, []int64{at, stamp})
	producer, _ := tl.Producer(1)
	require.Equal(t, int64(1), producer, "each batch's producer")
	offset, max := tl.MaxStamp(3)
	require.Equal(t, []int64{2, 15}, []int64{offset, max}, "the largest timestamp, first of its batch")
	offset, max = tl.MaxStamp(2)
	require.Equal(t, []int64{0, 12}, []int64{offset, max}, "only batches below the end")
}

// TestTimelineAnswersTheTimeIndexByRecord: the time index answers the
// first record, in offset order, stamped at or after the millisecond asked,
// with its own timestamp: inside a batch whose records were stamped apart,
// that record rather than the batch's first, as a broker answers.
func TestTimelineAnswersTheTimeIndexByRecord(t *testing.T) {
	ms := int64(time.Millisecond)
	tl := &Timeline{}
	// Offsets 0-4, stamped 100, 110, ... 140 ms.
	tl.AppendBatch(Batch{Producer: 1, At: Epoch + 500*ms, FirstStamp: Epoch + 100*ms, LastStamp: Epoch + 140*ms,
		SentFirst: Epoch + 100*ms, SentLast: Epoch + 140*ms, Records: 5})
	tl.AppendStamped(2, Epoch+600*ms, Epoch+50*ms, 1)  // offset 5, stamped before them all
	tl.AppendStamped(2, Epoch+700*ms, Epoch+600*ms, 1) // offset 6
	for askedMillis, want := range map[int64][2]int64{
		40: {0, 100}, 100: {0, 100}, 101: {1, 110}, 125: {3, 130}, 140: {4, 140}, 141: {6, 600}, 600: {6, 600},
	} {
		offset, stamp, ok := tl.FirstStampedFrom(Epoch+askedMillis*ms, 7)
		require.True(t, ok, "asked %d ms", askedMillis)
		require.Equal(t, []int64{want[0], Epoch + want[1]*ms}, []int64{offset, stamp}, "asked %d ms", askedMillis)
	}
	offset, _, _ := tl.FirstStampedFrom(Epoch+125*ms+ms/2, 7)
	require.Equal(t, int64(3), offset, "the millisecond of the time asked")
	_, _, ok := tl.FirstStampedFrom(Epoch+141*ms, 6)
	require.False(t, ok, "no record below the end")
	_, _, ok = tl.FirstStampedFrom(Epoch+601*ms, 7)
	require.False(t, ok, "none stamped that late")
}

func TestCommitsAnswerTheLatestCommit(t *testing.T) {
	c := &Commits{}
	c.Commit(10, 5)
	c.Commit(20, 8)
	_, ok := c.At(9)
	require.False(t, ok)
	got, _ := c.At(10)
	require.Equal(t, int64(5), got)
	got, _ = c.At(25)
	require.Equal(t, int64(8), got)
}

// scrapeAt scrapes one group: its estimate, and the scrape's cost.
func scrapeAt(m Method, log *Timeline, committed, at int64) (GroupEstimate, Cost) {
	e := m.Scrape(Scrape{Committed: []int64{committed}, Read: Read{End: log.EndAt(at), Sent: at, Received: at}, Log: log})
	return e.Groups[0], e.Cost
}

func TestLastNTableKeepsFlatRunsAndExtrapolates(t *testing.T) {
	m := NewLastNTable(3).(*lastNTable)
	for _, p := range []point{{100, 1e9}, {100, 2e9}, {100, 3e9}} {
		m.Sample(Read{End: p.offset, Received: p.at})
	}
	require.Equal(t, []point{{100, 1e9}, {100, 3e9}}, m.points, "a flat run keeps its first and last point")
	m.Sample(Read{End: 200, Received: 4e9})
	m.Sample(Read{End: 300, Received: 5e9})
	require.Equal(t, []point{{100, 3e9}, {200, 4e9}, {300, 5e9}}, m.points, "the oldest point leaves")
	at, ok := m.lookup(250)
	require.True(t, ok)
	require.InDelta(t, 4.5e9, at, 1)
	at, ok = m.lookup(0) // below the table: the line through its ends
	require.True(t, ok)
	require.InDelta(t, 2e9, at, 1)
	flat := NewLastNTable(3).(*lastNTable)
	flat.Sample(Read{End: 100, Received: 1e9})
	flat.Sample(Read{End: 100, Received: 2e9})
	_, ok = flat.lookup(50)
	require.False(t, ok, "a flat table has no line to extrapolate")
}

func TestRateMethodDividesLagByTheWindowsRate(t *testing.T) {
	log := &Timeline{}
	for s := int64(0); s <= 600; s++ {
		log.Append(Epoch+s*second, 10)
	}
	m := NewRate()
	for s := int64(0); s < 600; s += 10 {
		m.Sample(Read{End: log.EndAt(Epoch + s*second), Received: Epoch + s*second})
	}
	e, cost := scrapeAt(m, log, log.EndAt(Epoch+600*second)-200, Epoch+600*second)
	require.True(t, e.OK)
	require.InDelta(t, 20, e.TimeLag, 1e-9, "200 records at 10 a second")
	require.Equal(t, int64(61), cost.OffsetReads)
}

func TestAnchorsMethodReadsOffTheLogsLine(t *testing.T) {
	log := &Timeline{}
	log.Append(Epoch, 1)              // offset 0
	log.Append(Epoch+100*second, 99)  // 1-99
	log.Append(Epoch+200*second, 100) // 100-199
	m := NewAnchors()
	e, cost := scrapeAt(m, log, 50, Epoch+300*second)
	require.True(t, e.OK)
	// The largest timestamp is the newest batch's, first at offset 100:
	// the line from (0, 0 s) to (100, 200 s) puts offset 50 at 100 s.
	require.InDelta(t, 200, e.TimeLag, 1e-6)
	require.Equal(t, int64(1), cost.SharedReads, "the log-start record is read once")
	_, cost = scrapeAt(m, log, 100, Epoch+301*second)
	require.Zero(t, cost.SharedReads)
	require.Equal(t, int64(3), cost.OffsetReads)
}

func TestRecordMethodIsExactAndReadsOnlyWhenLagging(t *testing.T) {
	log := &Timeline{}
	log.Append(Epoch, 5)
	log.Append(Epoch+10*second, 5)
	m := NewRecordRead()
	e, cost := scrapeAt(m, log, 7, Epoch+30*second)
	require.True(t, e.OK)
	require.InDelta(t, 20, e.TimeLag, 1e-9)
	require.Equal(t, int64(1), cost.RecordReads)
	e, cost = scrapeAt(m, log, 10, Epoch+30*second)
	require.True(t, e.OK)
	require.Zero(t, e.TimeLag)
	require.Zero(t, cost.RecordReads)
}

func TestScoreMeasuresErrorsAndTheTarget(t *testing.T) {
	points := []Point{
		{Truth: 10, Estimate: 10.5, Estimated: true},
		{Truth: 10, Estimate: 9, Estimated: true},
		{Truth: 0, Estimate: 0, Estimated: true},
		{Truth: 1000, Estimated: false},
	}
	st := Score(points, 10*second)
	require.Equal(t, 4, st.Scrapes)
	require.InDelta(t, 0.25, st.NoEstimate, 1e-9)
	require.InDelta(t, 1, st.Max, 1e-9)
	require.InDelta(t, -0.5/3, st.Bias, 1e-9)
	require.True(t, math.IsInf(st.TargetP95, 1), "a scrape without an estimate misses the target")
	require.False(t, st.Met())
	require.True(t, Score(points[:3], 10*second).Met(), "errors within a second at 10 s sampling")
}

func TestRunIsDeterministic(t *testing.T) {
	shape := Shapes()[2] // bursty: random gaps and sizes
	shape.Duration = 20 * minute
	iv := Intervals()[1]
	a := Run(shape, iv, Methods(), 7)
	b := Run(shape, iv, Methods(), 7)
	for i := range a {
		require.True(t, slices.Equal(a[i].Points, b[i].Points) && a[i].Cost == b[i].Cost, "%s: a second run differs", a[i].Method.Key)
	}
	c := Run(shape, iv, Methods(), 8)
	require.False(t, slices.Equal(a[0].Points, c[0].Points), "another seed, another timeline")
}

// TestEvaluateIsTheSameWithAnyWorkers: the seeds' runs go on as many
// goroutines as asked, and the results do not depend on how many (the
// race detector watches them here; TestAccuracyTarget runs without it).
func TestEvaluateIsTheSameWithAnyWorkers(t *testing.T) {
	shape := Shapes()[0]
	shape.History, shape.Duration = 10*minute, 10*minute
	one := Evaluate([]Shape{shape}, Intervals(), []MethodSpec{Receiver}, 1, 3, 1)
	three := Evaluate([]Shape{shape}, Intervals(), []MethodSpec{Receiver}, 1, 3, 3)
	require.Len(t, three, len(one))
	for i := range one {
		require.Equal(t, one[i].PerSeed, three[i].PerSeed, "sampling %s", intervalName(one[i].Interval))
		require.Equal(t, one[i].Stats, three[i].Stats, "sampling %s", intervalName(one[i].Interval))
	}
}

// TestDatadogCacheHalvesKeepingItsEnds: with data streams on, the check's
// cache, once full, drops the points below the groups' lowest offset but
// the nearest, then the points its line misses least, down to half its
// size, keeping the oldest and newest; at its defaults it sends no time
// lag.
func TestDatadogCacheHalvesKeepingItsEnds(t *testing.T) {
	m := &datadogMethod{size: 6}
	// Offsets 0 to 40 a second apart, but 30 appended late, at 3.9 s.
	for _, p := range []point{{0, 0}, {10, second}, {20, 2 * second}, {30, 39 * second / 10}, {40, 4 * second}} {
		m.add(p, 0)
	}
	require.Len(t, m.cache, 5, "below its size, nothing is dropped")
	m.add(point{offset: 50, at: 5 * second}, 0)
	require.Equal(t, []point{{0, 0}, {30, 39 * second / 10}, {50, 5 * second}}, m.cache,
		"halved: the ends kept, and the point off the line (30 at 3.9 s)")
	m.add(point{offset: 60, at: 6 * second}, 0)
	m.add(point{offset: 70, at: 7 * second}, 0)
	m.add(point{offset: 80, at: 8 * second}, 55)
	require.Equal(t, []point{{50, 5 * second}, {70, 7 * second}, {80, 8 * second}}, m.cache,
		"below the lowest committed offset (55) only the nearest point stays; then halved, the first of equals dropped")
	at, ok := m.date(60)
	require.True(t, ok)
	require.InDelta(t, float64(6*second), at, 1, "between two points, their line")
	m.cache = []point{{1000, 1000 * second}, {1001, 1001 * second}}
	at, ok = m.date(0)
	require.True(t, ok)
	require.InDelta(t, float64(400*second), at, 1, "extrapolated at most 600 s below the oldest point")
	m.add(point{offset: 20, at: 1002 * second}, 0)
	require.Equal(t, []point{{20, 1002 * second}}, m.cache, "a high watermark below the cache's is a reset")

	log := &Timeline{}
	log.Append(Epoch, 10)
	e, cost := scrapeAt(newDatadogDefaults(), log, 5, Epoch+second)
	require.False(t, e.OK, "data_streams_enabled defaults to false: no time lag")
	require.Equal(t, int64(1), cost.OffsetReads)
}

// TestKlagExporterRateHasAFloorAndAWindow: klag-exporter's rate mode keeps
// its last 5 polls, none older than 600 s, and sends nothing below 0.01
// records a second.
func TestKlagExporterRateHasAFloorAndAWindow(t *testing.T) {
	log := &Timeline{}
	log.Append(Epoch, 10)
	log.Append(Epoch+700*second, 1) // 1 record in the 500 s the window keeps: 0.002 a second
	m := &rateMethod{maxPoints: KlagExporterRateSamples, maxAge: KlagExporterRateMaxAge, minRate: KlagExporterRateMinPerSec}
	m.Sample(Read{End: log.EndAt(Epoch), Received: Epoch})
	m.Sample(Read{End: log.EndAt(Epoch + 500*second), Received: Epoch + 500*second})
	e, _ := scrapeAt(m, log, 5, Epoch+1000*second)
	require.Equal(t, []point{{10, Epoch + 500*second}, {11, Epoch + 1000*second}}, m.points, "the sample 1000 s old is past the 600 s maximum age")
	require.False(t, e.OK, "below the 0.01 records/s floor")
	for s := int64(1001); s <= 1010; s++ {
		log.Append(Epoch+s*second, 1)
		m.Sample(Read{End: log.EndAt(Epoch + s*second), Received: Epoch + s*second})
	}
	require.Len(t, m.points, KlagExporterRateSamples)
	e, _ = scrapeAt(m, log, log.EndAt(Epoch+1010*second)-3, Epoch+1010*second)
	require.True(t, e.OK)
	require.InDelta(t, 3, e.TimeLag, 1e-9, "3 records at 1 a second over its last 5 samples")
}

// TestCostScalesOurPerGroupWorkAsThePeers: at the cost model's size, this
// receiver's time-index searches and reads inside the watched stretch,
// made for its groups' records, grow with the groups as a peer's record
// reads do; an end-offset read and the anchors' log-start read are the
// partition's whatever its groups.
func TestCostScalesOurPerGroupWorkAsThePeers(t *testing.T) {
	scrape := []Point{{At: 1, Group: 0}, {At: 1, Group: 1}} // one scrape of two groups
	requests := func(c Cost) float64 { return Scale(Series{Points: scrape, Groups: 2, Cost: c}).Requests }
	perGroupRound := float64(CostGroups) / 2 * CostBrokers // a round for each of the model's groups, on every broker
	require.InDelta(t, 2*perGroupRound, requests(Cost{RecordReads: 2}), 1e-9, "a peer's record reads, one a group")
	require.InDelta(t, 2*perGroupRound, requests(Cost{IndexReads: 2}), 1e-9, "our time-index searches, one a group")
	require.InDelta(t, 2*perGroupRound, requests(Cost{NearReads: 2}), 1e-9, "our reads inside the watched stretch, one a group")
	require.InDelta(t, float64(CostBrokers), requests(Cost{SharedReads: 1}), 1e-9, "the log-start read, the partition's")
	require.InDelta(t, float64(CostBrokers), requests(Cost{OffsetReads: 1}), 1e-9, "an end-offset read, the partition's")
	shared := Scale(Series{Points: scrape, Groups: 2, Cost: Cost{IndexReads: 2, NearReads: 1}}).SharedRequests
	require.InDelta(t, 3*float64(CostBrokers), shared, 1e-9, "the lower bound: our searches and reads the partition's")
}

// TestRowsOnTheirOwnTimersReportTheirLastPoll: where a shape puts scrapes
// at random phases, a row that polls on a timer of its own polls at a
// random phase, and a scrape sees what it computed at its last poll, not
// at the scrape; a scrape before its first poll sees no estimate.
func TestRowsOnTheirOwnTimersReportTheirLastPoll(t *testing.T) {
	stamp := &polled{poll: 30 * second, compute: func(s Scrape) Estimate {
		return Estimate{Groups: []GroupEstimate{{TimeLag: float64(s.Received), OK: true}}}
	}}
	iv := Intervals()[1]
	require.Empty(t, timers(Shape{}, []Method{datadogOff{}, stamp}, 0, 1, iv), "scrapes a quarter second after a sample: rows poll at the scrapes")
	var phases []int64
	for seed := uint64(1); seed <= 5; seed++ {
		ts := timers(Shape{RandomPhases: true}, []Method{datadogOff{}, stamp}, 0, seed, iv)
		require.Len(t, ts, 1, "only the polled row has a timer")
		timer := ts[0]
		require.Equal(t, 1, timer.method)
		require.Less(t, timer.next, stamp.poll)
		phases = append(phases, timer.next)
		before := timer.report(Scrape{Read: Read{Received: timer.next - 1}}, []int{0})
		require.False(t, before.Groups[0].OK, "seed %d: no poll yet", seed)
		polledAt := timer.next
		var cost Cost
		timer.poll(Scrape{Committed: []int64{0}, Read: Read{Received: polledAt}}, []int{0}, true, &cost)
		later := timer.report(Scrape{Read: Read{Received: polledAt + 20*second}}, []int{0})
		require.True(t, later.Groups[0].OK)
		require.InDelta(t, float64(polledAt), later.Groups[0].TimeLag, 0, "seed %d: the scrape sees the poll's value", seed)
	}
	slices.Sort(phases)
	require.Greater(t, len(slices.Compact(phases)), 1, "the phase is drawn: %v", phases)
}
