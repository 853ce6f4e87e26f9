package lag

import (
	"cmp"
	"slices"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// Index numbers a scrape's partitions in (topic, partition) order and holds
// what the snapshot says of each. A group's commits are then sorted by an
// integer rather than by topic name, and each partition's offsets (and
// table) are looked up once per scrape rather than once per group that
// commits on it.
type Index struct {
	Parts []Partition // by rank
	// commits is each group's committed offsets, in partition rank order.
	commits map[string][]rankedCommit
	// shares is each share group's start offsets, in partition rank order
	// (AddShareGroups).
	shares map[string][]rankedShare
	// lagging, once asked for, are the offsets groups lag from.
	lagging *laggingOffsets
}

// Partition is what a scrape knows of one partition.
type Partition struct {
	kafka.TopicPartition
	End, Start, Stable          int64
	HasEnd, HasStart, HasStable bool
}

type rankedCommit struct {
	rank      int32
	committed int64 // commitUnread: not read
}

// commitUnread is the committed offset of a pair whose commit the read
// could not read (Snapshot.CommitsUnread); real ones are never negative.
const commitUnread = -2

// NewIndex indexes every partition the snapshot has an end offset or a
// commit for. A pair's partition is found without hashing the pair
// (partitionIDs).
func NewIndex(snap *Snapshot) *Index {
	ids := newPartitionIDs(len(snap.End))
	idx := &Index{commits: make(map[string][]rankedCommit, len(snap.Committed))}
	for group, offsets := range snap.Committed {
		commits := make([]rankedCommit, 0, len(offsets))
		for _, c := range offsets {
			if c.Offset < 0 {
				continue // not an offset: no commit
			}
			commits = append(commits, rankedCommit{rank: ids.id(c.TopicPartition), committed: c.Offset})
		}
		idx.commits[group] = commits
	}
	for group, tps := range snap.CommitsUnread {
		commits := idx.commits[group]
		for _, tp := range tps {
			commits = append(commits, rankedCommit{rank: ids.id(tp), committed: commitUnread})
		}
		idx.commits[group] = commits
	}
	// After the commits, whose sorted runs grow each topic's array in order.
	for tp := range snap.End {
		ids.id(tp)
	}
	tps := ids.tps
	// Ids were handed out in map order; ranks follow (topic, partition).
	order := make([]int32, len(tps))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return tps[a].Compare(tps[b]) })
	rankOf := make([]int32, len(tps))
	idx.Parts = make([]Partition, len(tps))
	for rank, n := range order {
		rankOf[n] = int32(rank)
		tp := tps[n]
		p := Partition{TopicPartition: tp}
		p.End, p.HasEnd = offset(snap.End, tp)
		p.Start, p.HasStart = offset(snap.Start, tp)
		p.Stable, p.HasStable = offset(snap.Stable, tp)
		idx.Parts[rank] = p
	}
	byRank := rankSorter{slot: make([]int32, len(tps))}
	for _, commits := range idx.commits {
		for i := range commits {
			commits[i].rank = rankOf[commits[i].rank]
		}
		byRank.sort(commits)
	}
	if len(snap.Shares) > 0 || len(snap.SharesUnread) > 0 {
		idx.AddShareGroups(snap.Shares, snap.SharesUnread)
	}
	return idx
}

// rankSorter orders a group's commits by rank. A group that commits on a
// good share of the scrape's partitions (the usual case: a group reads
// whole topics) is placed by rank in one pass over the ranks, which at
// 1,000,000 pairs costs a tenth of what comparison sorting them did; a
// group on a few partitions of a large cluster is sorted, so that it does
// not pay for every partition of the cluster.
type rankSorter struct {
	slot    []int32 // by rank: index in the group's commits + 1, 0 for none
	ordered []rankedCommit
}

func (s *rankSorter) sort(commits []rankedCommit) {
	if len(commits) < len(s.slot)/16 {
		slices.SortFunc(commits, func(a, b rankedCommit) int { return cmp.Compare(a.rank, b.rank) })
		return
	}
	for i, c := range commits {
		s.slot[c.rank] = int32(i) + 1
	}
	s.ordered = s.ordered[:0]
	for rank, at := range s.slot {
		if at != 0 {
			s.ordered = append(s.ordered, commits[at-1])
			s.slot[rank] = 0
		}
	}
	copy(commits, s.ordered)
}

