package timetable

import (
	"math"
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// unixSec turns unix seconds into the table's unix nanoseconds.
func unixSec(s int64) int64 { return s * int64(time.Second) }

// tableAddAt adds a read whose request was sent 5 ms before its response arrived
// at receivedNanos.
func tableAddAt(t *Table, offset, receivedNanos int64) AddResult {
	received := time.Unix(0, receivedNanos)
	return t.Add(offset, received.Add(-5*time.Millisecond), received)
}

// appendTime is Estimate without the gap flag.
func appendTime(t *Table, c int64, upper Sample) (at int64, ok bool) {
	at, ok, _ = t.Estimate(c, upper)
	return at, ok
}

// inGap tells whether the estimate for c comes from a gap segment.
func inGap(t *Table, c int64, upper Sample) bool {
	_, ok, gap := t.Estimate(c, upper)
	return ok && gap
}

// oldestPoint returns the table's oldest point, if any.
func oldestPoint(t *Table) (Sample, bool) {
	return t.first, t.n > 0
}

// newestPoint returns the table's newest point, if any.
func newestPoint(t *Table) (Sample, bool) {
	return t.last, t.n > 0
}

func tableLen(t *Table) int { return t.len() }

// requireTableWellFormed checks the table's invariants: within its bound, strictly
// increasing in time, non-decreasing in offset.
func requireTableWellFormed(t testing.TB, table *Table) {
	t.Helper()
	require.LessOrEqual(t, tableLen(table), int(table.maxPoints))
	points := table.samples()
	require.Len(t, points, table.len())
	for i := 1; i < len(points); i++ {
		prev, cur := points[i-1], points[i]
		if prev.At >= cur.At || prev.Offset > cur.Offset {
			require.FailNowf(t, "malformed table", "points %d %+v and %d %+v are not strictly increasing in time and non-decreasing in offset", i-1, prev, i, cur)
		}
	}
}

func TestOffsetTableWorkedExample(t *testing.T) {
	table := NewTable(16, 0)
	require.Equal(t, Appended, table.Add(212, time.Unix(1597304241, 0).Add(-time.Millisecond), time.Unix(1597304241, 0)))
	require.Equal(t, Appended, table.Add(240, time.Unix(1597304361, 0).Add(-time.Millisecond), time.Unix(1597304361, 0)))
	require.Equal(t, Appended, table.Add(260, time.Unix(1597304421, 0).Add(-time.Millisecond), time.Unix(1597304421, 0)))
	require.Equal(t, []Sample{
		{Offset: 212, At: unixSec(1597304241)},
		{Offset: 240, At: unixSec(1597304361)},
		{Offset: 260, At: unixSec(1597304421)},
	}, table.samples())

	upper := Sample{Offset: 275, At: unixSec(1597304481)}
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
		at, ok := appendTime(table, tc.c, upper)
		require.True(t, ok, "offset %d", tc.c)
		require.Equal(t, unixSec(tc.want), at, "offset %d", tc.c)
	}

	oldest, ok := oldestPoint(table)
	require.True(t, ok)
	require.Equal(t, Sample{Offset: 212, At: unixSec(1597304241)}, oldest)
	newest, ok := newestPoint(table)
	require.True(t, ok)
	require.Equal(t, Sample{Offset: 260, At: unixSec(1597304421)}, newest)
}

func TestOffsetTableEmpty(t *testing.T) {
	table := NewTable(8, 0)
	require.Zero(t, tableLen(table))
	_, ok := oldestPoint(table)
	require.False(t, ok)
	_, ok = newestPoint(table)
	require.False(t, ok)
	_, ok = appendTime(table, 0, Sample{Offset: 10, At: unixSec(100)})
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
	table := NewTable(1024, 0)
	for s := int64(0); s <= seconds; s++ {
		require.Equal(t, Appended, tableAddAt(table, rate*s, base+unixSec(s)))
	}
	require.Less(t, tableLen(table), (seconds+1)/2, "a straight line keeps points spaced in proportion to their age")
	upper := Sample{Offset: rate * (seconds + 1), At: base + unixSec(seconds+1)}
	for c := int64(0); c < rate*(seconds+1); c++ {
		at, ok := appendTime(table, c, upper)
		require.True(t, ok, "offset %d", c)
		require.Equal(t, base+c*int64(time.Second)/rate, at, "offset %d", c)
	}
}

