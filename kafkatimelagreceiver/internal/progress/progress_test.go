package progress

import (
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/tracks"
)

// t0 is the first scrape of every scenario, in unix nanoseconds.
var t0 = time.Unix(1_800_000_000, 0).UnixNano()

func at(seconds float64) int64 { return t0 + int64(seconds*float64(time.Second)) }

// pair is one partition's position in a scrape: its committed offset and
// its end offset (-1: not read).
type pair struct {
	committed, end int64
}

func lagsOf(group, topic string, pairs ...pair) []lag.PartitionLag {
	out := make([]lag.PartitionLag, len(pairs))
	for i, p := range pairs {
		pl := lag.PartitionLag{Group: group, TopicPartition: kafka.TopicPartition{Topic: topic, Partition: int32(i)}, Committed: p.committed}
		if p.end >= 0 {
			pl.HasEnd, pl.End, pl.Lag = true, p.end, max(0, p.end-p.committed)
		}
		out[i] = pl
	}
	return out
}

// scrape observes one group in a scrape of its own at sec and returns a
// copy of its progress.
func scrape(tr *Tracker, sec float64, lags []lag.PartitionLag) []Partition {
	tr.BeginScrape(time.Unix(0, at(sec)))
	out := append([]Partition(nil), tr.ObserveGroup(lags[0].Group, lags, at(sec))...)
	tr.EndScrape()
	return out
}

func TestConsumeRateSteady(t *testing.T) {
	tr := NewTracker(5 * time.Minute)
	var last []Partition
	// 120 records/s, committed every 30 s scrape, for 20 minutes.
	for sec := 0.0; sec <= 1200; sec += 30 {
		c := int64(120 * sec)
		last = scrape(tr, sec, lagsOf("g", "t", pair{c, c + 500}))
		switch {
		case sec < 75: // less than a quarter of the window seen
			require.False(t, last[0].HasConsumeRate, "at %v s", sec)
		default:
			require.True(t, last[0].HasConsumeRate, "at %v s", sec)
			require.InDelta(t, 120, last[0].ConsumeRate, 1e-9, "at %v s", sec)
		}
	}
}

// The rate is over about the window, not since the start: a consumer that
// sped up shows its new rate once a window has passed.
func TestConsumeRateFollowsTheWindow(t *testing.T) {
	tr := NewTracker(5 * time.Minute)
	c := int64(0)
	for sec := 30.0; sec <= 1200; sec += 30 {
		c += 30 * 100
		scrape(tr, sec, lagsOf("g", "t", pair{c, c}))
	}
	var rates []float64
	for sec := 1230.0; sec <= 1800; sec += 30 {
		c += 30 * 400
		rates = append(rates, scrape(tr, sec, lagsOf("g", "t", pair{c, c}))[0].ConsumeRate)
	}
	require.InDelta(t, 400, rates[len(rates)-1], 1e-9, "a window after the change: the new rate only")
	for i := 1; i < len(rates); i++ {
		require.GreaterOrEqual(t, rates[i], rates[i-1], "the rate moves from 100 to 400 without overshooting")
	}
	require.Less(t, rates[0], 200.0, "30 s after the change the window is still mostly the old rate")
}

// Whatever the scrape interval, the rate is over the window: a consumer
// that stops shows its old rate until the window reaches the stop and 0 once
// the window (and the checkpoint span around its start) is past it, falling
// in between without overshooting.
func TestConsumeRateWindowAtAnyScrapeInterval(t *testing.T) {
	const window = 300.0
	for _, interval := range []float64{1, 10, 30, 45, 60, 100, 400} {
		tr := NewTracker(window * time.Second)
		prev := 1.0
		for sec := 0.0; sec <= 3000; sec += interval {
			// 1 record/s until 1000 s, then nothing.
			c := int64(min(sec, 1000))
			p := scrape(tr, sec, lagsOf("g", "t", pair{c, 2000}))[0]
			if sec < window/4 {
				continue
			}
			require.True(t, p.HasConsumeRate, "interval %v s, at %v s", interval, sec)
			switch {
			case sec <= 1000:
				require.InDelta(t, 1, p.ConsumeRate, 1e-9, "interval %v s, at %v s", interval, sec)
			case sec >= 1000+window+window/2+interval:
				require.Zero(t, p.ConsumeRate, "interval %v s, at %v s", interval, sec)
			default:
				require.LessOrEqual(t, p.ConsumeRate, prev+1e-9, "interval %v s, at %v s", interval, sec)
			}
			prev = p.ConsumeRate
		}
	}
}

