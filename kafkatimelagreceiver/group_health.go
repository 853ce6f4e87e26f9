package kafkatimelagreceiver

import (
	"encoding/binary"
	"hash/fnv"
	"sort"
)

// groupState is a consumer group's state in the classic protocol's words.
// The order is the order of the kafka.consumer_group.state points.
type groupState int

const (
	groupStateStable groupState = iota
	groupStatePreparingRebalance
	groupStateCompletingRebalance
	groupStateEmpty
	groupStateDead
	groupStateUnknown
)

var groupStates = []groupState{
	groupStateStable, groupStatePreparingRebalance, groupStateCompletingRebalance,
	groupStateEmpty, groupStateDead, groupStateUnknown,
}

// parseGroupState reads the state a coordinator reports. KIP-848 groups have
// states of their own; they are folded into the classic ones so that
// kafka.consumer_group.state keeps one fixed set of series: Assigning (the
// coordinator is computing a new target assignment) is the rebalance being
// prepared, Reconciling (members are revoking and taking partitions to reach
// it) is the rebalance completing.
func parseGroupState(s string) groupState {
	switch s {
	case "Stable":
		return groupStateStable
	case "PreparingRebalance", "Assigning":
		return groupStatePreparingRebalance
	// AwaitingSync is what Kafka before 1.1 called CompletingRebalance.
	case "CompletingRebalance", "AwaitingSync", "Reconciling":
		return groupStateCompletingRebalance
	case "Empty":
		return groupStateEmpty
	case "Dead":
		return groupStateDead
	default:
		return groupStateUnknown
	}
}

func (s groupState) String() string {
	switch s {
	case groupStateStable:
		return "Stable"
	case groupStatePreparingRebalance:
		return "PreparingRebalance"
	case groupStateCompletingRebalance:
		return "CompletingRebalance"
	case groupStateEmpty:
		return "Empty"
	case groupStateDead:
		return "Dead"
	default:
		return "Unknown"
	}
}

func (s groupState) rebalancing() bool {
	return s == groupStatePreparingRebalance || s == groupStateCompletingRebalance
}

// settled states are those in which the membership and assignment the
// coordinator reports are the group's current ones.
func (s groupState) settled() bool {
	return s == groupStateStable || s == groupStateEmpty || s == groupStateDead
}

// groupDescription is what the coordinator says about a group.
type groupDescription struct {
	// state is groupStateUnknown when the group could not be described:
	// then the members are unknown too, not absent.
	state groupState
	// protocol is the assignor the members agreed on (range, roundrobin,
	// sticky, cooperative-sticky, ...), or "consumer" for a KIP-848 group.
	// A classic group's coordinator tells it only while Stable.
	protocol string
	// epoch is a KIP-848 group's epoch, which the coordinator bumps at every
	// change of membership or subscription; -1 for classic groups, whose
	// generation the admin API does not report.
	epoch   int32
	members []groupMember
}

// groupMember is one member of a group.
type groupMember struct {
	memberID   string
	clientID   string
	host       string
	instanceID string // group.instance.id; empty for a dynamic member
	// assignment is the member's partitions, sorted. A classic group's
	// coordinator returns them only while Stable: assignmentKnown says
	// whether it did.
	assignment      []topicPartition
	assignmentKnown bool
}

// identity names a member across restarts when it can: a static member keeps
// its group.instance.id while its member id changes at every restart.
func (m groupMember) identity() string {
	if m.instanceID != "" {
		return "instance:" + m.instanceID
	}
	return "member:" + m.memberID
}

// assignmentFingerprint stands for a member's assignment in the state kept
// between scrapes, so that the memory it takes does not grow with the number
// of partitions.
func (m groupMember) assignmentFingerprint() uint64 {
	if !m.assignmentKnown {
		return 0
	}
	h := fnv.New64a()
	var buf [4]byte
	for _, tp := range m.assignment {
		_, _ = h.Write([]byte(tp.topic))
		_, _ = h.Write([]byte{0})
		binary.BigEndian.PutUint32(buf[:], uint32(tp.partition))
		_, _ = h.Write(buf[:])
	}
	return h.Sum64() | 1 // never 0, which stands for unknown
}

