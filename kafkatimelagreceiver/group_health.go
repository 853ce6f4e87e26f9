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
// rebalances and keeps the window of each partition's recent positions that
// its status is judged on. It does no I/O and reads no clock: each scrape's
// observations go in, the scrape's results come out.
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

	partitions map[topicPartition]*partitionTrack
}

// partitionTrack is the window of one group's recent positions on a partition.
type partitionTrack struct {
	lastSeen uint64
	points   []lagPoint // oldest first, at most window of them
}

type lagPoint struct {
	committed int64
	lag       int64
}

// healthInput is what one scrape observed.
type healthInput struct {
	// groups are the groups the scrape reports on, described or not.
	groups []string
	// described holds the groups the coordinators described in this scrape.
	described map[string]groupDescription
	// lags are the scrape's per-partition positions.
	lags []partitionLag
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

// partitionHealth is one group's status on one partition after a scrape.
type partitionHealth struct {
	group string
	topicPartition
	status healthStatus
}

// observe takes one scrape's observations and returns the health of every
// group in input.groups (sorted by name) and of every partition in
// input.lags (in their order).
func (t *healthTracker) observe(input healthInput) ([]groupHealth, []partitionHealth) {
	t.scrapes++
	for _, name := range input.groups {
		g := t.track(name)
		if d, ok := input.described[name]; ok {
			g.describe(d)
		}
	}
	for _, pl := range input.lags {
		g := t.track(pl.group)
		p, ok := g.partitions[pl.topicPartition]
		if !ok {
			p = &partitionTrack{points: make([]lagPoint, 0, t.window)}
			g.partitions[pl.topicPartition] = p
		}
		p.lastSeen = t.scrapes
		if !pl.hasEnd {
			continue // the lag is unknown: the window waits for the next one
		}
		if len(p.points) == t.window {
			copy(p.points, p.points[1:])
			p.points = p.points[:t.window-1]
		}
		p.points = append(p.points, lagPoint{committed: pl.committed, lag: pl.lag})
	}
	t.forget()

	partitions := make([]partitionHealth, 0, len(input.lags))
	worst := map[string]healthStatus{}
	for _, pl := range input.lags {
		g := t.groups[pl.group]
		in := partitionInput{
			points:         g.partitions[pl.topicPartition].points,
			noMembers:      g.membersKnown && g.members == 0,
			timeLag:        pl.timeLag,
			hasTimeLag:     pl.hasEnd && pl.hasTimeLag,
			maxTimeLag:     t.maxTimeLag,
			completeWindow: t.window,
		}
		st := partitionStatus(in)
		partitions = append(partitions, partitionHealth{group: pl.group, topicPartition: pl.topicPartition, status: st})
		worst[pl.group] = max(worst[pl.group], st)
	}

	names := dedupeStrings(input.groups)
	groups := make([]groupHealth, 0, len(names))
	for _, name := range names {
		g := t.groups[name]
		d, described := input.described[name]
		groups = append(groups, groupHealth{
			group:       name,
			described:   described,
			description: d,
			protocol:    g.protocol,
			rebalances:  g.rebalances,
			status:      worst[name],
		})
	}
	return groups, partitions
}

func (t *healthTracker) track(name string) *groupTrack {
	g, ok := t.groups[name]
	if !ok {
		g = &groupTrack{epoch: -1, partitions: map[topicPartition]*partitionTrack{}}
		t.groups[name] = g
	}
	g.lastSeen = t.scrapes
	return g
}

// forget drops the groups and partitions missing from the last forgetAfter
// scrapes, so that churn of groups, topics or partitions does not make the
// tracker grow.
func (t *healthTracker) forget() {
	for name, g := range t.groups {
		if t.scrapes-g.lastSeen >= forgetAfter {
			delete(t.groups, name)
			continue
		}
		for tp, p := range g.partitions {
			if t.scrapes-p.lastSeen >= forgetAfter {
				delete(g.partitions, tp)
			}
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

// partitionInput is what a partition's status is judged on.
type partitionInput struct {
	points         []lagPoint // the window, oldest first
	completeWindow int        // how many points make a complete window
	noMembers      bool       // the group is known to have no members
	timeLag        float64    // seconds, the latest
	hasTimeLag     bool
	maxTimeLag     float64 // seconds; 0 turns the check off
}

// partitionStatus applies Burrow's rules as far as the admin API can observe
// them: OffsetFetch returns no commit time, so "the consumer stopped" is
// read from the group having no members rather than from an old commit.
//
//   - REWIND: the committed offset went back at some step of the window.
//   - STOP: lagging at every point, committed offset unchanged, no members.
//   - STALL: lagging at every point, committed offset unchanged, members
//     present (or not known).
//   - WARN: the committed offset advanced but the lag grew at every step.
//   - OK otherwise.
//
// STOP, STALL and WARN need a complete window; REWIND needs two points.
// Beyond Burrow, a time lag above maxTimeLag makes the partition at least
// WARN, however its lag moves.
func partitionStatus(in partitionInput) healthStatus {
	pts := in.points
	for i := 1; i < len(pts); i++ {
		if pts[i].committed < pts[i-1].committed {
			return statusRewind
		}
	}
	status := statusOK
	if len(pts) >= in.completeWindow && len(pts) >= 2 {
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
		case lagging && unchanged && in.noMembers:
			status = statusStop
		case lagging && unchanged:
			status = statusStall
		case !unchanged && growing:
			status = statusWarn
		}
	}
	if in.maxTimeLag > 0 && in.hasTimeLag && in.timeLag > in.maxTimeLag {
		status = max(status, statusWarn)
	}
	return status
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
