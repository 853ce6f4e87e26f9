package kafkatimelagreceiver

import (
	"sort"
	"time"
)

// offsetSample says: by time at, every record below offset had been appended
// to the partition (offset is the end offset, i.e. the next offset to be written).
type offsetSample struct {
	offset int64
	at     int64 // unix nanoseconds
}

// offsetTable is the interpolation table of one partition: end offsets sampled
// over time, strictly increasing in time and non-decreasing in offset. It is
// pure data: it does no I/O and never reads a clock; every time comes from the
// caller. It is not safe for concurrent use; tableStore guards it.
type offsetTable struct {
	points    []offsetSample
	maxPoints int
	// lastRead is when the request behind the newest point was received; an
	// older read that completes later must not be mistaken for a truncation.
	lastRead int64
	// maxGap is the longest time between two points that still counts as
	// watched (0: any). A longer segment, as when the collector was down or
	// Kafka unreachable, is a gap: production inside it was not observed, so
	// straight-line interpolation there is a guess the caller may replace.
	maxGap int64
	// gaps holds the times of the points that end a gap segment. Gaps are
	// rare, so a small map beats a flag in every point.
	gaps map[int64]struct{}
}

// thinningResolutionWeight trades exactness against spread when thinning: a
// point whose removal costs no interpolation error is still worth keeping if
// its neighbours are far apart relative to its age. With this weight a
// constant-rate series settles into points spaced roughly in proportion to
// their age, so a group an hour behind is estimated from points about a
// minute apart and a group a day behind from points under an hour apart.
const thinningResolutionWeight = 0.02

func newOffsetTable(maxPoints int) *offsetTable {
	if maxPoints < 2 {
		maxPoints = 2
	}
	return &offsetTable{maxPoints: maxPoints}
}

// addResult tells the caller what add did with an observation.
type addResult int

const (
	sampleAppended addResult = iota
	sampleMerged             // extended a flat run or refined the newest point
	sampleIgnored            // older than the newest point: a concurrent read finished late
	tableReset               // the end offset went backwards: the log was recreated or truncated
)

// add records that the end offset was `offset` for a request sent at `sent`
// whose response arrived at `received`. The point is stamped with `received`:
// the broker answered before then, so every record below offset existed by then.
func (t *offsetTable) add(offset int64, sent, received time.Time) addResult {
	at := received.UnixNano()
	n := len(t.points)
	if n == 0 {
		t.points = append(t.points, offsetSample{offset: offset, at: at})
		t.lastRead = at
		return sampleAppended
	}
	last := &t.points[n-1]
	if offset < last.offset {
		if sent.UnixNano() <= t.lastRead {
			// Both reads were in flight together: this one may simply have
			// been served first. Only a read sent after the newest point was
			// received proves the log went backwards.
			return sampleIgnored
		}
		t.points = append(t.points[:0], offsetSample{offset: offset, at: at})
		t.lastRead = at
		t.gaps = nil
		return tableReset
	}
	if at <= last.at {
		if at == last.at && offset > last.offset {
			last.offset = offset
			return sampleMerged
		}
		return sampleIgnored
	}
	t.lastRead = at
	if offset == last.offset && n >= 2 && t.points[n-2].offset == offset {
		// A flat run keeps its first point (when the offset was first seen)
		// and its last (the latest time it was still the end): interpolation
		// needs nothing in between. No record was appended meanwhile, so
		// the run is never a gap, however long.
		if t.isGapEnd(*last) {
			delete(t.gaps, last.at)
		}
		last.at = at
		return sampleMerged
	}
	if t.maxGap > 0 && at-last.at > t.maxGap && offset > last.offset {
		t.markGapEnd(at)
	}
	t.points = append(t.points, offsetSample{offset: offset, at: at})
	if len(t.points) > t.maxPoints {
		t.thin()
	}
	return sampleAppended
}