// healthStatus is a partition's or group's status, in increasing severity.
type healthStatus int

const (
	statusOK healthStatus = iota
	statusWarn
	statusStall
	statusStop
	statusRewind
)

var healthStatuses = []healthStatus{statusOK, statusWarn, statusStall, statusStop, statusRewind}

func (s healthStatus) String() string {
	switch s {
	case statusWarn:
		return "WARN"
	case statusStall:
		return "STALL"
	case statusStop:
		return "STOP"
	case statusRewind:
		return "REWIND"
	default:
		return "OK"
	}
}

// forgetAfter is how many consecutive scrapes a group or partition may be
// missing from before its history is dropped. One scrape is tolerated so that
// a read that failed once does not reset a rebalance count or a window.
const forgetAfter = 2

// healthTracker follows consumer groups from scrape to scrape: it counts
// rebalances and keeps, per partition, what Burrow's rules need of its
// recent positions. It does no I/O and reads no clock: a scrape's
// observations go in group by group (beginScrape, observeGroup, endScrape),
// each group's health comes out.
type healthTracker struct {
	window     int
	maxTimeLag float64 // seconds; 0 turns the check off

	scrapes uint64
	groups  map[string]*groupTrack
}

func newHealthTracker(window int, maxTimeLagSeconds float64) *healthTracker {
	return &healthTracker{window: max(2, window), maxTimeLag: maxTimeLagSeconds, groups: map[string]*groupTrack{}}
}

// groupTrack is what the tracker remembers of one group.
type groupTrack struct {
	lastSeen uint64

	rebalances int64
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
	// in with one pass and no per-partition map or allocation: at 100,000
	// pairs a map of window slices took 30 MB, this takes 7.
	pairs []pairTrack
}

// pairTrack is one group's recent positions on one partition.
type pairTrack struct {
	topicPartition
	lastSeen uint64
	window   lagWindow
}

type lagPoint struct {
	committed int64
	lag       int64
}

// lagWindow holds what Burrow's rules ask of a partition's last `window`
// positions: the newest one and, for each rule, how many of the newest
// points or steps between them pass it (each at most the window). A run as
// long as the window means the whole window passes, so the rules are
// answered exactly without keeping the points themselves.
type lagWindow struct {
	last   lagPoint
	points uint32 // points seen, at most the window
	// lagging counts the newest points with a lag above 0; unchanged,
	// growing and ordered count the newest steps whose committed offset
	// stayed put, whose lag grew, and whose committed offset did not go
	// back.
	lagging, unchanged, growing, ordered uint32
}

