package timetable

import (
	"cmp"
	"slices"
	"time"
)

// A table drops points in two ways. It simplifies: every simplifyEvery
// appends it drops each point that the straight line between its
// neighbours predicts to within the simplification tolerance, so that a
// partition written at a steady or slowly changing rate keeps a few dozen
// points for a day. And when it still outgrows maxPoints, as one whose
// bursts no straight line follows does, it thins (see thin).

// simplifyEvery is how many appends a table takes between simplifications:
// the newest of them, not yet simplified, are each kept as sampled.
const simplifyEvery = 16

// simplifyAllEvery is how many appends a table takes between
// simplifications of all its points rather than the newest few dozen.
const simplifyAllEvery = 64

// The simplification tolerance is a time: simplifying moves the estimated
// append time of no offset by more than max(simplifyFloor, simplifyRatio x
// its age) from what the table would say had it kept every sample. Each
// point dropped moves estimates by at most half of that at its age; a
// region is simplified again only as it ages and its tolerance grows, so
// the drops add up to less than the whole (checked over a day of each
// shape by TestSimplifiedTableDatesEverySampleWithinTheTolerance). Error
// matters in proportion to the lag being measured; the floor keeps groups
// seconds behind dated to within tens of milliseconds. Dropping the first or last point of a flat run (when an offset
// was first and last the end, which is what dates the records of a
// partition written now and then) costs the run's length, so a staircase of
// records minutes apart keeps its steps for days.
const (
	simplifyFloor = int64(20 * time.Millisecond)
	simplifyRatio = 1.0 / 500
)

// simplifyTolerance is the simplification tolerance at an age.
func simplifyTolerance(age int64) int64 {
	return max(simplifyFloor, int64(simplifyRatio*float64(age)))
}

// maxWidthBoundSpan bounds the segment a simplification leaves where the
// table dates records only to within a segment's width (see
// widthBoundUntil), as a fraction of the age of its newer end: lag.Coarse
// reads the record when that is more than a tenth of the time lag, and a
// merged segment there must not look coarser than the samples it replaces.
// Elsewhere a merged segment's Spread is the tolerance, however wide it is.
const maxWidthBoundSpan = 0.1

// thinningResolutionWeight trades exactness against spread when thinning: a
// point whose removal costs no interpolation error is still worth keeping if
// its neighbours are far apart relative to its age. With this weight a
// constant-rate series settles into points spaced roughly in proportion to
// their age, so a group an hour behind is estimated from points about a
// minute apart and a group a day behind from points under an hour apart.
const thinningResolutionWeight = 0.02

// compactBuffers is compact's working storage. A store passes one to all
// its tables in turn, so that a table simplified or thinned leaves no
// garbage the size of its points behind: a busy partition's table is
// simplified every few seconds, and across thousands of them that garbage
// set how far the heap ran past what the tables hold.
type compactBuffers struct {
	points     []Sample
	candidates []thinCandidate
	removed    []bool
}

// compact simplifies the newest points; every simplifyAllEvery appends,
// or when the table is over its bound, it simplifies all of them (older
// points have a larger tolerance than when they were last looked at), thins
// the table if it is still over its bound, and packs it again. buf may be
// nil.
func (t *Table) compact(buf *compactBuffers) {
	if buf == nil {
		buf = &compactBuffers{}
	}
	t.sinceSimplified = 0
	t.sinceSimplifiedAll += simplifyEvery
	if t.n <= t.maxPoints && t.sinceSimplifiedAll < simplifyAllEvery {
		run := t.simplify(t.appendNewestRun(buf.points[:0]))
		t.replaceNewestRun(run)
		buf.points = run[:0]
		return
	}
	t.sinceSimplifiedAll = 0
	points := t.simplify(t.appendSamples(buf.points[:0]))
	if len(points) > int(t.maxPoints) {
		points = t.thin(points, buf)
	}
	t.setPoints(points)
	buf.points = points[:0]
}

// removalError is how far dropping cur moves the estimate of the offsets
// between prev and next: the two lines through cur and the one that
// replaces them differ most at cur's offset. At the end of a flat run
// (prev.Offset == cur.Offset) it is the run's length: the records above it
// would be dated from its start.
func removalError(prev, cur, next Sample) float64 {
	if next.Offset == prev.Offset {
		return 0 // inside a flat run: the endpoints say it all
	}
	return abs(float64(cur.At - Interpolate(prev, next, cur.Offset)))
}

