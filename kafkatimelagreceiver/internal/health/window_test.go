package health

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/tracks"
)

// windowStatus is Burrow's rules read straight off a window of points: the
// reference the run lengths of lagWindow must agree with.
func windowStatus(pts []lagPoint, window int, noMembers bool) Status {
	for i := 1; i < len(pts); i++ {
		if pts[i].committed < pts[i-1].committed {
			return StatusRewind
		}
	}
	if len(pts) < window || len(pts) < 2 {
		return StatusOK
	}
	lagging, unchanged, growing := true, true, true
	for i, p := range pts {
		if p.lag <= 0 {
			lagging = false
		}
		if i > 0 {
			if p.committed != pts[i-1].committed {
				unchanged = false
			}
			if p.lag <= pts[i-1].lag {
				growing = false
			}
		}
	}
	switch {
	case lagging && unchanged && noMembers:
		return StatusStop
	case lagging && unchanged:
		return StatusStall
	case !unchanged && growing:
		return StatusWarn
	}
	return StatusOK
}

// The tracker keeps run lengths, not the window's points: on random
// histories its status must be the one read off the last window of points.
func TestLagWindowMatchesWindowOfPoints(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 20000 {
		window := 2 + rng.IntN(6)
		noMembers := rng.IntN(2) == 0
		var w lagWindow
		var history []lagPoint
		committed, lag := int64(rng.IntN(5)), int64(rng.IntN(3))
		for range 1 + rng.IntN(25) {
			// Small steps, so that equal offsets and equal lags are common.
			switch rng.IntN(6) {
			case 0:
				committed -= int64(rng.IntN(3))
			case 1, 2:
				committed += int64(rng.IntN(3))
			}
			lag = max(0, lag+int64(rng.IntN(5))-2)
			p := lagPoint{committed: committed, lag: lag}
			w.add(p, window)
			history = append(history, p)
			last := history[max(0, len(history)-window):]
			require.Equal(t, windowStatus(last, window, noMembers), w.status(window, noMembers),
				"trial %d, window %d, no members %v, history %v", trial, window, noMembers, history)
		}
	}
}

// The tracker holds one track per (group, partition) of the cluster, and
// its size does not depend on the window.
func TestPairTrackSize(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("sizes are those of a 64-bit platform")
	}
	require.Equal(t, uintptr(48), unsafe.Sizeof(tracks.Track[lagWindow]{}))
}