func TestOffsetTableNoExtrapolation(t *testing.T) {
	newTable := func() *Table {
		table := NewTable(8, 0)
		tableAddAt(table, 1000, unixSec(100))
		tableAddAt(table, 1100, unixSec(110))
		tableAddAt(table, 1200, unixSec(120))
		return table
	}
	validUpper := Sample{Offset: 1300, At: unixSec(130)}

	t.Run("below the oldest point", func(t *testing.T) {
		table := newTable()
		for _, c := range []int64{0, 500, 999} {
			_, ok := appendTime(table, c, validUpper)
			require.False(t, ok, "offset %d predates the table", c)
		}
	})

	t.Run("above every point without a usable upper bracket", func(t *testing.T) {
		table := newTable()
		for name, upper := range map[string]Sample{
			"zero":                 {},
			"offset equal to c":    {Offset: 1250, At: unixSec(130)},
			"offset below c":       {Offset: 1210, At: unixSec(130)},
			"offset equal to last": {Offset: 1200, At: unixSec(130)},
			"same time as last":    {Offset: 1300, At: unixSec(120)},
			"older than last":      {Offset: 1300, At: unixSec(115)},
		} {
			_, ok := appendTime(table, 1250, upper)
			require.False(t, ok, "upper bracket %q must not be used", name)
		}
		// c at the newest point's offset is at or above every point too.
		_, ok := appendTime(table, 1200, Sample{Offset: 1200, At: unixSec(130)})
		require.False(t, ok)
	})

	t.Run("above every point with a valid upper bracket", func(t *testing.T) {
		table := newTable()
		for _, tc := range []struct{ c, want int64 }{
			{c: 1200, want: unixSec(120)},
			{c: 1250, want: unixSec(125)},
			{c: 1299, want: unixSec(120) + 99*int64(time.Second)/10},
		} {
			at, ok := appendTime(table, tc.c, validUpper)
			require.True(t, ok, "offset %d", tc.c)
			require.Equal(t, tc.want, at, "offset %d", tc.c)
		}
		_, ok := appendTime(table, 1300, validUpper)
		require.False(t, ok, "the upper bracket's own offset is not below it")
	})

	t.Run("the upper bracket is ignored when a table point brackets c", func(t *testing.T) {
		table := newTable()
		at, ok := appendTime(table, 1050, Sample{})
		require.True(t, ok)
		require.Equal(t, unixSec(105), at)
	})
}

func TestOffsetTableFlatRuns(t *testing.T) {
	table := NewTable(16, 0)
	require.Equal(t, Appended, tableAddAt(table, 50, unixSec(90)))
	// A flat run at offset 100 observed from 100 s to 160 s.
	require.Equal(t, Appended, tableAddAt(table, 100, unixSec(100)))
	require.Equal(t, Appended, tableAddAt(table, 100, unixSec(110)))
	for s := int64(120); s <= 160; s += 10 {
		require.Equal(t, Merged, tableAddAt(table, 100, unixSec(s)))
		require.Equal(t, 3, tableLen(table), "a flat run keeps only its first and last points")
	}
	require.Equal(t, []Sample{{50, unixSec(90)}, {100, unixSec(100)}, {100, unixSec(160)}}, table.samples())

	require.Equal(t, Appended, tableAddAt(table, 200, unixSec(170)))
	require.Equal(t, []Sample{{50, unixSec(90)}, {100, unixSec(100)}, {100, unixSec(160)}, {200, unixSec(170)}}, table.samples())

	// Record 100 was appended after the run ended: the run's last point is
	// its lower bracket.
	at, ok := appendTime(table, 100, Sample{})
	require.True(t, ok)
	require.Equal(t, unixSec(160), at)
	at, ok = appendTime(table, 150, Sample{})
	require.True(t, ok)
	require.Equal(t, unixSec(165), at)
	// Records of the run's first point are interpolated before the run.
	at, ok = appendTime(table, 75, Sample{})
	require.True(t, ok)
	require.Equal(t, unixSec(95), at)

	// A table that starts flat keeps both ends too.
	table = NewTable(16, 0)
	for s := int64(0); s < 10; s++ {
		tableAddAt(table, 7, unixSec(s))
	}
	require.Equal(t, []Sample{{7, unixSec(0)}, {7, unixSec(9)}}, table.samples())
	at, ok = appendTime(table, 7, Sample{Offset: 8, At: unixSec(10)})
	require.True(t, ok)
	require.Equal(t, unixSec(9), at)
}

