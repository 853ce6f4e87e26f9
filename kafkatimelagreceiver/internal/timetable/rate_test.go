package timetable

import (
	"math"
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// tableRate is Table.Rate's value, or -1 when it tells none.
func tableRate(t *Table, window time.Duration) float64 {
	r := t.Rate(window)
	if !r.OK {
		return -1
	}
	return r.PerSecond
}

func TestRateSteadyProduction(t *testing.T) {
	table := NewTable(512, 0)
	// 250 records/s, sampled every 10 s for 20 minutes.
	for sec := int64(0); sec <= 1200; sec += 10 {
		tableAddAt(table, 1000+250*sec, unixSec(sec))
	}
	require.InDelta(t, 250, tableRate(table, 5*time.Minute), 1e-9)
	// A window starting between two points reads the offset there from
	// the line between them.
	require.InDelta(t, 250, tableRate(table, 95*time.Second), 1e-9)
}

func TestRateOverTheWindowOnly(t *testing.T) {
	table := NewTable(512, 0)
	// 100 records/s for 10 minutes, then 400 records/s for 2 minutes.
	offset := int64(0)
	for sec := int64(0); sec <= 600; sec += 10 {
		offset = 100 * sec
		tableAddAt(table, offset, unixSec(sec))
	}
	for sec := int64(610); sec <= 720; sec += 10 {
		offset += 4000
		tableAddAt(table, offset, unixSec(sec))
	}
	require.InDelta(t, 400, tableRate(table, 2*time.Minute), 1e-9, "the last 2 minutes only")
	// 5 minutes: 3 minutes at 100/s and 2 at 400/s.
	require.InDelta(t, (180*100+120*400)/300.0, tableRate(table, 5*time.Minute), 1e-9)
}

func TestRateIdleAndFlatRuns(t *testing.T) {
	table := NewTable(512, 0)
	for sec := int64(0); sec <= 600; sec += 10 {
		tableAddAt(table, 42, unixSec(sec))
	}
	require.Equal(t, 2, tableLen(table), "a flat run keeps two points")
	require.Zero(t, tableRate(table, 5*time.Minute), "nothing appended: 0, not unknown")

	// A burst after an idle stretch counts over the whole window.
	tableAddAt(table, 42+3000, unixSec(610))
	require.InDelta(t, 3000.0/300, tableRate(table, 5*time.Minute), 1e-9)
}

func TestRateYoungTable(t *testing.T) {
	table := NewTable(512, 0)
	require.Equal(t, -1.0, tableRate(table, time.Minute), "empty")
	tableAddAt(table, 100, unixSec(0))
	require.Equal(t, -1.0, tableRate(table, time.Minute), "one point has no rate")
	tableAddAt(table, 110, unixSec(0)+int64(10*time.Millisecond))
	require.Equal(t, -1.0, tableRate(table, time.Minute), "two reads a moment apart are no rate")
	tableAddAt(table, 250, unixSec(15))
	require.InDelta(t, 10, tableRate(table, time.Minute), 1e-9, "a quarter of the window covered: the rate over it")
	require.Equal(t, -1.0, tableRate(table, 0))
	require.Equal(t, -1.0, tableRate(table, -time.Second))
	// A long window (the size retention margin's rate_window, 5 minutes by
	// default, up to a day) is told from 5 s of samples: a margin from the
	// first scrapes, not after a quarter of it.
	require.InDelta(t, 10, tableRate(table, 5*time.Minute), 1e-9, "15 s of samples of a 5-minute window")
	require.InDelta(t, 10, tableRate(table, 24*time.Hour), 1e-9, "15 s of samples of a day's window")
}

func TestRateAfterReset(t *testing.T) {
	table := NewTable(512, 0)
	for sec := int64(0); sec <= 300; sec += 10 {
		tableAddAt(table, 5000+10*sec, unixSec(sec))
	}
	tableAddAt(table, 7, unixSec(310)) // a reset is suspected at the first read below
	require.Equal(t, Reset, tableAddAt(table, 7, unixSec(311)), "and confirmed by the second")
	require.Equal(t, -1.0, tableRate(table, time.Minute), "the old log's offsets are not a rate of the new one")
	tableAddAt(table, 307, unixSec(340))
	require.InDelta(t, 10, tableRate(table, time.Minute), 1e-9)
}

func TestRateThinnedTable(t *testing.T) {
	// A day of jittery production into a 64-point table: thinning keeps
	// recent points dense, so the rate over the last 5 minutes stays right.
	table := NewTable(64, 0)
	rng := rand.New(rand.NewSource(3))
	offset, at := int64(0), int64(0)
	var history []Sample
	for at < unixSec(86400) {
		at += int64(float64(10*time.Second) * (0.9 + 0.2*rng.Float64()))
		offset += 500 + rng.Int63n(1000)
		tableAddAt(table, offset, at)
		history = append(history, Sample{Offset: offset, At: at})
	}
	requireTableWellFormed(t, table)
	newest := history[len(history)-1]
	from := newest.At - int64(5*time.Minute)
	i := 0
	for history[i+1].At <= from {
		i++
	}
	lo, hi := history[i], history[i+1]
	truthFrom := float64(lo.Offset) + float64(hi.Offset-lo.Offset)*float64(from-lo.At)/float64(hi.At-lo.At)
	truth := (float64(newest.Offset) - truthFrom) / 300
	require.InEpsilon(t, truth, tableRate(table, 5*time.Minute), 0.01)
}

func TestStoreProduceRates(t *testing.T) {
	s := NewStore(16, 0, nil)
	s.Track(partitionSet(tpA0, tpA1), time.Unix(0, 0), 0)
	for sec := int64(0); sec <= 120; sec += 10 {
		s.Record(offsetRead(sec, map[kafka.TopicPartition]int64{tpA0: 3 * sec, tpA1: 7}))
	}
	refs := s.Refs([]kafka.TopicPartition{tpA0, tpB0, tpA1})
	rates := s.ProduceRates(append(refs, Ref{}), time.Minute)
	require.Equal(t, []Rate{{PerSecond: 3, OK: true}, {}, {PerSecond: 0, OK: true}, {}}, rates)
	require.Empty(t, s.ProduceRates(nil, time.Minute))
}

// fuzzCheckRate fails when a table's production rate, over windows from a
// second to a week, is negative, NaN or infinite.
func fuzzCheckRate(t *testing.T, table *Table) {
	t.Helper()
	for _, window := range []time.Duration{time.Second, 5 * time.Minute, 7 * 24 * time.Hour} {
		r := table.Rate(window)
		if r.OK && (r.PerSecond < 0 || math.IsNaN(r.PerSecond) || math.IsInf(r.PerSecond, 0)) {
			t.Fatalf("rate over %s is %v for %+v", window, r.PerSecond, table.samples())
		}
	}
}