func TestConsumeRateRestartsOnRewindOrReset(t *testing.T) {
	tr := NewTracker(time.Minute)
	for sec := 0.0; sec <= 120; sec += 10 {
		p := scrape(tr, sec, lagsOf("g", "t", pair{int64(50 * sec), 10_000}))[0]
		require.Equal(t, sec >= 20, p.HasConsumeRate)
	}
	// Rewound by 1,000 records (a replay): no rate, never a negative one.
	p := scrape(tr, 130, lagsOf("g", "t", pair{5000, 10_000}))[0]
	require.False(t, p.HasConsumeRate)
	p = scrape(tr, 140, lagsOf("g", "t", pair{5000, 10_000}))[0]
	require.False(t, p.HasConsumeRate, "10 s is not yet a quarter of the window")
	p = scrape(tr, 150, lagsOf("g", "t", pair{6000, 10_000}))[0]
	require.True(t, p.HasConsumeRate)
	require.InDelta(t, 50, p.ConsumeRate, 1e-9, "the window restarted at the rewind")

	// Reset to the log start (offset 0): the same.
	p = scrape(tr, 160, lagsOf("g", "t", pair{0, 10_000}))[0]
	require.False(t, p.HasConsumeRate)
	p = scrape(tr, 180, lagsOf("g", "t", pair{0, 10_000}))[0]
	require.True(t, p.HasConsumeRate)
	require.Zero(t, p.ConsumeRate)
}

func TestConsumeRateRestartsWhenTheClockGoesBack(t *testing.T) {
	tr := NewTracker(time.Minute)
	for sec := 0.0; sec <= 60; sec += 10 {
		scrape(tr, sec, lagsOf("g", "t", pair{int64(10 * sec), 1000}))
	}
	p := scrape(tr, 30, lagsOf("g", "t", pair{700, 1000}))[0]
	require.False(t, p.HasConsumeRate, "a time before the last scrape restarts the window")
	require.Zero(t, p.Stuck)
}

func TestStuckTime(t *testing.T) {
	tr := NewTracker(time.Minute)
	// Moving with lag: never stuck.
	for sec := 0.0; sec <= 60; sec += 10 {
		p := scrape(tr, sec, lagsOf("g", "t", pair{int64(sec), int64(sec) + 100}))[0]
		require.True(t, p.HasStuck)
		require.Zero(t, p.Stuck)
	}
	// Stalls at 60 with lag: the clock starts at the first scrape that
	// saw it there, at 60 s.
	for sec := 70.0; sec <= 200; sec += 10 {
		p := scrape(tr, sec, lagsOf("g", "t", pair{60, 500}))[0]
		require.InDelta(t, sec-60, p.Stuck, 1e-9)
	}
	// An unknown lag neither starts nor stops the clock, and is not told.
	p := scrape(tr, 210, lagsOf("g", "t", pair{60, -1}))[0]
	require.False(t, p.HasStuck)
	p = scrape(tr, 220, lagsOf("g", "t", pair{60, 500}))[0]
	require.InDelta(t, 160, p.Stuck, 1e-9)
	// Moving again: 0.
	p = scrape(tr, 230, lagsOf("g", "t", pair{61, 500}))[0]
	require.Zero(t, p.Stuck)
}

