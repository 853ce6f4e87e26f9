package health

import (
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/groupview"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/tracks"
)

// forgetAfter is how many consecutive scrapes a group or partition may be
// missing from before its history is dropped. One scrape is tolerated so that
// a read that failed once does not reset a rebalance count or a window.
const forgetAfter = 2

// Tracker follows consumer groups from scrape to scrape: it counts
// rebalances and keeps, per partition, what Burrow's rules need of its
// recent positions. A scrape's observations go in group by group
// (BeginScrape, ObserveGroup for each group, EndScrape), so that only one
// group's lags need be held at a time; each group's health comes out.
// A Tracker is not safe for concurrent use.
type Tracker struct {
	window     int
	maxTimeLag float64 // seconds; 0 turns the check off
	// assignments: each described group's assignment is summed by member
	// (GroupHealth.Assigned).
	assignments bool

	scrapes uint32 // wraps; only ever subtracted
	groups  map[string]*groupTrack
	// lastAt and previousAt are the instants of the current scrape and of
	// the one before it (0 before the second scrape).
	lastAt, previousAt int64

	// statuses backs GroupHealth.Partitions, reused from group to group so
	// that a scrape allocates nothing per group.
	statuses []Status
}

// NewTracker returns a tracker judging each partition on its last window
// scrapes (at least 2: a rule on steps needs one; at most MaxWindow) and, when
// maxTimeLagSeconds is above 0, on its time lag as well.
func NewTracker(window int, maxTimeLagSeconds float64) *Tracker {
	return &Tracker{window: min(max(2, window), MaxWindow), maxTimeLag: maxTimeLagSeconds, groups: map[string]*groupTrack{}}
}

// SumAssignments makes every described group's health carry its
// assignment summed by member (GroupHealth.Assigned).
func (t *Tracker) SumAssignments() { t.assignments = true }

// groupTrack is what the tracker remembers of one group.
type groupTrack struct {
	lastSeen uint32

	rebalances int64
	// countingSince is the instant rebalances started to be counted: the
	// scrape before the one that first saw the group, whose count covers
	// the time between them; 0 for a group seen by the tracker's first
	// scrape, counted from the tracker's start.
	countingSince int64
	// inRebalance is set once a rebalance has been counted and until the
	// group is seen settled again, so that a rebalance seen over several
	// scrapes counts once.
	inRebalance bool
	// settledMembers is the membership (identity -> assignment fingerprint)
	// when the group was last seen settled; nil before that.
	settledMembers map[string]uint64
	epoch          int32 // last KIP-848 epoch seen; -1 when none

	protocol     string // last protocol the coordinator told
	membersKnown bool
	members      int

	// pairs is one entry per partition the group commits on, sorted by
	// (topic, partition) as a scrape's lags are, so that a scrape is merged
	// in with one pass and no per-partition map or allocation: the tracker
	// holds every (group, partition) pair of the cluster, so a pair must
	// cost no more than its track of its recent positions.
	pairs tracks.Tracks[lagWindow]
}

// GroupHealth is one group's health after a scrape (groupview.GroupHealth).
type GroupHealth = groupview.GroupHealth

// BeginScrape starts a scrape taken at the instant at (unix nanoseconds):
// groups and partitions not observed from now to EndScrape count as missing
// from it.
func (t *Tracker) BeginScrape(at int64) {
	t.scrapes++
	t.previousAt, t.lastAt = t.lastAt, at
}

// ObserveGroup folds one group's observations of the scrape in and returns
// the group's health. d is its description when described is true; lags are
// its lags, sorted by (topic, partition) as lag.Index.GroupLags sorts them.
// A group is to be observed at most once per scrape: every observation adds
// a point to its partitions' windows.
func (t *Tracker) ObserveGroup(name string, d kafka.GroupDescription, described bool, lags []lag.PartitionLag) GroupHealth {
	g, gh := t.fold(name, d, described)
	g.pairs.Merge(lags, t.scrapes, forgetAfter)
	noMembers := g.membersKnown && g.members == 0
	worst := StatusUnknown
	// A group with nothing read this scrape is not judged: a status from
	// its partitions' older points, or OK for a group whose commits went
	// with their topic, would be a guess sent as a verdict. Likewise with
	// some partitions unread: the worst of the others could understate it.
	complete := len(lags) > 0
	t.statuses = t.statuses[:0]
	for i, w := range g.pairs.Matched(lags) {
		pl := &lags[i]
		st := StatusUnknown
		if pl.HasEnd { // an unknown lag leaves the window waiting for the next one
			w.add(lagPoint{committed: pl.Committed, lag: consumable(pl)}, t.window)
			st = partitionStatus(*w, t.window, noMembers, pl, t.maxTimeLag)
		} else {
			complete = false
		}
		worst = max(worst, st)
		t.statuses = append(t.statuses, st)
	}
	gh.StatusKnown = complete && worst != StatusUnknown
	gh.Status, gh.Partitions = worst, t.statuses
	if !gh.StatusKnown {
		gh.Status = StatusUnknown
	}
	gh.Unjudged = !complete
	return gh
}

// ObserveUnread folds in a group listed in the scrape whose committed
// offsets could not be read. Its description, when described is true, counts
// as in ObserveGroup (rebalances, members); its partitions' windows get no
// point, so that the next scrape that reads the group is judged on real
// observations only, and they are kept as they are. The health returned has
// no status (StatusKnown false) and no partitions.
func (t *Tracker) ObserveUnread(name string, d kafka.GroupDescription, described bool) GroupHealth {
	g, gh := t.fold(name, d, described)
	// Not missing from the scrape, only unread: the pairs stay.
	g.pairs.Keep(t.scrapes)
	return gh
}

// fold marks the group seen, folds its description in and returns its
// health but for its status.
func (t *Tracker) fold(name string, d kafka.GroupDescription, described bool) (*groupTrack, GroupHealth) {
	g := t.track(name)
	if described {
		g.describe(d)
	} else {
		// Members that cannot be listed now are not known to be absent: a
		// group seen empty before may have consumers again.
		g.membersKnown = false
	}
	gh := GroupHealth{
		Group:           name,
		Described:       described,
		Description:     d,
		Protocol:        g.protocol,
		Rebalances:      g.rebalances,
		RebalancesSince: g.countingSince,
	}
	if t.assignments && described && d.State != kafka.GroupStateUnknown {
		gh.Assigned = AssignedPartitions(d)
	}
	return g, gh
}

// EndScrape drops the groups missing from the last forgetAfter scrapes, so
// that churn of groups does not make the tracker grow (ObserveGroup does the
// same for a group's partitions).
func (t *Tracker) EndScrape() {
	for name, g := range t.groups {
		if t.scrapes-g.lastSeen >= forgetAfter {
			delete(t.groups, name)
		}
	}
}

func (t *Tracker) track(name string) *groupTrack {
	g, ok := t.groups[name]
	if !ok {
		g = &groupTrack{epoch: -1, countingSince: t.previousAt}
		t.groups[name] = g
	}
	g.lastSeen = t.scrapes
	return g
}