func TestOffsetTableReset(t *testing.T) {
	newTable := func() *Table {
		table := NewTable(16, 0)
		tableAddAt(table, 1000, unixSec(100))
		tableAddAt(table, 1100, unixSec(110))
		tableAddAt(table, 1200, unixSec(120))
		return table
	}
	before := newTable().samples()

	t.Run("offset backwards twice after the newest read: reset", func(t *testing.T) {
		table := newTable()
		sent := time.Unix(120, 1) // after the newest point was received
		require.Equal(t, Suspected, table.Add(5, sent, time.Unix(130, 0)))
		require.Equal(t, before, table.samples())
		// Sent before the first backward read was answered: no second
		// opinion.
		require.Equal(t, Ignored, table.Add(4, time.Unix(129, 0), time.Unix(131, 0)))
		require.Equal(t, Reset, table.Add(7, time.Unix(130, 1), time.Unix(132, 0)))
		require.Equal(t, []Sample{{5, unixSec(130)}, {7, unixSec(132)}}, table.samples())
		// The new log grows from there.
		require.Equal(t, Appended, tableAddAt(table, 25, unixSec(140)))
		at, ok := appendTime(table, 16, Sample{})
		require.True(t, ok)
		require.Equal(t, unixSec(136), at)
		_, ok = appendTime(table, 1, Sample{})
		require.False(t, ok, "nothing of the old log is left to interpolate from")
	})

	t.Run("confirmed below the first backward read: only the second stays", func(t *testing.T) {
		table := newTable()
		require.Equal(t, Suspected, table.Add(500, time.Unix(121, 0), time.Unix(130, 0)))
		require.Equal(t, Reset, table.Add(5, time.Unix(131, 0), time.Unix(140, 0)))
		require.Equal(t, []Sample{{5, unixSec(140)}}, table.samples())
	})

	t.Run("concurrent read served first: ignored", func(t *testing.T) {
		table := newTable()
		// Sent before the newest point's response arrived, received after.
		received := time.Unix(121, 0)
		sent := time.Unix(119, 0)
		require.Equal(t, Ignored, table.Add(1150, sent, received))
		require.Equal(t, before, table.samples())
		// Sent exactly when the newest response arrived: still concurrent.
		require.Equal(t, Ignored, table.Add(1150, time.Unix(120, 0), received))
		require.Equal(t, before, table.samples())
	})

	t.Run("older in time than the newest point: ignored", func(t *testing.T) {
		table := newTable()
		require.Equal(t, Ignored, tableAddAt(table, 1300, unixSec(115)))
		require.Equal(t, Ignored, tableAddAt(table, 1200, unixSec(120)))
		require.Equal(t, Ignored, tableAddAt(table, 1150, unixSec(119)+5*int64(time.Millisecond)))
		require.Equal(t, before, table.samples())
	})

	t.Run("same time as the newest point with a greater offset: refined", func(t *testing.T) {
		table := newTable()
		require.Equal(t, Merged, tableAddAt(table, 1250, unixSec(120)))
		require.Equal(t, []Sample{{1000, unixSec(100)}, {1100, unixSec(110)}, {1250, unixSec(120)}}, table.samples())
	})
}