func (w *lagWindow) add(p lagPoint, window int) {
	limit := uint32(window)
	run := func(n uint32, ok bool) uint32 {
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

// status applies Burrow's rules as far as the admin API can observe them:
// OffsetFetch returns no commit time, so "the consumer stopped" is read
// from the group having no members rather than from an old commit.
//
//   - REWIND: the committed offset went back at some step of the window.
//   - STOP: lagging at every point, committed offset unchanged, no members.
//   - STALL: lagging at every point, committed offset unchanged, members
//     present (or not known).
//   - WARN: the committed offset advanced but the lag grew at every step.
//   - OK otherwise.
//
// STOP, STALL and WARN need a complete window; REWIND needs two points.
func (w lagWindow) status(window int, noMembers bool) healthStatus {
	if w.points == 0 {
		return statusOK
	}
	steps := w.points - 1
	if w.ordered < steps {
		return statusRewind
	}
	if int(w.points) < window {
		return statusOK
	}
	lagging, unchanged, growing := w.lagging >= w.points, w.unchanged >= steps, w.growing >= steps
	switch {
	case lagging && unchanged && noMembers:
		return statusStop
	case lagging && unchanged:
		return statusStall
	case !unchanged && growing:
		return statusWarn
	}
	return statusOK
}

// partitionStatus is a partition's status: Burrow's rules on its window
// and, beyond Burrow, at least WARN when its time lag is above maxTimeLag
// (0 turns that off), however its lag moves.
func partitionStatus(w lagWindow, window int, noMembers bool, pl partitionLag, maxTimeLag float64) healthStatus {
	st := w.status(window, noMembers)
	if maxTimeLag > 0 && pl.hasEnd && pl.hasTimeLag && pl.timeLag > maxTimeLag {
		st = max(st, statusWarn)
	}
	return st
}

// groupHealth is one group's health after a scrape.
type groupHealth struct {
	group string
	// described is false when the group could not be described in this
	// scrape: its state, members and assignment are then not reported.
	described   bool
	description groupDescription
	protocol    string // the last protocol the coordinator told
	rebalances  int64
	status      healthStatus
}

func (t *healthTracker) beginScrape() {
	t.scrapes++
}

// observeGroup folds one group's observations of the scrape in: its
// description when the coordinator gave one, and its lags, sorted by
// (topic, partition) as computeLags sorts them. onPartition, when not nil,
// is told each partition's status, in the lags' order. The group's status is
// the worst of its partitions'.
func (t *healthTracker) observeGroup(name string, d groupDescription, described bool, lags []partitionLag, onPartition func(partitionLag, healthStatus)) groupHealth {
	g := t.track(name)
	if described {
		g.describe(d)
	}
	g.pairs = mergePairs(g.pairs, lags, t.scrapes)
	noMembers := g.membersKnown && g.members == 0
	worst := statusOK
	j := 0
	for _, pl := range lags {
		for g.pairs[j].topicPartition != pl.topicPartition {
			j++
		}
		p := &g.pairs[j]
		if pl.hasEnd { // an unknown lag leaves the window waiting for the next one
			p.window.add(lagPoint{committed: pl.committed, lag: pl.lag}, t.window)
		}
		st := partitionStatus(p.window, t.window, noMembers, pl, t.maxTimeLag)
		worst = max(worst, st)
		if onPartition != nil {
			onPartition(pl, st)
		}
	}
	return groupHealth{group: name, described: described, description: d, protocol: g.protocol, rebalances: g.rebalances, status: worst}
}

// mergePairs marks the tracks of lags seen in scrape, adds tracks for new
// ones and drops those missing from the last forgetAfter scrapes. Both are
// sorted by (topic, partition); so is the result. A scrape that sees the
// same partitions as the last one, the usual case, updates in place.
func mergePairs(pairs []pairTrack, lags []partitionLag, scrape uint64) []pairTrack {
	if len(pairs) == len(lags) {
		same := true
		for i := range lags {
			if pairs[i].topicPartition != lags[i].topicPartition {
				same = false
				break
			}
		}
		if same {
			for i := range pairs {
				pairs[i].lastSeen = scrape
			}
			return pairs
		}
	}
	out := make([]pairTrack, 0, len(lags)+len(pairs))
	i, j := 0, 0
	for i < len(pairs) || j < len(lags) {
		var c int
		switch {
		case i == len(pairs):
			c = 1
		case j == len(lags):
			c = -1
		default:
			c = compareTopicPartition(pairs[i].topicPartition, lags[j].topicPartition)
		}
		switch {
		case c < 0: // not seen in this scrape
			if scrape-pairs[i].lastSeen < forgetAfter {
				out = append(out, pairs[i])
			}
			i++
		case c > 0: // first seen
			out = append(out, pairTrack{topicPartition: lags[j].topicPartition, lastSeen: scrape})
			j++
		default:
			p := pairs[i]
			p.lastSeen = scrape
			out = append(out, p)
			i++
			j++
		}
	}
	return out
}

func (t *healthTracker) track(name string) *groupTrack {
	g, ok := t.groups[name]
	if !ok {
		g = &groupTrack{epoch: -1}
		t.groups[name] = g
	}
	g.lastSeen = t.scrapes
	return g
}

// endScrape drops the groups missing from the last forgetAfter scrapes, so
// that churn of groups does not make the tracker grow (observeGroup does the
// same for a group's partitions).
func (t *healthTracker) endScrape() {
	for name, g := range t.groups {
		if t.scrapes-g.lastSeen >= forgetAfter {
			delete(t.groups, name)
		}
	}
}

// describe folds one description of the group into its history and counts
// the rebalances it reveals.
//
// A KIP-848 group reports its epoch, which the coordinator bumps once per
// change: every bump between two scrapes counts, even those whose whole
// rebalance fell between them.
//
// A classic group reports no generation, so rebalances are observed from
// outside. A rebalancing state counts once, however many consecutive scrapes
// see it; a settled group whose members (a static member by its
// group.instance.id, others by member id) or assignment differ from the last
// settled ones counts once unless that rebalance was already seen in
// progress. What this misses: two or more rebalances that all complete
// between two scrapes count as one, and a rebalance that ends with the same
// members and assignment it began with (a member that rejoins in place)
// counts only if a scrape sees it in progress.
func (g *groupTrack) describe(d groupDescription) {
	if d.protocol != "" {
		g.protocol = d.protocol
	}
	if d.state == groupStateUnknown {
		g.membersKnown = false
		return
	}
	g.membersKnown = true
	g.members = len(d.members)

	if d.epoch >= 0 {
		if g.epoch >= 0 && d.epoch > g.epoch {
			g.rebalances += int64(d.epoch - g.epoch)
		}
		g.epoch = d.epoch
		g.settledMembers, g.inRebalance = nil, false
		return
	}
	g.epoch = -1

	switch {
	case d.state.rebalancing():
		if !g.inRebalance {
			g.rebalances++
			g.inRebalance = true
		}
	case d.state.settled():
		current := make(map[string]uint64, len(d.members))
		for _, m := range d.members {
			current[m.identity()] = m.assignmentFingerprint()
		}
		if g.settledMembers != nil && !g.inRebalance && !sameMembership(g.settledMembers, current) {
			g.rebalances++
		}
		g.settledMembers = current
		g.inRebalance = false
	}
}

func sameMembership(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for id, fa := range a {
		fb, ok := b[id]
		if !ok || fa != fb {
			return false
		}
	}
	return true
}

// memberAssignment is the partitions assigned to the members sharing a
// client id, host and group.instance.id.
type memberAssignment struct {
	clientID, host, instanceID string
	partitions                 int64
}

// assignedPartitions sums the assignment of the members of a described
// group by (client id, host, instance id), sorted; members whose assignment
// the coordinator did not tell are left out.
func assignedPartitions(d groupDescription) []memberAssignment {
	type key struct{ clientID, host, instanceID string }
	sums := map[key]int64{}
	for _, m := range d.members {
		if m.assignmentKnown {
			sums[key{m.clientID, m.host, m.instanceID}] += int64(len(m.assignment))
		}
	}
	out := make([]memberAssignment, 0, len(sums))
	for k, n := range sums {
		out = append(out, memberAssignment{clientID: k.clientID, host: k.host, instanceID: k.instanceID, partitions: n})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.clientID != b.clientID {
			return a.clientID < b.clientID
		}
		if a.host != b.host {
			return a.host < b.host
		}
		return a.instanceID < b.instanceID
	})
	return out
}

func dedupeStrings(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	n := 0
	for i, s := range out {
		if i == 0 || s != out[n-1] {
			out[n] = s
			n++
		}
	}
	return out[:n]
}
