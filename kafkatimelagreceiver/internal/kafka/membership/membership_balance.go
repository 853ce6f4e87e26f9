package membership

import (
	"cmp"
	"maps"
	"slices"

	"github.com/IBM/sarama"
)

// balance deals the coordination partitions 0..len(loads)-1 out to members
// so that the loads they hold (the monitored work hashed onto each
// partition) are as even as moving whole partitions allows, and then their
// counts. Partitions move between members that hold some only to members
// that hold none (a replica joining): a member that leaves has its
// partitions dealt out, the heaviest first to the lightest member, and
// the others keep theirs, with their tables and groups. Dealing out by
// count alone balances the partitions but not the work: ten topics hash
// onto ten of sixty partitions, and thirty of them can hold two topics or
// eight.
//
// owned is what each member held before (partitions out of range, of
// members not in the group or claimed twice are dealt out again); members
// is every member of the group. It is pure and deterministic: the same
// input gives the same plan.
func balance(members []string, owned map[string][]int32, loads []int64) map[string][]int32 {
	if len(members) == 0 {
		return nil
	}
	members = slices.Sorted(slices.Values(members))
	d := newDeal(len(members), loads)
	for m, id := range members {
		for _, p := range owned[id] {
			if p >= 0 && int(p) < len(loads) && d.holder[p] < 0 {
				d.give(p, m)
			}
		}
	}
	var joining []int
	for m := range members {
		if d.count[m] == 0 {
			joining = append(joining, m)
		}
	}
	d.dealUnheld()
	if len(joining) > 0 {
		d.evenLoads(joining)
		d.evenCounts(joining)
	}
	plan := make(map[string][]int32, len(members))
	for p, h := range d.holder {
		plan[members[h]] = append(plan[members[h]], int32(p))
	}
	return plan
}

// deal is a plan being made: who holds each partition, and each member's
// load and partition count.
type deal struct {
	loads  []int64
	holder []int // by partition; -1: not dealt yet
	load   []int64
	count  []int
}

func newDeal(members int, loads []int64) *deal {
	d := &deal{loads: loads, holder: make([]int, len(loads)), load: make([]int64, members), count: make([]int, members)}
	for p := range d.holder {
		d.holder[p] = -1
	}
	return d
}

func (d *deal) give(p int32, member int) {
	if h := d.holder[p]; h >= 0 {
		d.load[h] -= d.loads[p]
		d.count[h]--
	}
	d.holder[p] = member
	d.load[member] += d.loads[p]
	d.count[member]++
}

// lightest is the member of among with the least load, then the fewest
// partitions, then the first.
func (d *deal) lightest(among []int) int {
	best := among[0]
	for _, m := range among {
		if d.load[m] < d.load[best] || d.load[m] == d.load[best] && d.count[m] < d.count[best] {
			best = m
		}
	}
	return best
}

// dealUnheld gives the partitions nobody holds, the heaviest first, each
// to the lightest member.
func (d *deal) dealUnheld() {
	var unheld []int32
	for p, h := range d.holder {
		if h < 0 {
			unheld = append(unheld, int32(p))
		}
	}
	slices.SortStableFunc(unheld, func(a, b int32) int { return cmp.Compare(d.loads[b], d.loads[a]) })
	all := make([]int, len(d.load))
	for m := range all {
		all[m] = m
	}
	for _, p := range unheld {
		d.give(p, d.lightest(all))
	}
}

// evenLoads moves the heaviest partition that narrows the gap from the
// most loaded member to the least loaded of joining while one does: a
// move of a partition lighter than the gap leaves both members below the
// old maximum. Each move narrows the spread of the loads, so it ends.
func (d *deal) evenLoads(joining []int) {
	for range len(d.holder) * len(d.load) {
		heavy, light := 0, d.lightest(joining)
		for m := range d.load {
			if d.load[m] > d.load[heavy] {
				heavy = m
			}
		}
		gap := d.load[heavy] - d.load[light]
		move := int32(-1)
		for p, h := range d.holder {
			if h == heavy && d.loads[p] > 0 && d.loads[p] < gap && (move < 0 || d.loads[p] > d.loads[move]) {
				move = int32(p)
			}
		}
		if move < 0 {
			return
		}
		d.give(move, light)
	}
}

// evenCounts moves partitions without load from the member with the most
// partitions to the one of joining with the fewest while they differ by
// more than one: the loads stay as they are, and work hashed onto those
// partitions later spreads out too.
func (d *deal) evenCounts(joining []int) {
	for range len(d.holder) {
		most, fewest := 0, joining[0]
		for m := range d.count {
			if d.count[m] > d.count[most] {
				most = m
			}
		}
		for _, m := range joining {
			if d.count[m] < d.count[fewest] {
				fewest = m
			}
		}
		if d.count[most]-d.count[fewest] <= 1 {
			return
		}
		move := int32(-1)
		for p, h := range d.holder {
			if h == most && d.loads[p] == 0 {
				move = int32(p)
				break
			}
		}
		if move < 0 {
			return
		}
		d.give(move, fewest)
	}
}

// balancedPlan is the leader's plan for the coordination topic from the
// members' subscriptions and the partitions' loads: balance over what each
// member says it holds, then, as the cooperative protocol asks, a partition
// that moves is withheld from its new holder until the old one has given
// it up (which it does and rejoins, and the next plan deals it out).
// A member that claims a partition another claims from a later generation
// is taken not to hold it.
func balancedPlan(members map[string]sarama.ConsumerGroupMemberMetadata, topic string, loads []int64) sarama.BalanceStrategyPlan {
	ids := slices.Sorted(maps.Keys(members))
	// The latest generation's claim wins, then the first member by id.
	byClaim := slices.Clone(ids)
	slices.SortStableFunc(byClaim, func(a, b string) int { return cmp.Compare(members[b].GenerationID, members[a].GenerationID) })
	owned := make(map[string][]int32, len(ids))
	claimed := make(map[int32]string)
	for _, id := range byClaim {
		for _, op := range members[id].OwnedPartitions {
			if op.Topic != topic {
				continue
			}
			for _, p := range op.Partitions {
				if _, taken := claimed[p]; !taken {
					claimed[p] = id
					owned[id] = append(owned[id], p)
				}
			}
		}
	}
	dealt := balance(ids, owned, loads)
	plan := make(sarama.BalanceStrategyPlan, len(ids))
	for _, id := range ids {
		plan[id] = map[string][]int32{}
		var give []int32
		for _, p := range dealt[id] {
			if holder, held := claimed[p]; held && holder != id {
				continue // the holder gives it up first
			}
			give = append(give, p)
		}
		if len(give) > 0 {
			plan[id][topic] = give
		}
	}
	return plan
}
