// Package progress follows each group's committed offsets from scrape to
// scrape and tells how the group is getting on: how fast it consumes (the
// committed offsets' movement over a window), how long each partition with
// lag has kept the same committed offset, and, with the partitions'
// production rates, how long until its lag is drained. It does no I/O and
// never reads a clock: every time comes from the caller, and each scrape's
// instant as time.Now gave it, whose monotonic reading tells a step of the
// wall clock.
package progress

import (
	"sync"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/tracks"
)

// forgetAfter is how many consecutive scrapes a group or partition may be
// missing from before what is known of it is dropped, as in health: one
// failed read must not restart every window.
const forgetAfter = 2

// marksKept is how many committed offsets a pair remembers: the latest
// and three checkpoints, each at least half a window after the one before,
// so that the oldest is always more than a window old and the offset a
// window ago lies between two of them.
const marksKept = 4

// pairProgress is what the tracker keeps of one group's partition: a few
// marks for the consumption rate and the stuck clock. The tracker holds one
// per (group, partition) pair of the cluster, so its size is fixed and
// small (48 bytes, 64 with its track).
type pairProgress struct {
	// marks: the last used one is the latest observation, the others
	// checkpoints.
	marks marks
	// stuckSince is when the scrapes first saw the pair with lag at its
	// current committed offset; 0 while it is not stuck.
	stuckSince int64
}

func (p *pairProgress) len() int { return p.marks.len() }

// observe adds a scrape's committed offset c, read at at. An offset lower
// than the last one (a reset or rewind), or a time not after the last one
// (a clock stepped back), restarts the window: the old marks say nothing
// true about the new position.
func (p *pairProgress) observe(c, at, checkpointEvery int64) {
	observed := timetable.Sample{Offset: c, At: at}
	n := p.len()
	if n == 0 {
		p.marks.reset(observed)
		return
	}
	latest := p.marks.at(n - 1)
	if c < latest.Offset || at <= latest.At {
		p.marks.reset(observed)
		p.stuckSince = 0
		return
	}
	if c != latest.Offset {
		p.stuckSince = 0
	}
	if n > 1 && latest.At-p.marks.at(n-2).At < checkpointEvery {
		p.marks.put(n-1, observed)
		return
	}
	// The latest observation is far enough from the checkpoint before it
	// to become one.
	if n == marksKept {
		p.marks.dropOldest()
		n--
	}
	p.marks.put(n, observed)
}

// rate is the committed offset's movement per second over the window
// ending at the latest observation, read off the marks as a table's
// production rate is read off its points (timetable.RateOver).
func (p *pairProgress) rate(window time.Duration) (float64, bool) {
	var buf [marksKept]timetable.Sample
	r := timetable.RateOver(p.marks.samples(&buf), window)
	return r.PerSecond, r.OK
}

// updateStuck starts or stops the stuck clock: it runs while the partition
// has lag at an unchanged committed offset, from the first scrape that saw
// it so. A partition without lag is not stuck however long its offset
// stays put: it has nothing to consume.
func (p *pairProgress) updateStuck(lagged bool, at int64) {
	switch {
	case !lagged:
		p.stuckSince = 0
	case p.stuckSince == 0:
		p.stuckSince = at
	}
}

// shift moves the pair's times by by nanoseconds, for a wall clock that was
// stepped by -by.
func (p *pairProgress) shift(by int64) {
	p.marks.shift(by)
	if p.stuckSince != 0 {
		p.stuckSince += by
	}
}

// stuck is how long the clock has run at at, in seconds.
func (p *pairProgress) stuck(at int64) float64 {
	if p.stuckSince == 0 {
		return 0
	}
	return float64(max(0, at-p.stuckSince)) / 1e9
}

// Partition is one group's progress on one partition after a scrape.
type Partition struct {
	// ConsumeRate is records consumed per second: the committed offset's
	// movement over the window. None until the marks span a quarter of the
	// window, and again after the committed offset went back.
	ConsumeRate    float64
	HasConsumeRate bool
	// Stuck is how long, in seconds, the partition has had lag at the same
	// committed offset (0 without lag). Known when the lag is.
	Stuck    float64
	HasStuck bool
	// Drain is DrainTime of the partition's lag at its rates.
	Drain    float64
	HasDrain bool
}

// Tracker follows the committed offsets of every group, as a scrape's lags
// go in group by group (BeginScrape, ObserveGroup for each group,
// EndScrape). The scrape goroutine observes; the storage goroutine may
// encode its state at any time.
type Tracker struct {
	mu              sync.Mutex
	window          time.Duration
	checkpointEvery int64  // nanoseconds
	scrapes         uint32 // wraps; only ever subtracted
	groups          map[string]*groupProgress
	// restored holds the stuck clocks of the saved state until their pair
	// is seen, or until forgetAfter scrapes have passed without it.
	restored       map[pairKey]stuckClock
	restoredScrape uint32

	// lastBegin is the instant the last scrape began, with its monotonic
	// reading, against which the next one tells a step of the wall clock.
	lastBegin time.Time
	// monotonic measures the monotonic time between two instants; nil is
	// their Sub. Tests set it: Go cannot make a time whose wall reading
	// stepped while its monotonic one did not.
	monotonic func(from, to time.Time) time.Duration

	// partitions backs ObserveGroup's result, reused from group to group.
	partitions []Partition
}

