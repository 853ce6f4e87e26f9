package accuracy

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// targetSubset is every idealized shape, each cut to the stretch that
// shows what the shape is about, and the realistic shapes as the
// evaluation runs them.
func targetSubset() []Shape {
	var out []Shape
	for _, s := range Shapes() {
		switch s.Key {
		case "diurnal":
			// The climb to the peak, where the group falls behind.
			s.History, s.Duration = 5*hour, 2*hour
		case "replay":
			s.Duration = 3 * hour // the reset comes 2 h in
		case "retention":
			// The group restarts 2 h in, and catches up.
		default:
			s.Duration = min(s.Duration, 2*hour)
		}
		out = append(out, s)
	}
	return append(out, RealisticShapes()...)
}

// TestIdlePartitionIsWithheldNotGuessed: on a topic idle since watching
// started, the receiver sends no time lag it cannot show right: every
// scrape of the idle shape is without an estimate.
func TestIdlePartitionIsWithheldNotGuessed(t *testing.T) {
	for _, shape := range targetSubset() {
		if shape.Key != "idle" {
			continue
		}
		for _, iv := range Intervals() {
			st := Score(Run(shape, iv, []MethodSpec{Receiver}, 1)[0].Points, iv.Sampling)
			assert.Equal(t, 1.0, st.NoEstimate, "sampling %s: share of scrapes without an estimate", intervalName(iv))
		}
	}
}

// TestCompactedHistoryIsRightOrWithheld: on the compacted shape every time
// lag the receiver sends is within the target of the truth (the next
// record left's append) and the sampling interval, and more than 60 % of
// the scrapes have one; the tables alone send none (a table cannot tell
// which offsets hold records).
func TestCompactedHistoryIsRightOrWithheld(t *testing.T) {
	for _, shape := range Shapes() {
		if shape.Key != "compacted" {
			continue
		}
		shape.Duration = hour
		for _, iv := range Intervals() {
			series := Run(shape, iv, []MethodSpec{Receiver, ReceiverRecordReads, ReceiverTablesOnly}, 1)
			for _, s := range series[:2] {
				dated := 0
				for _, p := range s.Points {
					if !p.Estimated {
						continue
					}
					dated++
					require.LessOrEqual(t, math.Abs(p.Estimate-p.Truth), AbsoluteBound(p.Truth)+float64(iv.Sampling)/1e9,
						"%s, sampling %s, at %d s: estimate %.3f s, truth %.3f s", s.Method.Name, intervalName(iv), (p.At-Epoch-shape.History)/1e9, p.Estimate, p.Truth)
				}
				require.Greater(t, dated, len(s.Points)*3/5, "%s, sampling %s: scrapes with a time lag", s.Method.Name, intervalName(iv))
			}
			require.Equal(t, 1.0, Score(series[2].Points, iv.Sampling).NoEstimate, "sampling %s: the tables alone withhold", intervalName(iv))
		}
	}
}

// TestProducerClocksAreMeasured: where producers' clocks are off (1.5 s
// behind and 0.3 s ahead), the receiver measures each producer's clock
// from the records it reads and dates their records to within tens of
// milliseconds, where trusting the clocks as they stand is off by up to
// the skew at every sampling interval.
func TestProducerClocksAreMeasured(t *testing.T) {
	shape := shapeByKey(t, "skew")
	shape.Duration = 2 * hour
	for _, iv := range Intervals() {
		series := Run(shape, iv, []MethodSpec{ReceiverRecordReads, TrustClocks}, 1)
		measured, trusted := Score(series[0].Points, iv.Sampling), Score(series[1].Points, iv.Sampling)
		t.Logf("sampling %s: p95 error %.3f s measured, %.3f s trusted", intervalName(iv), measured.P95, trusted.P95)
		assert.True(t, measured.Met(), "sampling %s: the target (ratio %.2f)", intervalName(iv), measured.TargetP95)
		assert.Less(t, measured.P95, 0.05, "sampling %s: p95 error with the clocks measured", intervalName(iv))
		assert.Greater(t, trusted.P95, 0.29, "sampling %s: p95 error with the clocks trusted, against skews of 0.3 and 1.5 s", intervalName(iv))
	}
}

// TestEventTimeStampsDateNothing: producers stamping when their events
// happened (1 minute to 2 hours before the send, in no order) on the
// realistic steady traffic, the group 2 s behind. The receiver sends no
// time lag worse than its tables alone (max_record_reads_per_scrape: 0)
// would, and dates as many scrapes at every sampling interval; the same
// receiver trusting the stamps (TrustClocks), even clamped to their
// brackets, is worse.
func TestEventTimeStampsDateNothing(t *testing.T) {
	shape := shapeByKey(t, "real-eventtime")
	shape.Duration, shape.Partitions = hour, 2
	for _, iv := range Intervals() {
		series := Run(shape, iv, []MethodSpec{Receiver, ReceiverRecordReads, ReceiverTablesOnly, TrustClocks}, 1)
		tables := Score(series[2].Points, iv.Sampling)
		trusted := Score(series[3].Points, iv.Sampling)
		for _, s := range series[:2] {
			st := Score(s.Points, iv.Sampling)
			t.Logf("%s, sampling %s: p95 %.3f s, max %.3f s, %.1f %% without an estimate; tables only p95 %.3f s, max %.3f s, %.1f %%; stamps trusted p95 %.1f s",
				s.Method.Name, intervalName(iv), st.P95, st.Max, 100*st.NoEstimate, tables.P95, tables.Max, 100*tables.NoEstimate, trusted.P95)
			assert.LessOrEqual(t, st.Max, tables.Max+0.1, "%s, sampling %s: largest error against the tables'", s.Method.Name, intervalName(iv))
			assert.LessOrEqual(t, st.P95, tables.P95+0.01, "%s, sampling %s: p95 error against the tables'", s.Method.Name, intervalName(iv))
			assert.LessOrEqual(t, st.NoEstimate, tables.NoEstimate, "%s, sampling %s: scrapes without an estimate", s.Method.Name, intervalName(iv))
		}
		assert.Greater(t, trusted.P95, tables.P95+0.3, "sampling %s: stamps taken as append times, clamped to their brackets, are worse than the tables", intervalName(iv))
	}
}
