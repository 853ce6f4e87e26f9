//go:build !unit

package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// TestTrueTimeLagFromTheWrites: the truth is the age of the record at the
// committed offset by its write's timestamp, 0 before anything was appended
// there, unknown before the log starts.
func TestTrueTimeLagFromTheWrites(t *testing.T) {
	start := time.Now().Truncate(time.Millisecond)
	log := newAppendLog(0)
	write := func(first, n int64, at time.Time) {
		var results kgo.ProduceResults
		for o := first; o < first+n; o++ {
			results = append(results, kgo.ProduceResult{Record: &kgo.Record{Topic: "t", Partition: 3, Offset: o, Timestamp: at}})
		}
		log.note(results)
	}
	write(10, 2, start)
	write(12, 3, start.Add(time.Second))
	key := partitionKey{"t", 3}
	scrape := start.Add(1500 * time.Millisecond).UnixNano()
	for _, tc := range []struct {
		offset int64
		want   float64
		known  bool
	}{
		{9, 0, false},   // before the log
		{10, 1.5, true}, // the first write's
		{11, 1.5, true},
		{12, 0.5, true}, // the second write's
		{15, 0, true},   // nothing there yet: caught up
	} {
		got, known := log.trueTimeLag(key, tc.offset, scrape)
		require.Equal(t, tc.known, known, "offset %d", tc.offset)
		require.InDelta(t, tc.want, got, 1e-9, "offset %d", tc.offset)
	}
	got, known := log.trueTimeLag(key, 12, start.Add(500*time.Millisecond).UnixNano())
	require.True(t, known)
	require.Zero(t, got, "written after the scrape: caught up at the scrape")
	_, known = log.trueTimeLag(partitionKey{"t", 4}, 10, scrape)
	require.False(t, known, "another partition")
}

// TestAccuracyCheckComparesEachPair: each pair's exported time lag against
// the truth at its committed offset, by the target's bound; a pair without
// a time lag is counted apart.
func TestAccuracyCheckComparesEachPair(t *testing.T) {
	start := time.Now().Truncate(time.Millisecond)
	log := newAppendLog(0)
	log.note(kgo.ProduceResults{
		{Record: &kgo.Record{Topic: "t", Partition: 0, Offset: 0, Timestamp: start}},
		{Record: &kgo.Record{Topic: "t", Partition: 0, Offset: 1, Timestamp: start}},
	})
	check := newAccuracyCheck(log, 5*time.Second)
	scrape := start.Add(10 * time.Second)
	md := pmetric.NewMetrics()
	ms := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics()
	offsets, lags := ms.AppendEmpty(), ms.AppendEmpty()
	offsets.SetName(offsetMetric)
	lags.SetName(timeLagMetric)
	put := func(dps pmetric.NumberDataPointSlice, group string) pmetric.NumberDataPoint {
		dp := dps.AppendEmpty()
		dp.SetTimestamp(pcommon.NewTimestampFromTime(scrape))
		dp.Attributes().PutStr("group", group)
		dp.Attributes().PutStr("topic", "t")
		dp.Attributes().PutInt("partition", 0)
		return dp
	}
	od, ld := offsets.SetEmptyGauge().DataPoints(), lags.SetEmptyGauge().DataPoints()
	put(od, "near").SetIntValue(1)
	put(ld, "near").SetDoubleValue(10.25) // truth 10 s: 0.25 s off
	put(od, "undated").SetIntValue(0)
	check.observe(md)

	s := check.summary([]time.Time{scrape}, 2)
	require.Equal(t, 1, s.pairs)
	require.Equal(t, 1, s.undated)
	require.InDelta(t, 0.25, s.p95, 1e-9)
	require.InDelta(t, 0.5, s.ratio95, 1e-9, "0.25 s against max(0.5 s, 0.1 s)")
	require.Zero(t, check.summary([]time.Time{start}, 2).pairs, "another scrape")
	require.Zero(t, check.summary([]time.Time{scrape}, 3).scrapes, "a scrape not all of whose pairs arrived")
}

// TestAccuracyTruthTakesTheWritersSkewOut: with -busy-clock-skew the
// records are stamped by a clock that is off; the truth is when they were
// written by the broker's clock.
func TestAccuracyTruthTakesTheWritersSkewOut(t *testing.T) {
	start := time.Now().Truncate(time.Millisecond)
	log := newAppendLog(-1500 * time.Millisecond) // the writer's clock is 1.5 s behind
	log.note(kgo.ProduceResults{{Record: &kgo.Record{Topic: "t", Partition: 0, Offset: 0, Timestamp: start}}})
	marks := log.marks[partitionKey{"t", 0}]
	require.Len(t, marks, 1)
	require.Equal(t, start.Add(1500*time.Millisecond).UnixNano(), marks[0].stamp)
}
