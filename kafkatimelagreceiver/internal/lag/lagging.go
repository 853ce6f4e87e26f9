package lag

import "slices"

// laggingOffsets are, partition by partition, the offsets the groups that
// lag on it consume from (ConsumeFrom), sorted, each once. A scrape judges
// (OutOfTable) and dates (Estimate) each such record once, however many
// groups sit on it, and partition by partition, while the partition's
// table and records are at hand, rather than group by group across every
// partition of the cluster.
type laggingOffsets struct {
	// bounds: the offsets of the partition of rank r are
	// offsets[bounds[r]:bounds[r+1]].
	bounds  []int
	offsets []int64
}

// behind is the offset rc's group consumes from on its partition, and
// whether it lags there: the partition's end offset was read, and is past
// it.
func (idx *Index) behind(rc rankedCommit) (int64, bool) {
	p := &idx.Parts[rc.rank]
	if !p.HasEnd || rc.committed < 0 {
		return 0, false
	}
	from := ConsumeFrom(rc.committed, p.Start, p.HasStart)
	return from, from < p.End
}

// laggingOffsets are the offsets groups lag from, gathered the first time
// the read asks (OutOfTable) and kept in the index.
func (idx *Index) laggingOffsets() *laggingOffsets {
	if idx.lagging == nil {
		idx.lagging = idx.gatherLaggingOffsets()
	}
	return idx.lagging
}

// gatherLaggingOffsets gathers the offsets groups lag from: two passes over
// the commits fill one array partition by partition, then each partition's
// are sorted and repeats dropped.
func (idx *Index) gatherLaggingOffsets() *laggingOffsets {
	bounds := make([]int, len(idx.Parts)+1)
	idx.eachLagging(func(rank int32, _ int64) { bounds[rank+1]++ })
	for rank := range idx.Parts {
		bounds[rank+1] += bounds[rank]
	}
	offsets := make([]int64, bounds[len(idx.Parts)])
	next := slices.Clone(bounds[:len(idx.Parts)])
	idx.eachLagging(func(rank int32, from int64) {
		offsets[next[rank]] = from
		next[rank]++
	})
	// Sorted and compacted in place: a partition's distinct offsets move
	// down over the repeats of those before it.
	kept, start := 0, 0
	for rank := range idx.Parts {
		end := bounds[rank+1]
		bounds[rank] = kept
		own := offsets[start:end]
		slices.Sort(own)
		for i, o := range own {
			if i == 0 || o != own[i-1] {
				offsets[kept] = o
				kept++
			}
		}
		start = end
	}
	bounds[len(idx.Parts)] = kept
	return &laggingOffsets{bounds: bounds, offsets: offsets[:kept]}
}

// eachLagging calls fn with the partition and offset of every group that
// lags: consumer groups from their committed offsets, share groups from
// their start offsets.
func (idx *Index) eachLagging(fn func(rank int32, from int64)) {
	for _, commits := range idx.commits {
		for _, rc := range commits {
			if from, ok := idx.behind(rc); ok {
				fn(rc.rank, from)
			}
		}
	}
	for _, shares := range idx.shares {
		for _, rs := range shares {
			if rs.rank < 0 || rs.start < 0 {
				continue // no end offset read, or no start offset yet
			}
			if from, ok := idx.behind(rankedCommit{rank: rs.rank, committed: rs.start}); ok {
				fn(rs.rank, from)
			}
		}
	}
}

// of is the distinct offsets groups lag from on the partition of rank.
func (l *laggingOffsets) of(rank int) []int64 {
	return l.offsets[l.bounds[rank]:l.bounds[rank+1]]
}

// raise moves the offsets of the partitions of ranks (sorted), whose log
// starts rose, up to their new start (ConsumeFrom), dropping those at or
// past the end and the repeats; the arrays are compacted in place from the
// first of them on.
func (l *laggingOffsets) raise(parts []Partition, ranks []int32) {
	kept := l.bounds[ranks[0]]
	for r := int(ranks[0]); r < len(parts); r++ {
		lo, hi := l.bounds[r], l.bounds[r+1]
		l.bounds[r] = kept
		moved := len(ranks) > 0 && int(ranks[0]) == r
		if moved {
			ranks = ranks[1:]
		}
		for _, o := range l.offsets[lo:hi] {
			if moved {
				o = max(o, parts[r].Start)
				if o >= parts[r].End {
					break // sorted: so are the rest
				}
				if kept > l.bounds[r] && l.offsets[kept-1] == o {
					continue
				}
			}
			l.offsets[kept] = o
			kept++
		}
	}
	l.bounds[len(parts)] = kept
	l.offsets = l.offsets[:kept]
}

// EachLowestLagging calls fn with each partition on which a group lags and
// the lowest offset such a group consumes from (ConsumeFrom: the log start
// for a group below it), in rank order. It reads the offsets the index
// gathers once for the scrape (OutOfTable reads them too), not the
// commits again.
func (idx *Index) EachLowestLagging(fn func(p Partition, from int64)) {
	lagging := idx.laggingOffsets()
	for rank := range idx.Parts {
		if lo, hi := lagging.bounds[rank], lagging.bounds[rank+1]; lo < hi {
			fn(idx.Parts[rank], lagging.offsets[lo])
		}
	}
}