// estimate estimates when the record at offset c was appended: linear
// interpolation between the last point with end offset <= c and the first
// point with end offset > c. upper is an observation newer than the table
// (normally the scrape's own end-offset read) used as the upper bracket when no
// table point is above c. It never extrapolates: ok is false when c lies below
// the oldest point or above every point. gap tells whether the bracketing
// segment is one whose production was not watched (see maxGap).
func (t *offsetTable) estimate(c int64, upper offsetSample) (at int64, ok, gap bool) {
	n := len(t.points)
	// First index whose offset is > c.
	i := sort.Search(n, func(i int) bool { return t.points[i].offset > c })
	if i == 0 {
		// The table is empty or c predates every point.
		return 0, false, false
	}
	lo := t.points[i-1]
	if i < n {
		hi := t.points[i]
		return interpolate(lo, hi, c), true, t.isGapEnd(hi)
	}
	if upper.offset <= c || upper.at <= lo.at {
		return 0, false, false
	}
	return interpolate(lo, upper, c), true, t.maxGap > 0 && upper.at-lo.at > t.maxGap
}

// appendTime is estimate without the gap flag.
func (t *offsetTable) appendTime(c int64, upper offsetSample) (at int64, ok bool) {
	at, ok, _ = t.estimate(c, upper)
	return at, ok
}

// inGap tells whether the estimate for c comes from a gap segment.
func (t *offsetTable) inGap(c int64, upper offsetSample) bool {
	_, ok, gap := t.estimate(c, upper)
	return ok && gap
}

func (t *offsetTable) isGapEnd(p offsetSample) bool {
	_, ok := t.gaps[p.at]
	return ok
}

func (t *offsetTable) markGapEnd(at int64) {
	if t.gaps == nil {
		t.gaps = map[int64]struct{}{}
	}
	t.gaps[at] = struct{}{}
}

// interpolate assumes lo.offset <= c < hi.offset and lo.at < hi.at.
func interpolate(lo, hi offsetSample, c int64) int64 {
	frac := float64(c-lo.offset) / float64(hi.offset-lo.offset)
	// Float rounding on spans beyond 2^53 can overshoot by a nanosecond;
	// an estimate must stay inside its brackets.
	return min(hi.at, lo.at+int64(frac*float64(hi.at-lo.at)))
}

// oldest returns the oldest point, if any.
func (t *offsetTable) oldest() (offsetSample, bool) {
	if len(t.points) == 0 {
		return offsetSample{}, false
	}
	return t.points[0], true
}

// newest returns the newest point, if any.
func (t *offsetTable) newest() (offsetSample, bool) {
	if len(t.points) == 0 {
		return offsetSample{}, false
	}
	return t.points[len(t.points)-1], true
}

func (t *offsetTable) len() int { return len(t.points) }

// thin removes interior points until the table holds three quarters of its
// bound, so that thinning runs once per maxPoints/4 appends rather than on
// every append. The first and last points always stay. A point's cost is the
// interpolation error its removal would introduce at its own offset plus a
// resolution term, both relative to its age: error matters in proportion to
// the lag being measured, so recent points are dear and old ones cheap.
func (t *offsetTable) thin() {
	target := t.maxPoints - t.maxPoints/4
	if target < 2 {
		target = 2
	}
	type candidate struct {
		index int
		cost  float64
	}
	candidates := make([]candidate, 0, len(t.points))
	for len(t.points) > target {
		newest := t.points[len(t.points)-1].at
		candidates = candidates[:0]
		for i := 1; i < len(t.points)-1; i++ {
			prev, cur, next := t.points[i-1], t.points[i], t.points[i+1]
			var errNanos float64
			if next.offset > prev.offset {
				errNanos = abs(float64(cur.at - interpolate(prev, next, cur.offset)))
			} else {
				errNanos = 0 // inside a flat run: the endpoints say it all
			}
			span := float64(next.at - prev.at)
			age := float64(newest-cur.at) + 1
			candidates = append(candidates, candidate{i, (errNanos + thinningResolutionWeight*span) / age})
		}
		sort.Slice(candidates, func(a, b int) bool { return candidates[a].cost < candidates[b].cost })
		excess := len(t.points) - target
		remove := make(map[int]bool, excess)
		for _, c := range candidates {
			if len(remove) == excess {
				break
			}
			// Removing two neighbours at once would make both costs wrong.
			if remove[c.index-1] || remove[c.index+1] {
				continue
			}
			remove[c.index] = true
		}
		kept := t.points[:0]
		for i, p := range t.points {
			if !remove[i] {
				kept = append(kept, p)
				continue
			}
			// The merged segment contains the removed one's gap.
			if t.isGapEnd(p) {
				delete(t.gaps, p.at)
				t.markGapEnd(t.points[i+1].at)
			}
		}
		t.points = kept
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
