package progress

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// steppedClock stands in for the monotonic clock of scrapes whose wall
// clock is stepped: wall(sec) is the wall time a scrape at sec seconds of
// monotonic time reads, step seconds ahead once stepped.
type steppedClock struct {
	step      float64
	monotonic map[int64]float64 // by wall time, the monotonic second
}

func (c *steppedClock) wall(sec float64) int64 {
	w := at(sec + c.step)
	if c.monotonic == nil {
		c.monotonic = map[int64]float64{}
	}
	c.monotonic[w] = sec
	return w
}

func (c *steppedClock) since(from, to time.Time) time.Duration {
	return time.Duration((c.monotonic[to.UnixNano()] - c.monotonic[from.UnixNano()]) * float64(time.Second))
}

func (c *steppedClock) scrape(tr *Tracker, sec float64, pairs ...pair) Partition {
	w := c.wall(sec)
	tr.BeginScrape(time.Unix(0, w))
	lags := lagsOf("g", "t", pairs...)
	out := tr.ObserveGroup("g", lags, w)[0]
	tr.EndScrape()
	return out
}

// TestStuckTimeIgnoresWallClockSteps: a wall clock stepped ahead by an
// hour (NTP at boot, a VM resumed) between two scrapes 10 s apart adds
// 10 s to a stuck clock, not an hour and 10 s; one stepped back by an hour
// does not restart it; and the consumption rate is what the group consumed
// over the time that passed.
func TestStuckTimeIgnoresWallClockSteps(t *testing.T) {
	for _, step := range []float64{3600, -3600} {
		clock := &steppedClock{}
		tr := NewTracker(time.Minute)
		tr.monotonic = clock.since
		var p Partition
		for sec := 0.0; sec <= 60; sec += 10 {
			p = clock.scrape(tr, sec, pair{60, 500}, pair{int64(10 * sec), int64(10*sec) + 50})
		}
		require.InDelta(t, 60, p.Stuck, 1e-9)
		clock.step = step
		p = clock.scrape(tr, 70, pair{60, 500}, pair{700, 750})
		require.InDelta(t, 70, p.Stuck, 1e-9, "stepped by %v s", step)
		p = clock.scrape(tr, 80, pair{60, 500}, pair{800, 850})
		require.InDelta(t, 80, p.Stuck, 1e-9, "stepped by %v s", step)

		moving := clock.scrape(tr, 90, pair{60, 500}, pair{900, 950})
		tr.BeginScrape(time.Unix(0, clock.wall(100)))
		parts := tr.ObserveGroup("g", lagsOf("g", "t", pair{60, 500}, pair{1000, 1050}), clock.wall(100))
		tr.EndScrape()
		require.True(t, moving.HasStuck)
		require.True(t, parts[1].HasConsumeRate, "stepped by %v s", step)
		require.InDelta(t, 10, parts[1].ConsumeRate, 1e-9, "stepped by %v s: 10 records/s throughout", step)
	}
}
