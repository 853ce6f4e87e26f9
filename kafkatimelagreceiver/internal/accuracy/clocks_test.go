package accuracy

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNTPKeepsClocksBounded: a clock whose oscillator drifts (10 ppm
// spread) stays, under NTP, within the drift of one poll of its residual
// offset at every instant after its first poll, NTP's slew never exceeds
// 500 ppm, and without NTP the same drift accumulates.
func TestNTPKeepsClocksBounded(t *testing.T) {
	m := DefaultProducers()
	m.SkewSigma, m.DriftPPM = 20*ms, 10
	free := m
	free.FreeRunning = true
	const span = 3 * hour
	for seed := uint64(1); seed <= 20; seed++ {
		c := m.newClock(rand.New(rand.NewPCG(seed, 1)), Epoch, Epoch+span, ClockStep{})
		f := free.newClock(rand.New(rand.NewPCG(seed, 1)), Epoch, Epoch+span, ClockStep{})
		residual, drift := c.pieces[0].offset, c.pieces[0].rate
		require.Equal(t, residual, f.pieces[0].offset, "seed %d: the same residual with and without NTP", seed)
		bound := int64(math.Abs(drift)*float64(NTPPoll)) + 1000
		for at := Epoch + NTPPoll; at < Epoch+span; at += 7 * second {
			require.LessOrEqual(t, abs(c.at(at)-residual), bound, "seed %d, at %d s: offset from the residual, drift %.1f ppm", seed, (at-Epoch)/second, drift*1e6)
		}
		for _, p := range c.pieces {
			require.LessOrEqual(t, math.Abs(p.rate-drift), NTPMaxSlewPPM*1e-6+1e-12, "seed %d: slew at %d s", seed, (p.from-Epoch)/second)
		}
		grown := f.at(Epoch+span) - residual
		assert.InDelta(t, drift*float64(span), float64(grown), 1000, "seed %d: free-running, the drift accumulates", seed)
	}
}

// TestNTPStepsAKnockedClock: a clock knocked 1 s behind stays behind
// (over the step threshold, NTP takes it for a spike) until the offset has
// lasted the stepout, and is stepped back to its residual within a poll
// after that; a knock under the threshold is slewed away at 500 ppm.
func TestNTPStepsAKnockedClock(t *testing.T) {
	m := DefaultProducers()
	m.DriftPPM = 0
	for seed := uint64(1); seed <= 20; seed++ {
		knock := ClockStep{By: -second, After: 10 * minute, Within: 10 * minute}
		c := m.newClock(rand.New(rand.NewPCG(seed, 1)), Epoch, Epoch+hour, knock)
		residual := c.pieces[0].offset
		var knockedAt, steppedAt int64 = -1, -1
		for at := Epoch; at < Epoch+hour; at += 100 * ms {
			off := c.at(at) - residual
			if knockedAt < 0 && off <= -900*ms {
				knockedAt = at
			}
			if knockedAt >= 0 && steppedAt < 0 && abs(off) < ms {
				steppedAt = at
			}
		}
		require.GreaterOrEqual(t, knockedAt, Epoch+10*minute, "seed %d: knocked", seed)
		require.Positive(t, steppedAt, "seed %d: stepped back", seed)
		held := steppedAt - knockedAt
		assert.GreaterOrEqual(t, held, NTPStepout, "seed %d: the offset lasts the stepout", seed)
		assert.LessOrEqual(t, held, NTPStepout+2*NTPPoll+100*ms, "seed %d: and is stepped within two polls of it", seed)

		small := ClockStep{By: 100 * ms, After: 10 * minute, Within: 10 * minute}
		c = m.newClock(rand.New(rand.NewPCG(seed, 1)), Epoch, Epoch+hour, small)
		for _, p := range c.pieces[1:] {
			assert.LessOrEqual(t, math.Abs(p.rate), NTPMaxSlewPPM*1e-6+1e-12, "seed %d: slewed, not stepped", seed)
		}
		// 100 ms at 0.5 ms/s takes 200 s, then within a poll of none.
		assert.Less(t, abs(c.at(Epoch+20*minute+200*second+2*NTPPoll)-residual), ms, "seed %d: slewed away", seed)
	}
}
