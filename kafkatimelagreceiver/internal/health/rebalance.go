package health

import (
	"encoding/binary"
	"hash/fnv"
	"maps"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// maxEpochStep is the most rebalances one epoch step between two scrapes
// counts. A coordinator bumps a KIP-848 group's epoch once per change, so
// even a large group restarting member by member between two scrapes moves
// it by thousands at most; a step beyond this (a broken or hostile broker
// answering an epoch near the int32 limit) counts as this many, not as
// billions of rebalances.
const maxEpochStep = 100_000

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
func (g *groupTrack) describe(d kafka.GroupDescription) {
	if d.Protocol != "" {
		g.protocol = d.Protocol
	}
	if d.State == kafka.GroupStateUnknown {
		g.membersKnown = false
		return
	}
	g.membersKnown = true
	g.members = len(d.Members)

	if d.Epoch >= 0 {
		if g.epoch >= 0 && d.Epoch > g.epoch {
			g.rebalances += min(int64(d.Epoch-g.epoch), maxEpochStep)
		}
		g.epoch = d.Epoch
		g.settledMembers, g.inRebalance = nil, false
		return
	}
	g.epoch = -1

	switch {
	case d.State.Rebalancing():
		if !g.inRebalance {
			g.rebalances++
			g.inRebalance = true
		}
	case d.State.Settled():
		current := make(map[string]uint64, len(d.Members))
		for _, m := range d.Members {
			current[identity(m)] = assignmentFingerprint(m)
		}
		if g.settledMembers != nil && !g.inRebalance && !sameMembership(g.settledMembers, current) {
			g.rebalances++
		}
		g.settledMembers = current
		g.inRebalance = false
	}
}

// sameMembership compares two settled memberships (identity -> assignment
// fingerprint): any difference is a rebalance.
func sameMembership(a, b map[string]uint64) bool {
	return maps.Equal(a, b)
}

// identity names a member across restarts when it can: a static member keeps
// its group.instance.id while its member id changes at every restart, and
// such a restart does not rebalance the group.
func identity(m kafka.GroupMember) string {
	if m.InstanceID != "" {
		return "instance:" + m.InstanceID
	}
	return "member:" + m.MemberID
}

// assignmentFingerprint stands for a member's assignment in the state kept
// between scrapes, so that the memory it takes does not grow with the number
// of partitions.
func assignmentFingerprint(m kafka.GroupMember) uint64 {
	if !m.AssignmentKnown {
		return 0
	}
	h := fnv.New64a()
	var buf [4]byte
	for _, tp := range m.Assignment {
		_, _ = h.Write([]byte(tp.Topic))
		_, _ = h.Write([]byte{0})
		binary.BigEndian.PutUint32(buf[:], uint32(tp.Partition))
		_, _ = h.Write(buf[:])
	}
	return h.Sum64() | 1 // never 0, which stands for unknown
}