func TestOffsetTableBound(t *testing.T) {
	for _, maxPoints := range []int{2, 3, 4, 5, 16, 100} {
		rng := rand.New(rand.NewSource(int64(maxPoints)))
		table := NewTable(maxPoints, 0)
		first := Sample{Offset: 10, At: unixSec(1000)}
		tableAddAt(table, first.Offset, first.At)
		offset, at := first.Offset, first.At
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
			oldest, _ := oldestPoint(table)
			require.Equal(t, first, oldest, "maxPoints %d: the first point must stay", maxPoints)
			newest, _ := newestPoint(table)
			require.Equal(t, Sample{Offset: offset, At: quantize(at)}, newest, "maxPoints %d: the last point must stay", maxPoints)
		}
	}
}

func TestOffsetTableMinimumBound(t *testing.T) {
	for _, maxPoints := range []int{-5, 0, 1, 2} {
		table := NewTable(maxPoints, 0)
		require.Equal(t, 2, int(table.maxPoints), "maxPoints %d", maxPoints)
		for s := int64(0); s < 50; s++ {
			tableAddAt(table, 10*s, unixSec(s))
			requireTableWellFormed(t, table)
		}
		require.Equal(t, []Sample{{0, unixSec(0)}, {490, unixSec(49)}}, table.samples())
		at, ok := appendTime(table, 245, Sample{})
		require.True(t, ok)
		require.Equal(t, unixSec(24)+int64(time.Second)/2, at)
	}
	require.Equal(t, int32(3), NewTable(3, 0).maxPoints)
}

// requireGapsOnPoints checks that every gap mark names a point of the table.
func requireGapsOnPoints(t testing.TB, table *Table) {
	t.Helper()
	ats := make(map[int64]bool, len(table.samples()))
	for _, p := range table.samples() {
		ats[p.At] = true
	}
	for at := range table.gaps {
		require.True(t, ats[at], "gap mark at %d names no point", at)
	}
}

