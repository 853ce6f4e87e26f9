package lag

import "slices"

// laggingOffsets are, partition by partition, the offsets the groups that
// lag on it consume from (ConsumeFrom), sorted, each once, and once
// Estimate ran, when the record at each was appended. A scrape judges
// (OutOfTable) and dates (Estimate) each such record once, however many
// groups sit on it, and partition by partition, while the partition's
// table and records are at hand, rather than group by group across every
// partition of the cluster.
type laggingOffsets struct {
	// bounds: the offsets of the partition of rank r are
	// offsets[bounds[r]:bounds[r+1]].
	bounds  []int
	offsets []int64
	dates   []appendDate // by offset, once Estimate ran
}

// appendDate is what an AppendTimeFunc said of one offset.
type appendDate struct {
	at     int64
	method Method
	ok     bool
}

// behind is the offset rc's group consumes from on its partition, and
// whether it lags there: the partition's end offset was read, and is past
// it.
func (idx *Index) behind(rc rankedCommit) (int64, bool) {
	p := &idx.Parts[rc.rank]
	if !p.HasEnd {
		return 0, false
	}
	from := ConsumeFrom(rc.committed, p.Start, p.HasStart)
	return from, from < p.End
}

// laggingOffsets gathers the offsets groups lag from, the first time it is
// asked: two passes over the commits fill one array partition by
// partition, then each partition's are sorted and repeats dropped.
func (idx *Index) laggingOffsets() *laggingOffsets {
	if idx.lagging != nil {
		return idx.lagging
	}
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
	idx.lagging = &laggingOffsets{bounds: bounds, offsets: offsets[:kept]}
	return idx.lagging
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

// Estimate dates, with appendTime, the record each lagging group consumes
// next (the oldest it has not consumed): each partition's, offset by
// offset, each offset once. GroupLags reads the dates; a scrape estimates
// once, after its record reads (OutOfTable).
func (idx *Index) Estimate(appendTime AppendTimeFunc) {
	l := idx.laggingOffsets()
	l.dates = make([]appendDate, len(l.offsets))
	for rank := range idx.Parts {
		p := &idx.Parts[rank]
		for i := l.bounds[rank]; i < l.bounds[rank+1]; i++ {
			at, method, ok := appendTime(p, l.offsets[i])
			l.dates[i] = appendDate{at: at, method: method, ok: ok}
		}
	}
}

// date is what Estimate found of the record at offset on the partition of
// rank; not ok before Estimate ran.
func (l *laggingOffsets) date(rank int32, offset int64) appendDate {
	if l == nil || l.dates == nil {
		return appendDate{}
	}
	lo, hi := l.bounds[rank], l.bounds[rank+1]
	i, found := slices.BinarySearch(l.offsets[lo:hi], offset)
	if !found {
		return appendDate{}
	}
	return l.dates[lo+i]
}