// A caught-up group on an idle topic keeps its committed offset for ever:
// it is not stuck. When a record arrives, the clock starts then, not at the
// last commit.
func TestStuckTimeCaughtUpIdle(t *testing.T) {
	tr := NewTracker(time.Minute)
	for sec := 0.0; sec <= 3600; sec += 30 {
		p := scrape(tr, sec, lagsOf("g", "t", pair{42, 42}))[0]
		require.True(t, p.HasStuck)
		require.Zero(t, p.Stuck)
	}
	p := scrape(tr, 3630, lagsOf("g", "t", pair{42, 43}))[0]
	require.Zero(t, p.Stuck, "a record arrived: the group has had lag for at most one scrape")
	p = scrape(tr, 3660, lagsOf("g", "t", pair{42, 43}))[0]
	require.InDelta(t, 30, p.Stuck, 1e-9)
	p = scrape(tr, 3690, lagsOf("g", "t", pair{43, 43}))[0]
	require.Zero(t, p.Stuck)
}

func TestPartitionDrain(t *testing.T) {
	tr := NewTracker(time.Minute)
	withRate := func(lags []lag.PartitionLag, rate float64) []lag.PartitionLag {
		for i := range lags {
			lags[i].ProduceRate, lags[i].HasProduceRate = rate, true
		}
		return lags
	}
	// Produced at 10/s, consumed at 30/s from 6,000 behind.
	var p Partition
	for sec := 0.0; sec <= 120; sec += 10 {
		end := 6000 + int64(10*sec)
		c := int64(30 * sec)
		p = scrape(tr, sec, withRate(lagsOf("g", "t", pair{c, end}), 10))[0]
		if sec < 20 {
			require.False(t, p.HasDrain, "no rate yet")
		}
	}
	require.True(t, p.HasDrain)
	// lag 6000 + 1200 - 3600 = 3600 at 20/s net.
	require.InDelta(t, 180, p.Drain, 1e-9)

	// No production rate: no drain time, unless the lag is 0.
	p = scrape(tr, 130, lagsOf("g", "t", pair{3900, 7300}))[0]
	require.False(t, p.HasDrain)
	p = scrape(tr, 140, lagsOf("g", "t", pair{7400, 7400}))[0]
	require.True(t, p.HasDrain)
	require.Zero(t, p.Drain)
}

func TestForgetsGroupsAndPartitions(t *testing.T) {
	tr := NewTracker(time.Minute)
	for i := range 1000 {
		name := fmt.Sprintf("churn-%d", i)
		scrape(tr, float64(i), lagsOf(name, name, pair{1, 5}, pair{2, 5}))
		require.LessOrEqual(t, len(tr.groups), forgetAfter)
	}
	// A partition the group stops committing on goes after two scrapes.
	scrape(tr, 2000, lagsOf("g", "t", pair{1, 5}, pair{1, 5}))
	scrape(tr, 2010, lagsOf("g", "t", pair{1, 5}))
	require.Equal(t, 2, tr.groups["g"].pairs.Len())
	scrape(tr, 2020, lagsOf("g", "t", pair{1, 5}))
	require.Equal(t, 1, tr.groups["g"].pairs.Len())
}

// A scrape goes through every (group, partition) pair of the cluster: once
// a group's partitions are known, observing it again must not allocate.
func TestObserveGroupDoesNotAllocate(t *testing.T) {
	tr := NewTracker(time.Minute)
	pairs := make([]pair, 100)
	for i := range pairs {
		pairs[i] = pair{1, 5}
	}
	lags := lagsOf("g", "t", pairs...)
	sec := 0.0
	observe := func() {
		sec += 10
		tr.BeginScrape(time.Unix(0, at(sec)))
		tr.ObserveGroup("g", lags, at(sec))
		tr.EndScrape()
	}
	observe()
	require.Zero(t, testing.AllocsPerRun(10, observe))
}

// The tracker holds one track per (group, partition) pair of the cluster.
func TestPairSize(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("sizes are those of a 64-bit platform")
	}
	require.Equal(t, uintptr(64), unsafe.Sizeof(tracks.Track[pairProgress]{}))
}