func TestOffsetTableGaps(t *testing.T) {
	const maxGap = 30 * time.Second
	newTable := func() *Table {
		table := NewTable(64, maxGap)
		// Watched: 10 records a second, sampled every 10 s, up to 100 s.
		for s := int64(0); s <= 100; s += 10 {
			tableAddAt(table, 10*s, unixSec(s))
		}
		return table
	}

	t.Run("no gap while watched", func(t *testing.T) {
		table := newTable()
		require.Empty(t, table.gaps)
		upper := Sample{Offset: 1100, At: unixSec(110)}
		for c := int64(0); c < 1100; c += 7 {
			require.False(t, inGap(table, c, upper), "offset %d", c)
		}
	})

	t.Run("production while unwatched is a gap", func(t *testing.T) {
		table := newTable()
		// Down from 100 s to 400 s while 3000 records were appended.
		require.Equal(t, Appended, tableAddAt(table, 4000, unixSec(400)))
		require.Equal(t, Appended, tableAddAt(table, 4100, unixSec(410)))
		upper := Sample{Offset: 4200, At: unixSec(420)}
		require.False(t, inGap(table, 999, upper), "before the gap")
		for _, c := range []int64{1000, 2500, 3999} {
			require.True(t, inGap(table, c, upper), "offset %d is in the gap", c)
			at, ok := appendTime(table, c, upper)
			require.True(t, ok, "a gap is still interpolated; the caller decides")
			require.Equal(t, unixSec(100)+(c-1000)*int64(time.Second)/10, at)
		}
		require.False(t, inGap(table, 4000, upper), "after the gap")
		require.False(t, inGap(table, 4150, upper), "up to the upper bracket")
		// An upper bracket too far after the newest point is a gap too.
		require.True(t, inGap(table, 4150, Sample{Offset: 5000, At: unixSec(410) + int64(maxGap) + 1}))
		require.False(t, inGap(table, 4150, Sample{Offset: 5000, At: unixSec(410) + int64(maxGap)}))
		requireGapsOnPoints(t, table)
	})

	t.Run("unwatched without production is no gap", func(t *testing.T) {
		table := newTable()
		require.Equal(t, Appended, tableAddAt(table, 1000, unixSec(400)))
		require.Equal(t, Appended, tableAddAt(table, 1100, unixSec(410)))
		require.Empty(t, table.gaps)
		upper := Sample{Offset: 1200, At: unixSec(420)}
		for c := int64(0); c < 1200; c += 7 {
			require.False(t, inGap(table, c, upper), "offset %d", c)
		}
	})

	t.Run("maxGap 0 marks nothing", func(t *testing.T) {
		table := NewTable(64, 0)
		tableAddAt(table, 0, unixSec(0))
		tableAddAt(table, 1_000_000, unixSec(86400))
		require.Empty(t, table.gaps)
		require.False(t, inGap(table, 10, Sample{Offset: 2_000_000, At: unixSec(10 * 86400)}))
	})

	t.Run("a reset forgets gaps", func(t *testing.T) {
		table := newTable()
		tableAddAt(table, 4000, unixSec(400))
		require.Len(t, table.gaps, 1)
		require.Equal(t, Suspected, table.Add(3, time.Unix(401, 0), time.Unix(402, 0)))
		require.Len(t, table.gaps, 1, "one backward read changes nothing yet")
		require.Equal(t, Reset, table.Add(4, time.Unix(403, 0), time.Unix(404, 0)))
		require.Empty(t, table.gaps)
	})

	t.Run("thinning keeps the gap", func(t *testing.T) {
		table := NewTable(8, maxGap)
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
			upper := Sample{Offset: offset + 100, At: at + 10*int64(time.Second)}
			for c := gapFrom; c < gapTo; c += 997 {
				require.True(t, inGap(table, c, upper), "after %d adds, offset %d must still be in a gap", i, c)
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
// append times. Measured with this seed (167 points kept):
//
//	age      worst error   bound asserted
//	1 min    0.34 s        2 s
//	10 min   0.40 s        2 s
//	1 h      1.35 s        3.6 s
//	6 h      10.7 s        21.6 s
//	23 h     68.2 s        82.8 s
//
// Over every offset of the day the error stays within 1% of its age or one
// sampling interval, and beyond 10 minutes of age within 0.6% of it: an
// interval that saw a burst start is as coarse as the samples, whatever the
// thinning.
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
	table := NewTable(512, 0)
	for s := 0; s <= day; s += interval {
		require.NotEqual(t, Ignored, tableAddAt(table, traffic.cum[s], base+unixSec(int64(s))))
		requireTableWellFormed(t, table)
	}
	oldest, _ := oldestPoint(table)
	require.Equal(t, Sample{Offset: 0, At: base}, oldest, "the table must span the whole day")
	newest, _ := newestPoint(table)
	require.Equal(t, Sample{Offset: traffic.cum[day], At: base + unixSec(day)}, newest)
	t.Logf("points kept: %d of %d samples", tableLen(table), day/interval+1)

	now := day
	upper := Sample{Offset: traffic.cum[now], At: base + unixSec(int64(now))}
	errorAt := func(c int64) (err, age time.Duration) {
		truth := base + traffic.appendedAt(c)
		at, ok := appendTime(table, c, upper)
		require.True(t, ok, "offset %d", c)
		return time.Duration(abs(float64(at - truth))), time.Duration(upper.At - truth)
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
	require.LessOrEqual(t, worstRatio, 0.006, "beyond 10 minutes of age, the error stays within 0.6%% of it")
}

// steadyBenchTable returns a table with maxPoints 512 that has been thinning for a
// while, and the next time and offset to add.
func steadyBenchTable(tb testing.TB) (table *Table, offset, at int64) {
	tb.Helper()
	table = NewTable(512, 0)
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
	oldest, _ := oldestPoint(table)
	upper := Sample{Offset: offset + 1000, At: at + 10*int64(time.Second)}
	rng := rand.New(rand.NewSource(9))
	queries := make([]int64, 4096)
	for i := range queries {
		queries[i] = oldest.Offset + rng.Int63n(upper.Offset-oldest.Offset)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok := appendTime(table, queries[i%len(queries)], upper); !ok {
			b.Fatal("no estimate inside the table")
		}
	}
}

// After a leader change on brokers that do not fence stale leaders, the new
// leader can answer an end offset below the old one's for a read or two.
// One such read must not wipe the table: a reset needs a second read below
// the table's newest offset, sent after the first was answered.
func TestLeaderChangeBackwardReadKeepsHistory(t *testing.T) {
	table := NewTable(16, 0)
	tableAddAt(table, 1000, unixSec(100))
	tableAddAt(table, 1100, unixSec(110))
	tableAddAt(table, 1200, unixSec(120))
	before := append([]Sample(nil), table.samples()...)

	// The new leader lags behind for one read.
	require.NotEqual(t, Reset, tableAddAt(table, 1150, unixSec(130)))
	require.Equal(t, before, table.samples(), "one backward read changes nothing")
	_, ok := appendTime(table, 1050, Sample{Offset: 1150, At: unixSec(130)})
	require.False(t, ok, "while a reset is suspected, the table dates nothing: it may be the old log's")

	// It catches up: the table goes on where it was.
	require.Equal(t, Appended, tableAddAt(table, 1300, unixSec(140)))
	require.Equal(t, append(before, Sample{1300, unixSec(140)}), table.samples())
	at, ok := appendTime(table, 1050, Sample{})
	require.True(t, ok)
	require.Equal(t, unixSec(105), at)

	// A log that really went backwards is seen so twice: the table then
	// restarts from the first of the two reads.
	require.NotEqual(t, Reset, tableAddAt(table, 5, unixSec(150)))
	require.Equal(t, Reset, tableAddAt(table, 25, unixSec(160)))
	require.Equal(t, []Sample{{5, unixSec(150)}, {25, unixSec(160)}}, table.samples())
}

// A thinned table's segments may hold points whose removal no tolerance
// bounds: up to its last thinning a bracket's Spread is its width, also
// once restored; after it, a segment merged by simplification alone is
// dated to within the widest sample and the tolerance.
func TestThinnedSegmentsAreBoundByTheirWidth(t *testing.T) {
	table := NewTable(32, 0)
	rng := rand.New(rand.NewSource(3))
	base := unixSec(1_700_000_000)
	offset := int64(0)
	s := int64(0)
	add := func(n int, burst func() int64) {
		for range n {
			offset += burst()
			tableAddAt(table, offset, base+unixSec(s))
			s += 10
		}
	}
	// Bursts no line follows, then an hour of steady production.
	add(200, func() int64 { return rng.Int63n(5000) })
	thinnedUntil := table.widthBoundUntil
	require.Positive(t, thinnedUntil, "the bursts overflowed the table: it thinned")
	add(360, func() int64 { return 2000 })
	require.Equal(t, thinnedUntil, table.widthBoundUntil, "the steady hour only simplified")

	out, err := decodeAll(encodeState("", []storedTable{{tp: kafka.TopicPartition{Topic: "t"}, table: table}}), 32, 0)
	require.NoError(t, err)
	restored := out[0].table
	upper := Sample{Offset: offset + 1, At: base + unixSec(s)}
	var merged int
	var widest int64
	for _, tbl := range []*Table{table, restored} {
		for _, p := range tbl.samples() {
			b, ok := tbl.Bracket(p.Offset, upper)
			require.True(t, ok)
			width := b.Hi.At - b.Lo.At
			if b.Hi.At <= thinnedUntil {
				require.Equal(t, width, b.Spread, "thinned: bound by its width")
				continue
			}
			require.Equal(t, min(width, unixSec(10)+simplifyTolerance(upper.At-unixSec(10)-b.Lo.At)), b.Spread,
				"simplified: a sample and the tolerance, not the segment's width")
			if b.Spread < width {
				merged++
				widest = max(widest, width)
			}
		}
	}
	require.Positive(t, merged)
	require.GreaterOrEqual(t, widest, unixSec(600), "the steady hour merged into segments many samples wide")
}

// A partition written once a second and sampled four times a second is a
// staircase: each write a point, each flat run's end another, their time
// deltas alternating 250 and 750 ms. Told against the delta two points
// before, a step packs into two bytes and a flat run's end into one, where
// two varints each took six bytes a pair; and both round-trip, through the
// table and through saved state of this version and of version 5.
func TestStaircasePacksIntoThreeBytesAPair(t *testing.T) {
	table := NewTable(1000, 0)
	base := unixSec(1_700_000_000)
	var want []Sample
	offset := int64(0)
	for second := range int64(20) {
		offset += 20
		for quarter := range int64(4) {
			tableAddAt(table, offset, base+unixSec(second)+quarter*int64(250*time.Millisecond))
		}
		at := base + unixSec(second)
		want = append(want, Sample{offset, at}, Sample{offset, at + int64(750*time.Millisecond)})
	}
	require.Equal(t, want, table.samples())
	// 40 points: the first and the newest as they are, 38 packed in two
	// runs (32 and 6), flat ends and steps in turn. The first two of a run
	// tell their time deltas whole: a flat end of 750 ms in 2 bytes, a step
	// of 20 records and 250 ms in 3. The others: a flat end in 1 byte, a
	// step in 2.
	runStart := 2 + 3
	require.Len(t, table.packed, runStart+15*(1+2)+runStart+2*(1+2))

	tables := []storedTable{{tp: kafka.TopicPartition{Topic: "stairs", Partition: 0}, table: table}}
	for _, data := range [][]byte{encodeState("", tables), encodeStateVersion5(stateVersionTwoVarintPoints, tables)} {
		out, err := decodeAll(data, 1000, 0)
		require.NoError(t, err)
		require.Equal(t, want, out[0].table.samples())
		require.Equal(t, table.packed, out[0].table.packed)
	}
}

// An end offset is never negative; a read that says one is not a point.
func TestNegativeEndOffsetIsIgnored(t *testing.T) {
	table := NewTable(16, 0)
	require.Equal(t, Ignored, tableAddAt(table, -1, unixSec(100)))
	require.Equal(t, 0, tableLen(table))
	require.Equal(t, Appended, tableAddAt(table, 5, unixSec(101)))
	require.Equal(t, Ignored, tableAddAt(table, -1, unixSec(102)))
	require.Equal(t, []Sample{{5, unixSec(101)}}, table.samples())
}

// A search starts at the mark before its answer, which keeps the mark's
// time in fewer bits than a Sample: every time a table can hold, from
// before 1970 to the end of int64, still finds every bracket.
func TestMarksFindBracketsAtAnyTime(t *testing.T) {
	for _, start := range []int64{-unixSec(1_000_000_000), 0, unixSec(1_700_000_000), math.MaxInt64 - unixSec(10_000)} {
		table := NewTable(1000, 0)
		for i := range int64(300) {
			// Alternate strides, so that simplification keeps every point.
			tableAddAt(table, i*10+i%2*7, start+unixSec(i*10+i%3))
		}
		points := table.samples()
		require.Greater(t, len(points), 3*markEvery, "start %d", start)
		for i := 1; i < len(points); i++ {
			lo, hi := points[i-1], points[i]
			b, ok := table.Bracket(lo.Offset, Sample{})
			require.True(t, ok, "start %d, offset %d", start, lo.Offset)
			require.Equal(t, lo, b.Lo, "start %d, offset %d", start, lo.Offset)
			require.Equal(t, hi, b.Hi, "start %d, offset %d", start, lo.Offset)
		}
	}
}
