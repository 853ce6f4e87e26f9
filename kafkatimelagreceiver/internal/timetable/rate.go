package timetable

import (
	"sort"
	"time"
)

// minRateCoverage is the fraction of the window samples must span before
// they tell a rate: two points a moment apart (a sample and the scrape's
// own read finishing together) would make a rate of noise. A table's
// samples, read every sampling interval, tell it from minRateSpan where
// that is shorter: enough for a prediction within seconds of a start (a
// size retention margin), where a quarter of a 5-minute window would make
// it wait over a minute, and of a 24-hour one six hours.
const (
	minRateCoverage = 4
	minRateSpan     = 5 * time.Second
)

// Rate is a production rate in records per second; OK is false when the
// table could not tell it.
type Rate struct {
	PerSecond float64
	OK        bool
}

// Rate is how fast records were appended over the window ending at the
// table's newest point (see RateOver). Offsets never go down inside a
// table (a truncation resets it), so the rate is never negative.
func (t *Table) Rate(window time.Duration) Rate {
	if t.n < 2 || window <= 0 {
		return Rate{}
	}
	from := t.last.At - int64(window)
	if from <= t.first.At {
		return rateOfSpan(t.first, t.last, window, min(int64(window)/minRateCoverage, int64(minRateSpan)))
	}
	var fresh seek
	lo, hi, _ := t.find(func(p Sample) bool { return p.At > from }, &fresh)
	return rateSince(lo, hi, t.last, from, window)
}

// RateOver is how fast the offset of samples grew over the window ending
// at the newest one: the newest offset minus the offset window earlier
// (interpolated between the samples around that instant), divided by
// window. Samples younger than the window give the rate over what they
// span, once that is at least a quarter of the window. samples are oldest
// first, strictly increasing in time and non-decreasing in offset.
func RateOver(samples []Sample, window time.Duration) Rate {
	n := len(samples)
	if n < 2 || window <= 0 {
		return Rate{}
	}
	newest, oldest := samples[n-1], samples[0]
	from := newest.At - int64(window)
	if from <= oldest.At {
		return rateOfSpan(oldest, newest, window, int64(window)/minRateCoverage)
	}
	// First sample after from; samples[i-1] is at or before it.
	i := sort.Search(n, func(i int) bool { return samples[i].At > from })
	return rateSince(samples[i-1], samples[i], newest, from, window)
}

// rateOfSpan is the rate between oldest and newest, which span less than
// window: none when they span under least.
func rateOfSpan(oldest, newest Sample, window time.Duration, least int64) Rate {
	span := newest.At - oldest.At
	if span < least {
		return Rate{}
	}
	return Rate{PerSecond: float64(newest.Offset-oldest.Offset) / (float64(span) / 1e9), OK: true}
}

// rateSince is the rate over the window from from to newest.At, where lo
// and hi are the samples either side of from.
func rateSince(lo, hi, newest Sample, from int64, window time.Duration) Rate {
	// In differences from lo, so that float rounding of offsets near 2^62
	// cannot make the result negative: the part of lo..hi before from is at
	// most all of lo..hi, which is at most lo..newest.
	beforeFrom := float64(hi.Offset-lo.Offset) * (float64(from-lo.At) / float64(hi.At-lo.At))
	appended := max(0, float64(newest.Offset-lo.Offset)-beforeFrom)
	return Rate{PerSecond: appended / window.Seconds(), OK: true}
}

// ProduceRates returns the production rate (Table.Rate) of each table refs
// name, in order, under one lock; a zero Ref gives a zero Rate.
func (s *Store) ProduceRates(refs []Ref, window time.Duration) []Rate {
	s.mu.Lock()
	defer s.mu.Unlock()
	return View{s: s}.ProduceRates(refs, window)
}
