package progress

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// unpackedMarks is what the packed marks stand for: the samples in full.
type unpackedMarks []timetable.Sample

// observe is pairProgress.observe on full samples, without the stuck
// clock.
func (u unpackedMarks) observe(c, at, checkpointEvery int64) unpackedMarks {
	s := timetable.Sample{Offset: c, At: at}
	n := len(u)
	switch {
	case n == 0, c < u[n-1].Offset || at <= u[n-1].At:
		return unpackedMarks{s}
	case n > 1 && u[n-1].At-u[n-2].At < checkpointEvery:
		u[n-1] = s
		return u
	case n == marksKept:
		u = slices.Delete(u, 0, 1)
	}
	return append(u, s)
}

// Packed, a pair's marks are its samples to the millisecond: the same
// checkpoints, offsets exactly, times at most a millisecond early, rates
// within what a millisecond over the span makes.
func TestPackedMarksAreTheSamplesToTheMillisecond(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 55))
	const window = 10 * time.Second
	for trial := range 200 {
		var p pairProgress
		var u unpackedMarks
		now, offset := t0, int64(rng.IntN(1<<40))
		for step := range 60 {
			now += int64(rng.IntN(4000)) * int64(time.Millisecond) / 1 // up to 4 s
			now += int64(rng.IntN(1_000_000))                          // and a fraction of a millisecond
			switch rng.IntN(10) {
			case 0:
				offset -= int64(rng.IntN(50)) // a rewind
			case 1:
				now -= int64(5 * time.Second) // a clock stepped back
			default:
				offset += int64(rng.IntN(500))
			}
			p.observe(offset, now, int64(window)/2)
			u = u.observe(offset, now, int64(window)/2)
			var buf [marksKept]timetable.Sample
			got := p.marks.samples(&buf)
			require.Len(t, got, len(u), "trial %d step %d", trial, step)
			for i := range u {
				require.Equal(t, u[i].Offset, got[i].Offset, "trial %d step %d mark %d", trial, step, i)
				require.LessOrEqual(t, got[i].At, u[i].At, "trial %d step %d mark %d", trial, step, i)
				require.Less(t, u[i].At-got[i].At, int64(time.Millisecond), "trial %d step %d mark %d", trial, step, i)
			}
			want := timetable.RateOver(u, window)
			rate, ok := p.rate(window)
			require.Equal(t, want.OK, ok, "trial %d step %d: %v", trial, step, u)
			if ok {
				require.InEpsilon(t, want.PerSecond+1, rate+1, 0.01, "trial %d step %d", trial, step)
			}
		}
	}
}

// A mark that cannot be packed, too long after the first or too many
// records past it, drops the oldest marks until it can: no window needs
// marks that old, and the marks left stay exact.
func TestMarksTooFarPastTheFirstDropTheOldest(t *testing.T) {
	day := int64(24 * time.Hour)
	for _, tc := range []struct {
		name     string
		observed []timetable.Sample
		want     []timetable.Sample
	}{
		{
			name:     "49 days later, two marks left",
			observed: []timetable.Sample{{Offset: 0, At: t0}, {Offset: 10, At: t0 + 30*day}, {Offset: 20, At: t0 + 60*day}},
			want:     []timetable.Sample{{Offset: 10, At: t0 + 30*day}, {Offset: 20, At: t0 + 60*day}},
		},
		{
			name:     "more than 2^32 records past every mark: only the latest",
			observed: []timetable.Sample{{Offset: 0, At: t0}, {Offset: 10, At: t0 + day}, {Offset: math.MaxUint32 + 11, At: t0 + 2*day}},
			want:     []timetable.Sample{{Offset: math.MaxUint32 + 11, At: t0 + 2*day}},
		},
		{
			name:     "2^32 records past the first fit",
			observed: []timetable.Sample{{Offset: 0, At: t0}, {Offset: math.MaxUint32, At: t0 + day}},
			want:     []timetable.Sample{{Offset: 0, At: t0}, {Offset: math.MaxUint32, At: t0 + day}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p pairProgress
			for _, s := range tc.observed {
				p.observe(s.Offset, s.At, day/2)
			}
			var buf [marksKept]timetable.Sample
			require.Equal(t, tc.want, p.marks.samples(&buf))
		})
	}
}
