package health

import "math"

// lagPoint is a group's position on a partition at one scrape.
type lagPoint struct {
	committed int64
	lag       int64
}

// lagWindow holds what Burrow's rules ask of a partition's last `window`
// positions: the newest one and, for each rule, how many of the newest
// points or steps between them pass it (each at most the window). A run as
// long as the window means the whole window passes, so the rules are
// answered exactly without keeping the points themselves, in a size that
// does not grow with the window.
//
// The counts are 16 bits: a window is at most MaxWindow points, and the
// tracker keeps one lagWindow per (group, partition) pair of the cluster,
// where 8 bytes more a pair are 8 MB at a million pairs.
type lagWindow struct {
	last   lagPoint
	points uint16 // points seen, at most the window
	// lagging counts the newest points with a lag above 0; unchanged,
	// growing and ordered count the newest steps whose committed offset
	// stayed put, whose lag grew, and whose committed offset did not go
	// back.
	lagging, unchanged, growing, ordered uint16
}

// MaxWindow is the longest window a tracker judges on: its counts hold
// no more.
const MaxWindow = math.MaxUint16

func (w *lagWindow) add(p lagPoint, window int) {
	limit := uint16(window)
	run := func(n uint16, ok bool) uint16 {
		if !ok {
			return 0
		}
		return min(n+1, limit)
	}
	w.lagging = run(w.lagging, p.lag > 0)
	if w.points > 0 {
		w.unchanged = run(w.unchanged, p.committed == w.last.committed)
		w.growing = run(w.growing, p.lag > w.last.lag)
		w.ordered = run(w.ordered, p.committed >= w.last.committed)
	}
	w.points = min(w.points+1, limit)
	w.last = p
}

// steps is the number of steps between the window's points: a run of steps
// this long covers the whole window.
func (w lagWindow) steps() uint16 {
	return max(w.points, 1) - 1
}
