package kafkatimelagreceiver

import (
	"math"
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// unixSec turns unix seconds into the table's unix nanoseconds.
func unixSec(s int64) int64 { return s * int64(time.Second) }

// tableAddAt adds a read whose request was sent 5 ms before its response arrived
// at receivedNanos.
func tableAddAt(t *offsetTable, offset, receivedNanos int64) addResult {
	received := time.Unix(0, receivedNanos)
	return t.add(offset, received.Add(-5*time.Millisecond), received)
}

// requireTableWellFormed checks the table's invariants: within its bound, strictly
// increasing in time, non-decreasing in offset.
func requireTableWellFormed(t testing.TB, table *offsetTable) {
	t.Helper()
	require.LessOrEqual(t, table.len(), table.maxPoints)
	for i := 1; i < len(table.points); i++ {
		prev, cur := table.points[i-1], table.points[i]
		if prev.at >= cur.at || prev.offset > cur.offset {
			require.FailNowf(t, "malformed table", "points %d %+v and %d %+v are not strictly increasing in time and non-decreasing in offset", i-1, prev, i, cur)
		}
	}
}

func TestOffsetTableWorkedExample(t *testing.T) {
	table := newOffsetTable(16)
	require.Equal(t, sampleAppended, table.add(212, time.Unix(1597304241, 0).Add(-time.Millisecond), time.Unix(1597304241, 0)))
	require.Equal(t, sampleAppended, table.add(240, time.Unix(1597304361, 0).Add(-time.Millisecond), time.Unix(1597304361, 0)))
	require.Equal(t, sampleAppended, table.add(260, time.Unix(1597304421, 0).Add(-time.Millisecond), time.Unix(1597304421, 0)))
	require.Equal(t, []offsetSample{
		{offset: 212, at: unixSec(1597304241)},
		{offset: 240, at: unixSec(1597304361)},
		{offset: 260, at: unixSec(1597304421)},
	}, table.points)

	upper := offsetSample{offset: 275, at: unixSec(1597304481)}
	for _, tc := range []struct {
		c    int64
		want int64
	}{
		{c: 250, want: 1597304391},
		{c: 212, want: 1597304241},
		{c: 240, want: 1597304361},
		{c: 226, want: 1597304301},
		{c: 260, want: 1597304421},
	} {
		at, ok := table.appendTime(tc.c, upper)
		require.True(t, ok, "offset %d", tc.c)
		require.Equal(t, unixSec(tc.want), at, "offset %d", tc.c)
	}

	oldest, ok := table.oldest()
	require.True(t, ok)
	require.Equal(t, offsetSample{offset: 212, at: unixSec(1597304241)}, oldest)
	newest, ok := table.newest()
	require.True(t, ok)
	require.Equal(t, offsetSample{offset: 260, at: unixSec(1597304421)}, newest)
}

func TestOffsetTableEmpty(t *testing.T) {
	table := newOffsetTable(8)
	require.Zero(t, table.len())
	_, ok := table.oldest()
	require.False(t, ok)
	_, ok = table.newest()
	require.False(t, ok)
	_, ok = table.appendTime(0, offsetSample{offset: 10, at: unixSec(100)})
	require.False(t, ok, "an empty table has nothing to interpolate from, whatever the upper bracket")
}

func TestOffsetTableExactOnLinearData(t *testing.T) {
	// 100 records a second, sampled every second for five minutes: record c
	// was appended at base + c/100 s exactly.
	const (
		rate    = 100
		seconds = 300
	)
	base := unixSec(1_700_000_000)
	table := newOffsetTable(1024)
	for s := int64(0); s <= seconds; s++ {
		require.Equal(t, sampleAppended, tableAddAt(table, rate*s, base+unixSec(s)))
	}
	require.Equal(t, seconds+1, table.len())
	upper := offsetSample{offset: rate * (seconds + 1), at: base + unixSec(seconds+1)}
	for c := int64(0); c < rate*(seconds+1); c++ {
		at, ok := table.appendTime(c, upper)
		require.True(t, ok, "offset %d", c)
		require.Equal(t, base+c*int64(time.Second)/rate, at, "offset %d", c)
	}
}

func TestOffsetTableNoExtrapolation(t *testing.T) {
	newTable := func() *offsetTable {
		table := newOffsetTable(8)
		tableAddAt(table, 1000, unixSec(100))
		tableAddAt(table, 1100, unixSec(110))
		tableAddAt(table, 1200, unixSec(120))
		return table
	}
	validUpper := offsetSample{offset: 1300, at: unixSec(130)}

	t.Run("below the oldest point", func(t *testing.T) {
		table := newTable()
		for _, c := range []int64{0, 500, 999} {
			_, ok := table.appendTime(c, validUpper)
			require.False(t, ok, "offset %d predates the table", c)
		}
	})

	t.Run("above every point without a usable upper bracket", func(t *testing.T) {
		table := newTable()
		for name, upper := range map[string]offsetSample{
			"zero":                 {},
			"offset equal to c":    {offset: 1250, at: unixSec(130)},
			"offset below c":       {offset: 1210, at: unixSec(130)},
			"offset equal to last": {offset: 1200, at: unixSec(130)},
			"same time as last":    {offset: 1300, at: unixSec(120)},
			"older than last":      {offset: 1300, at: unixSec(115)},
		} {
			_, ok := table.appendTime(1250, upper)
			require.False(t, ok, "upper bracket %q must not be used", name)
		}
		// c at the newest point's offset is at or above every point too.
		_, ok := table.appendTime(1200, offsetSample{offset: 1200, at: unixSec(130)})
		require.False(t, ok)
	})

	t.Run("above every point with a valid upper bracket", func(t *testing.T) {
		table := newTable()
		for _, tc := range []struct{ c, want int64 }{
			{c: 1200, want: unixSec(120)},
			{c: 1250, want: unixSec(125)},
			{c: 1299, want: unixSec(120) + 99*int64(time.Second)/10},
		} {
			at, ok := table.appendTime(tc.c, validUpper)
			require.True(t, ok, "offset %d", tc.c)
			require.Equal(t, tc.want, at, "offset %d", tc.c)
		}
		_, ok := table.appendTime(1300, validUpper)
		require.False(t, ok, "the upper bracket's own offset is not below it")
	})

	t.Run("the upper bracket is ignored when a table point brackets c", func(t *testing.T) {
		table := newTable()
		at, ok := table.appendTime(1050, offsetSample{})
		require.True(t, ok)
		require.Equal(t, unixSec(105), at)
	})
}

func TestOffsetTableFlatRuns(t *testing.T) {
	table := newOffsetTable(16)
	require.Equal(t, sampleAppended, tableAddAt(table, 50, unixSec(90)))
	// A flat run at offset 100 observed from 100 s to 160 s.
	require.Equal(t, sampleAppended, tableAddAt(table, 100, unixSec(100)))
	require.Equal(t, sampleAppended, tableAddAt(table, 100, unixSec(110)))
	for s := int64(120); s <= 160; s += 10 {
		require.Equal(t, sampleMerged, tableAddAt(table, 100, unixSec(s)))
		require.Equal(t, 3, table.len(), "a flat run keeps only its first and last points")
	}
	require.Equal(t, []offsetSample{{50, unixSec(90)}, {100, unixSec(100)}, {100, unixSec(160)}}, table.points)

	require.Equal(t, sampleAppended, tableAddAt(table, 200, unixSec(170)))
	require.Equal(t, []offsetSample{{50, unixSec(90)}, {100, unixSec(100)}, {100, unixSec(160)}, {200, unixSec(170)}}, table.points)

	// Record 100 was appended after the run ended: the run's last point is
	// its lower bracket.
	at, ok := table.appendTime(100, offsetSample{})
	require.True(t, ok)
	require.Equal(t, unixSec(160), at)
	at, ok = table.appendTime(150, offsetSample{})
	require.True(t, ok)
	require.Equal(t, unixSec(165), at)
	// Records of the run's first point are interpolated before the run.
	at, ok = table.appendTime(75, offsetSample{})
	require.True(t, ok)
	require.Equal(t, unixSec(95), at)

	// A table that starts flat keeps both ends too.
	table = newOffsetTable(16)
	for s := int64(0); s < 10; s++ {
		tableAddAt(table, 7, unixSec(s))
	}
	require.Equal(t, []offsetSample{{7, unixSec(0)}, {7, unixSec(9)}}, table.points)
	at, ok = table.appendTime(7, offsetSample{offset: 8, at: unixSec(10)})
	require.True(t, ok)
	require.Equal(t, unixSec(9), at)
}

func TestOffsetTableReset(t *testing.T) {
	newTable := func() *offsetTable {
		table := newOffsetTable(16)
		tableAddAt(table, 1000, unixSec(100))
		tableAddAt(table, 1100, unixSec(110))
		tableAddAt(table, 1200, unixSec(120))
		return table
	}
	before := newTable().points

	t.Run("offset backwards after the newest read: reset", func(t *testing.T) {
		table := newTable()
		received := time.Unix(130, 0)
		sent := time.Unix(120, 1) // after the newest point was received
		require.Equal(t, tableReset, table.add(5, sent, received))
		require.Equal(t, []offsetSample{{5, unixSec(130)}}, table.points)
		// The new log grows from there.
		require.Equal(t, sampleAppended, tableAddAt(table, 25, unixSec(140)))
		at, ok := table.appendTime(15, offsetSample{})
		require.True(t, ok)
		require.Equal(t, unixSec(135), at)
		_, ok = table.appendTime(1, offsetSample{})
		require.False(t, ok, "nothing of the old log is left to interpolate from")
	})

	t.Run("concurrent read served first: ignored", func(t *testing.T) {
		table := newTable()
		// Sent before the newest point's response arrived, received after.
		received := time.Unix(121, 0)
		sent := time.Unix(119, 0)
		require.Equal(t, sampleIgnored, table.add(1150, sent, received))
		require.Equal(t, before, table.points)
		// Sent exactly when the newest response arrived: still concurrent.
		require.Equal(t, sampleIgnored, table.add(1150, time.Unix(120, 0), received))
		require.Equal(t, before, table.points)
	})

	t.Run("older in time than the newest point: ignored", func(t *testing.T) {
		table := newTable()
		require.Equal(t, sampleIgnored, tableAddAt(table, 1300, unixSec(115)))
		require.Equal(t, sampleIgnored, tableAddAt(table, 1200, unixSec(120)))
		require.Equal(t, sampleIgnored, tableAddAt(table, 1150, unixSec(119)+5*int64(time.Millisecond)))
		require.Equal(t, before, table.points)
	})

	t.Run("same time as the newest point with a greater offset: refined", func(t *testing.T) {
		table := newTable()
		require.Equal(t, sampleMerged, tableAddAt(table, 1250, unixSec(120)))
		require.Equal(t, []offsetSample{{1000, unixSec(100)}, {1100, unixSec(110)}, {1250, unixSec(120)}}, table.points)
	})
}

func TestOffsetTableBound(t *testing.T) {
	for _, maxPoints := range []int{2, 3, 4, 5, 16, 100} {
		rng := rand.New(rand.NewSource(int64(maxPoints)))
		table := newOffsetTable(maxPoints)
		first := offsetSample{offset: 10, at: unixSec(1000)}
		tableAddAt(table, first.offset, first.at)
		offset, at := first.offset, first.at
		for i := 0; i < 3000; i++ {
			at += int64(time.Second) + rng.Int63n(int64(time.Second))
			switch rng.Intn(4) {
			case 0: // idle
			case 1:
				offset += rng.Int63n(5)
			default:
				offset += rng.Int63n(1000)
			}
			tableAddAt(table, offset, at)
			requireTableWellFormed(t, table)
			oldest, _ := table.oldest()
			require.Equal(t, first, oldest, "maxPoints %d: the first point must stay", maxPoints)
			newest, _ := table.newest()
			require.Equal(t, offsetSample{offset: offset, at: at}, newest, "maxPoints %d: the last point must stay", maxPoints)
		}
	}
}

func TestOffsetTableMinimumBound(t *testing.T) {
	for _, maxPoints := range []int{-5, 0, 1, 2} {
		table := newOffsetTable(maxPoints)
		require.Equal(t, 2, table.maxPoints, "maxPoints %d", maxPoints)
		for s := int64(0); s < 50; s++ {
			tableAddAt(table, 10*s, unixSec(s))
			requireTableWellFormed(t, table)
		}
		require.Equal(t, []offsetSample{{0, unixSec(0)}, {490, unixSec(49)}}, table.points)
		at, ok := table.appendTime(245, offsetSample{})
		require.True(t, ok)
		require.Equal(t, unixSec(24)+int64(time.Second)/2, at)
	}
	require.Equal(t, 3, newOffsetTable(3).maxPoints)
}

// requireGapsOnPoints checks that every gap mark names a point of the table.
func requireGapsOnPoints(t testing.TB, table *offsetTable) {
	t.Helper()
	ats := make(map[int64]bool, len(table.points))
	for _, p := range table.points {
		ats[p.at] = true
	}
	for at := range table.gaps {
		require.True(t, ats[at], "gap mark at %d names no point", at)
	}
}

func TestOffsetTableGaps(t *testing.T) {
	const maxGap = 30 * int64(time.Second)
	newTable := func() *offsetTable {
		table := newOffsetTable(64)
		table.maxGap = maxGap
		// Watched: 10 records a second, sampled every 10 s, up to 100 s.
		for s := int64(0); s <= 100; s += 10 {
			tableAddAt(table, 10*s, unixSec(s))
		}
		return table
	}

	t.Run("no gap while watched", func(t *testing.T) {
		table := newTable()
		require.Empty(t, table.gaps)
		upper := offsetSample{offset: 1100, at: unixSec(110)}
		for c := int64(0); c < 1100; c += 7 {
			require.False(t, table.inGap(c, upper), "offset %d", c)
		}
	})

	t.Run("production while unwatched is a gap", func(t *testing.T) {
		table := newTable()
		// Down from 100 s to 400 s while 3000 records were appended.
		require.Equal(t, sampleAppended, tableAddAt(table, 4000, unixSec(400)))
		require.Equal(t, sampleAppended, tableAddAt(table, 4100, unixSec(410)))
		upper := offsetSample{offset: 4200, at: unixSec(420)}
		require.False(t, table.inGap(999, upper), "before the gap")
		for _, c := range []int64{1000, 2500, 3999} {
			require.True(t, table.inGap(c, upper), "offset %d is in the gap", c)
			at, ok := table.appendTime(c, upper)
			require.True(t, ok, "a gap is still interpolated; the caller decides")
			require.Equal(t, unixSec(100)+(c-1000)*int64(time.Second)/10, at)
		}
		require.False(t, table.inGap(4000, upper), "after the gap")
		require.False(t, table.inGap(4150, upper), "up to the upper bracket")
		// An upper bracket too far after the newest point is a gap too.
		require.True(t, table.inGap(4150, offsetSample{offset: 5000, at: unixSec(410) + maxGap + 1}))
		require.False(t, table.inGap(4150, offsetSample{offset: 5000, at: unixSec(410) + maxGap}))
		requireGapsOnPoints(t, table)
	})

	t.Run("unwatched without production is no gap", func(t *testing.T) {
		table := newTable()
		require.Equal(t, sampleAppended, tableAddAt(table, 1000, unixSec(400)))
		require.Equal(t, sampleAppended, tableAddAt(table, 1100, unixSec(410)))
		require.Empty(t, table.gaps)
		upper := offsetSample{offset: 1200, at: unixSec(420)}
		for c := int64(0); c < 1200; c += 7 {
			require.False(t, table.inGap(c, upper), "offset %d", c)
		}
	})

	t.Run("maxGap 0 marks nothing", func(t *testing.T) {
		table := newOffsetTable(64)
		tableAddAt(table, 0, unixSec(0))
		tableAddAt(table, 1_000_000, unixSec(86400))
		require.Empty(t, table.gaps)
		require.False(t, table.inGap(10, offsetSample{offset: 2_000_000, at: unixSec(10 * 86400)}))
	})

	t.Run("a reset forgets gaps", func(t *testing.T) {
		table := newTable()
		tableAddAt(table, 4000, unixSec(400))
		require.Len(t, table.gaps, 1)
		require.Equal(t, tableReset, table.add(3, time.Unix(401, 0), time.Unix(402, 0)))
		require.Empty(t, table.gaps)
	})

	t.Run("thinning keeps the gap", func(t *testing.T) {
		table := newOffsetTable(8)
		table.maxGap = maxGap
		offset, at := int64(0), int64(0)
		tableAddAt(table, offset, at)
		for i := 0; i < 20; i++ {
			offset, at = offset+100, at+10*int64(time.Second)
			tableAddAt(table, offset, at)
		}
		gapFrom, gapTo := offset, offset+30000
		offset, at = gapTo, at+600*int64(time.Second)
		tableAddAt(table, offset, at)
		for i := 0; i < 500; i++ {
			offset, at = offset+100+int64(i%7)*40, at+10*int64(time.Second)
			tableAddAt(table, offset, at)
			requireTableWellFormed(t, table)
			requireGapsOnPoints(t, table)
			upper := offsetSample{offset: offset + 100, at: at + 10*int64(time.Second)}
			for c := gapFrom; c < gapTo; c += 997 {
				require.True(t, table.inGap(c, upper), "after %d adds, offset %d must still be in a gap", i, c)
			}
		}
	})
}

// syntheticDayTraffic is a synthetic day of produce traffic at one-second resolution:
// within second s, rate[s] records are appended evenly, so the append time of
// every record is known exactly.
type syntheticDayTraffic struct {
	rate []int64 // records appended during second s
	cum  []int64 // records appended before second s: the end offset at s
}

func newSyntheticDayTraffic(seconds int, seed int64) *syntheticDayTraffic {
	rng := rand.New(rand.NewSource(seed))
	d := &syntheticDayTraffic{rate: make([]int64, seconds), cum: make([]int64, seconds+1)}
	burstLeft, burstRate := 0, 0.0
	for s := 0; s < seconds; s++ {
		// A daily pattern: quiet at night, busy in the afternoon.
		r := 200 + 180*math.Sin(2*math.Pi*float64(s)/86400-math.Pi/2)
		// Bursts: a few minutes at several times the rate, some dozens a day.
		if burstLeft == 0 && rng.Float64() < 1.0/2000 {
			burstLeft, burstRate = 30+rng.Intn(300), float64(500+rng.Intn(3000))
		}
		if burstLeft > 0 {
			r += burstRate
			burstLeft--
		}
		// Per-second noise.
		r *= 0.8 + 0.4*rng.Float64()
		d.rate[s] = int64(r)
		d.cum[s+1] = d.cum[s] + d.rate[s]
	}
	return d
}

// appendedAt is when record c was appended, in nanoseconds from the start.
func (d *syntheticDayTraffic) appendedAt(c int64) int64 {
	// The second in which record c was appended: the last s with cum[s] <= c
	// and a non-zero rate.
	s := sort.Search(len(d.rate), func(i int) bool { return d.cum[i+1] > c })
	return unixSec(int64(s)) + (c-d.cum[s])*int64(time.Second)/d.rate[s]
}

// TestOffsetTableThinningAccuracy feeds a day of bursty traffic sampled every
// 10 s into a table of 512 points and compares its estimates with the true
// append times. Measured with this seed (and similar over seeds 1-12):
//
//	age      worst error   bound asserted
//	1 min    0.34 s        2 s
//	10 min   0.24 s        2 s
//	1 h      0.60 s        3.6 s
//	6 h      2.66 s        21.6 s
//	23 h     19.5 s        82.8 s
//
// Over every offset of the day the error stays within 1% of its age or one
// sampling interval: an interval that saw a burst start is as coarse as the
// samples, whatever the thinning.
func TestOffsetTableThinningAccuracy(t *testing.T) {
	const (
		day      = 86400
		interval = 10
	)
	traffic := newSyntheticDayTraffic(day, 1)
	for _, r := range traffic.rate {
		require.Positive(t, r, "the generator must append every second for appendedAt to be defined")
	}
	base := unixSec(1_700_000_000)
	table := newOffsetTable(512)
	for s := 0; s <= day; s += interval {
		require.NotEqual(t, sampleIgnored, tableAddAt(table, traffic.cum[s], base+unixSec(int64(s))))
		requireTableWellFormed(t, table)
	}
	oldest, _ := table.oldest()
	require.Equal(t, offsetSample{offset: 0, at: base}, oldest, "the table must span the whole day")
	newest, _ := table.newest()
	require.Equal(t, offsetSample{offset: traffic.cum[day], at: base + unixSec(day)}, newest)
	t.Logf("points kept: %d of %d samples", table.len(), day/interval+1)

	now := day
	upper := offsetSample{offset: traffic.cum[now], at: base + unixSec(int64(now))}
	errorAt := func(c int64) (err, age time.Duration) {
		truth := base + traffic.appendedAt(c)
		at, ok := table.appendTime(c, upper)
		require.True(t, ok, "offset %d", c)
		return time.Duration(abs(float64(at - truth))), time.Duration(upper.at - truth)
	}

	for _, age := range []time.Duration{time.Minute, 10 * time.Minute, time.Hour, 6 * time.Hour, 23 * time.Hour} {
		// Records appended within one sampling interval either side of
		// now-age, so the worst offset near that age is seen.
		ageSec := int(age / time.Second)
		from, to := traffic.cum[now-ageSec-interval], traffic.cum[now-ageSec+interval]
		step := max(1, (to-from)/200)
		var worst time.Duration
		for c := from; c < to; c += step {
			err, _ := errorAt(c)
			worst = max(worst, err)
		}
		bound := max(age/1000, 2*time.Second)
		t.Logf("age %-8s worst error %-14s (%.3f%% of age; bound %s)", age, worst, 100*float64(worst)/float64(age), bound)
		require.LessOrEqual(t, worst, bound, "age %s", age)
	}

	// Every offset of the day.
	var worstRatio float64
	var worstRatioAge, worstRecent time.Duration
	for c := int64(0); c < traffic.cum[day]; c += 97 {
		err, age := errorAt(c)
		require.LessOrEqual(t, err, max(age/100, interval*time.Second), "offset %d, age %s", c, age)
		if age <= 10*time.Minute {
			worstRecent = max(worstRecent, err)
		} else if r := float64(err) / float64(age); r > worstRatio {
			worstRatio, worstRatioAge = r, age
		}
	}
	t.Logf("whole day: worst error within 10 min of age %s; beyond, worst %.3f%% of age (at age %s)", worstRecent, 100*worstRatio, worstRatioAge)
}

// steadyBenchTable returns a table with maxPoints 512 that has been thinning for a
// while, and the next time and offset to add.
func steadyBenchTable(tb testing.TB) (table *offsetTable, offset, at int64) {
	tb.Helper()
	table = newOffsetTable(512)
	rng := rand.New(rand.NewSource(7))
	at = unixSec(1_700_000_000)
	for i := 0; i < 20000; i++ {
		offset += 500 + rng.Int63n(1000)
		at += 10 * int64(time.Second)
		tableAddAt(table, offset, at)
	}
	return table, offset, at
}

func BenchmarkTableAdd(b *testing.B) {
	table, offset, at := steadyBenchTable(b)
	rng := rand.New(rand.NewSource(8))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		offset += 500 + rng.Int63n(1000)
		at += 10 * int64(time.Second)
		tableAddAt(table, offset, at)
	}
}

func BenchmarkTableAppendTime(b *testing.B) {
	table, offset, at := steadyBenchTable(b)
	oldest, _ := table.oldest()
	upper := offsetSample{offset: offset + 1000, at: at + 10*int64(time.Second)}
	rng := rand.New(rand.NewSource(9))
	queries := make([]int64, 4096)
	for i := range queries {
		queries[i] = oldest.offset + rng.Int63n(upper.offset-oldest.offset)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok := table.appendTime(queries[i%len(queries)], upper); !ok {
			b.Fatal("no estimate inside the table")
		}
	}
}