type groupProgress struct {
	lastSeen uint32
	// pairs is sorted by (topic, partition), as a scrape's lags are.
	pairs tracks.Tracks[pairProgress]
}

// NewTracker returns a tracker whose rates are over window.
func NewTracker(window time.Duration) *Tracker {
	window = max(window, 1)
	return &Tracker{window: window, checkpointEvery: int64(window) / 2, groups: map[string]*groupProgress{}}
}

// clockStepTolerance is the largest difference between how far the wall
// clock and the monotonic clock moved between two scrapes that is not taken
// for a step, as in timetable.
const clockStepTolerance = time.Second

// BeginScrape starts a scrape at now, as time.Now gave it: groups and
// partitions not observed from now to EndScrape count as missing from it.
// When the wall clock moved further or less than the monotonic clock since
// the last scrape began, it was stepped (NTP at boot, a VM resumed, an
// operator), and every time kept is moved by the step: stuck clocks and
// consumption windows count the time that passed, not the step. Times
// without a monotonic reading (made up, or restored) cannot show a step.
func (t *Tracker) BeginScrape(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.scrapes++
	prev := t.lastBegin
	t.lastBegin = now
	if prev.IsZero() || now.IsZero() {
		return
	}
	monotonic := now.Sub(prev)
	if t.monotonic != nil {
		monotonic = t.monotonic(prev, now)
	}
	step := time.Duration(now.UnixNano()-prev.UnixNano()) - monotonic
	if step >= -clockStepTolerance && step <= clockStepTolerance {
		return
	}
	for _, g := range t.groups {
		for i := range g.pairs.Len() {
			_, p := g.pairs.At(i)
			p.shift(int64(step))
		}
	}
	for key, c := range t.restored {
		c.since += int64(step)
		t.restored[key] = c
	}
}

// ObserveGroup folds one group's lags of a scrape read at at (unix
// nanoseconds) in, and returns its progress on each partition, in the order
// of lags. lags are sorted by (topic, partition) as lag.Estimates.GroupLags
// sorts them. The result is a buffer of the tracker's, valid until the
// next ObserveGroup call.
func (t *Tracker) ObserveGroup(name string, lags []lag.PartitionLag, at int64) []Partition {
	t.mu.Lock()
	defer t.mu.Unlock()
	g, ok := t.groups[name]
	if !ok {
		g = &groupProgress{}
		t.groups[name] = g
	}
	g.lastSeen = t.scrapes
	g.pairs.Merge(lags, t.scrapes, forgetAfter)
	t.partitions = t.partitions[:0]
	for i, p := range g.pairs.Matched(lags) {
		pl := &lags[i]
		if len(t.restored) > 0 && p.len() == 0 {
			t.resume(p, pairKey{group: name, topic: pl.Topic, partition: pl.Partition}, pl.Committed, at)
		}
		p.observe(pl.Committed, at, t.checkpointEvery)
		var out Partition
		out.ConsumeRate, out.HasConsumeRate = p.rate(t.window)
		if pl.HasEnd {
			p.updateStuck(pl.Lag > 0, at)
			out.Stuck, out.HasStuck = p.stuck(at), true
			out.Drain, out.HasDrain = partitionDrain(pl, out)
		}
		t.partitions = append(t.partitions, out)
	}
	return t.partitions
}

// resume restarts a pair's stuck clock from the saved state when the
// committed offset is still the one it was saved at.
func (t *Tracker) resume(p *pairProgress, key pairKey, committed, at int64) {
	saved, ok := t.restored[key]
	if !ok {
		return
	}
	delete(t.restored, key)
	if saved.offset == committed {
		// A saved time after now (a clock stepped back) counts from now.
		p.stuckSince = min(saved.since, at)
	}
}

// ObserveUnread folds in a group of the scrape whose committed offsets
// could not be read: what is known of it (its marks, its stuck clocks) is
// kept as it is, not counted as missing, so that a coordinator failing over
// for a few scrapes does not restart them.
func (t *Tracker) ObserveUnread(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	g, ok := t.groups[name]
	if !ok {
		return
	}
	g.lastSeen = t.scrapes
	g.pairs.Keep(t.scrapes)
}

// EndScrape drops the groups missing from the last forgetAfter scrapes (the
// merge in ObserveGroup does the same for a group's partitions), and the
// restored clocks no scrape has claimed by then.
func (t *Tracker) EndScrape() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for name, g := range t.groups {
		if t.scrapes-g.lastSeen >= forgetAfter {
			delete(t.groups, name)
		}
	}
	if t.restored != nil && t.scrapes-t.restoredScrape >= forgetAfter {
		t.restored = nil
	}
}