// offset is tp's offset in offsets, when it has one that is an offset:
// logs start at 0, so a negative one (from a broken or hostile broker) is
// none, rather than a lag near the int64 limits.
func offset(offsets map[kafka.TopicPartition]int64, tp kafka.TopicPartition) (int64, bool) {
	o, ok := offsets[tp]
	return o, ok && o >= 0
}

// SetStarts records the log start offsets read after the index was built
// (those of partitions whose record at a group's offset retention had
// deleted) and moves the offsets groups lag from there up to them: the
// index is built once a scrape and changed where the read changed it,
// rather than built again for a few partitions.
func (idx *Index) SetStarts(starts map[kafka.TopicPartition]int64) {
	var raised []int32
	regather := false
	for tp, start := range starts {
		rank, ok := idx.rank(tp)
		if !ok {
			continue
		}
		p := &idx.Parts[rank]
		has := start >= 0
		if p.HasStart && (!has || start < p.Start) {
			// A log start gone back (a recreated log): the offsets moved
			// up to the old one no longer say where the groups are.
			regather = true
		}
		p.Start, p.HasStart = start, has
		if has {
			raised = append(raised, rank)
		}
	}
	switch {
	case idx.lagging == nil:
	case regather:
		idx.lagging = nil // gathered again when asked
	case len(raised) > 0:
		slices.Sort(raised)
		idx.lagging.raise(idx.Parts, raised)
	}
}

// Tabled is a scrape's index with what dating reads beside it: each
// partition's table in the store and, once looked up, its records in the
// record cache, by rank. Dating holds it while it dates; the index it hands
// on holds values only (read.Input), so that nothing the sampler or a later
// scrape changes reaches the computation.
type Tabled struct {
	*Index
	tables []timetable.Ref
	// records are the partitions' record timestamps, looked up by
	// AppendTimes once a scrape rather than once per group.
	records []recordcache.Partition
}

// ResolveTables resolves each partition's table in the store, under the
// caller's lock when tables is a timetable.View.
func (idx *Index) ResolveTables(tables Tables) *Tabled {
	tps := make([]kafka.TopicPartition, len(idx.Parts))
	for i := range idx.Parts {
		tps[i] = idx.Parts[i].TopicPartition
	}
	return &Tabled{Index: idx, tables: tables.Refs(tps), records: make([]recordcache.Partition, len(idx.Parts))}
}

// table is the table of the partition of rank.
func (t *Tabled) table(rank int32) timetable.Ref { return t.tables[rank] }

// Table is the table of the partition of rank, for a caller holding the
// tables' lock.
func (t *Tabled) Table(rank int32) timetable.Ref { return t.tables[rank] }

// TopicRate is a topic's production rate: the sum of its partitions'.
type TopicRate struct {
	Topic string
	Rate  float64
}

// TopicProduceRates sums the production rates of each topic of parts, which
// are in (topic, partition) order, when every partition of it has one.
func TopicProduceRates(parts []PartitionGauge) []TopicRate {
	var out []TopicRate
	for start := 0; start < len(parts); {
		end, sum, all := start, 0.0, true
		for ; end < len(parts) && parts[end].Topic == parts[start].Topic; end++ {
			sum += parts[end].ProduceRate
			all = all && parts[end].HasProduceRate
		}
		if all {
			out = append(out, TopicRate{Topic: parts[start].Topic, Rate: sum})
		}
		start = end
	}
	return out
}

// Partition is tp's partition in the index, and its rank.
func (idx *Index) Partition(tp kafka.TopicPartition) (*Partition, int32, bool) {
	i, ok := slices.BinarySearchFunc(idx.Parts, tp, func(p Partition, tp kafka.TopicPartition) int { return p.Compare(tp) })
	if !ok {
		return nil, 0, false
	}
	return &idx.Parts[i], int32(i), true
}
