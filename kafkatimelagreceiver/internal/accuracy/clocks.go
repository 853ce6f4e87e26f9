package accuracy

import (
	"math"
	"math/rand/v2"
	"sort"
)

// How ntpd disciplines a host's clock, at its defaults (the ntpd manual
// and its miscopt page, tinker): the offset it measures is slewed away,
// at most at the kernel's slew limit; one over the step threshold is a
// spike, ignored until it has lasted the stepout, and then stepped.
const (
	// NTPPoll is the interval between NTP's offset measurements: minpoll
	// 6, 64 s, where ntpd and chrony start (both may lengthen it to 1024
	// s once settled, which only widens the drift's residual below).
	NTPPoll = 64 * second
	// NTPMaxSlewPPM is the most a slew changes the clock's rate: 500 ppm,
	// 0.5 ms a second (ntpd's and the kernel's limit).
	NTPMaxSlewPPM = 500.0
	// NTPStepThreshold is ntpd's step threshold: an offset above it is
	// stepped, not slewed.
	NTPStepThreshold = 128 * ms
	// NTPStepout is how long an offset above the step threshold must last
	// before ntpd steps the clock (tinker stepout, 900 s).
	NTPStepout = 900 * second
)

// ClockStep is a host's clock knocked off at one instant (a virtual
// machine resumed after a pause, its clock behind by the pause), which
// NTP then steps back.
type ClockStep struct {
	// By is how far the clock is knocked (negative: behind).
	By int64
	// After and Within place the knock uniformly in [After, After+Within)
	// from the start of the timeline.
	After, Within int64
}

// producerClock is one producer's clock: its offset from true time, piece
// by piece, as NTP keeps it (or as it runs free).
type producerClock struct {
	pieces []clockPiece // by from, ascending
}

// clockPiece is a stretch of a clock from from on: offset then, changing
// by rate seconds a second.
type clockPiece struct {
	from, offset int64
	rate         float64
}

// at is the clock's offset at t.
func (c producerClock) at(t int64) int64 {
	i := max(0, sort.Search(len(c.pieces), func(i int) bool { return c.pieces[i].from > t })-1)
	p := c.pieces[i]
	return p.offset + int64(p.rate*float64(t-p.from))
}

// newClock draws a producer's clock from from to to: a residual offset NTP
// cannot see (normal, SkewMean and SkewSigma: the paths to the time server
// asymmetric, the server's own error), and an oscillator off by a drift
// (normal, DriftPPM spread). Without NTP (FreeRunning) the drift
// accumulates; with it, every NTPPoll (at a random phase) the offset from
// the residual is measured and slewed away by the next poll, at most at
// NTPMaxSlewPPM, or, above NTPStepThreshold for NTPStepout, stepped. knock
// (when By is not 0) knocks the clock off once.
func (m ProducerModel) newClock(rng *rand.Rand, from, to int64, knock ClockStep) producerClock {
	n1, n2 := rng.NormFloat64(), rng.NormFloat64()
	residual := m.SkewMean + int64(float64(m.SkewSigma)*n1)
	drift := m.DriftPPM * 1e-6 * n2
	// The polls' phase comes from the same draws: drawing it would give a
	// model without NTP other traffic.
	phase := int64(mix(math.Float64bits(n1)^math.Float64bits(n2)<<1) % uint64(NTPPoll))
	if m.FreeRunning {
		return producerClock{pieces: []clockPiece{{from: from, offset: residual, rate: drift}}}
	}
	knockAt := int64(-1)
	if knock.By != 0 {
		knockAt = from + knock.After + rng.Int64N(knock.Within)
	}
	c := producerClock{pieces: []clockPiece{{from: from, offset: residual, rate: drift}}}
	offset, t, rate := residual, from, drift
	over := int64(-1) // since when the offset has been above the step threshold
	for poll := from + phase; poll < to; poll += NTPPoll {
		if knockAt > t && knockAt <= poll {
			offset += int64(rate*float64(knockAt-t)) + knock.By
			t = knockAt
			c.pieces = append(c.pieces, clockPiece{from: t, offset: offset, rate: rate})
		}
		offset += int64(rate * float64(poll-t))
		t = poll
		measured := offset - residual
		switch {
		case abs(measured) <= NTPStepThreshold:
			over = -1
			slew := max(-NTPMaxSlewPPM*1e-6, min(NTPMaxSlewPPM*1e-6, float64(measured)/float64(NTPPoll)))
			rate = drift - slew
		case over < 0:
			over, rate = poll, drift // a spike: not acted on yet
		case poll-over >= NTPStepout:
			over, offset, rate = -1, residual, drift // stepped
		}
		c.pieces = append(c.pieces, clockPiece{from: t, offset: offset, rate: rate})
	}
	return c
}

// mix is SplitMix64's finalizer: bits spread evenly over the word.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