// simplify drops, in passes, every interior point whose removal error is
// within the tolerance of its age, never two neighbours in one pass (each
// error is measured against the neighbours that stay). Gap ends and the
// points before them stay: dropping them would make watched time a gap.
// Where segments are bound by their width (widthBoundUntil), a point goes
// only if the segment left is narrow (maxWidthBoundSpan) and bound by its
// width too: a merged segment must not mix thinned pieces into one that
// Spread dates to within the tolerance.
func (t *Table) simplify(points []Sample) []Sample {
	if len(points) < 3 {
		return points
	}
	newest := points[len(points)-1].At
	for {
		kept := points[:1]
		removed, justRemoved := false, false
		for i := 1; i < len(points)-1; i++ {
			prev, cur, next := kept[len(kept)-1], points[i], points[i+1]
			if !justRemoved && !t.isGapEnd(cur) && !t.isGapEnd(next) && t.mayMerge(prev, cur, next, newest) &&
				removalError(prev, cur, next) <= max(float64(simplifyFloor), simplifyRatio*float64(newest-cur.At))/2 {
				removed, justRemoved = true, true
				continue
			}
			justRemoved = false
			kept = append(kept, cur)
		}
		points = append(kept, points[len(points)-1])
		if !removed || len(points) < 3 {
			return points
		}
	}
}

// mayMerge tells whether dropping cur keeps what Spread says of [prev, next]
// true (see simplify).
func (t *Table) mayMerge(prev, cur, next Sample, newest int64) bool {
	if cur.At > t.widthBoundUntil {
		return true
	}
	return next.At <= t.widthBoundUntil && float64(next.At-prev.At) <= maxWidthBoundSpan*float64(newest-next.At)
}

// thin removes interior points until the table holds three quarters of its
// bound, so that thinning runs once per maxPoints/4 appends rather than on
// every append. The first and last points always stay. A point's cost is the
// interpolation error its removal would introduce at its own offset plus a
// resolution term, both relative to its age: error matters in proportion to
// the lag being measured, so recent points are dear and old ones cheap.
// The points are thinned in place; buf may be nil.
func (t *Table) thin(points []Sample, buf *compactBuffers) []Sample {
	if buf == nil {
		buf = &compactBuffers{}
	}
	target := max(int(t.maxPoints)-int(t.maxPoints)/4, 2)
	for len(points) > target {
		newest := points[len(points)-1].At
		candidates := buf.candidates[:0]
		for i := 1; i < len(points)-1; i++ {
			prev, cur, next := points[i-1], points[i], points[i+1]
			span := float64(next.At - prev.At)
			age := float64(newest-cur.At) + 1
			candidates = append(candidates, thinCandidate{i, (removalError(prev, cur, next) + thinningResolutionWeight*span) / age})
		}
		buf.candidates = candidates
		slices.SortFunc(candidates, func(a, b thinCandidate) int { return cmp.Compare(a.cost, b.cost) })
		excess := len(points) - target
		remove := slices.Grow(buf.removed[:0], len(points))[:len(points)]
		clear(remove)
		buf.removed = remove
		removing := 0
		for _, c := range candidates {
			if removing == excess {
				break
			}
			// Removing two neighbours at once would make both costs wrong.
			if remove[c.index-1] || remove[c.index+1] {
				continue
			}
			remove[c.index] = true
			removing++
		}
		kept := points[:0]
		for i, p := range points {
			if !remove[i] {
				kept = append(kept, p)
				continue
			}
			// The merged segment is bound by its width only, and contains
			// the removed one's gap.
			t.widthBoundUntil = max(t.widthBoundUntil, points[i+1].At)
			if t.isGapEnd(p) {
				delete(t.gaps, p.At)
				t.markGapEnd(points[i+1].At)
			}
		}
		points = kept
	}
	return points
}

// thinCandidate is a point thin may remove, and what removing it costs.
type thinCandidate struct {
	index int
	cost  float64
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
