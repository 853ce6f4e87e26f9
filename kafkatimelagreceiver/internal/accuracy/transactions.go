package accuracy

import "sort"

// openTxn is a transaction the last stable offset waits for: from its
// first batch's append until its marker was replicated, at its first
// offset.
type openTxn struct{ first, from, until int64 }

// StableAt is the last stable offset at time t, which a ListOffsets for the
// latest offset read_committed answers and a read_committed consumer reads
// up to: the high watermark, or the first offset of the oldest transaction
// still open (its marker not yet replicated) when that is lower.
func (tl *Timeline) StableAt(t int64) int64 {
	stable := tl.EndAt(t)
	for _, txns := range tl.open {
		i := sort.Search(len(txns), func(i int) bool { return txns[i].from > t }) - 1
		if i >= 0 && t < txns[i].until {
			stable = min(stable, txns[i].first)
		}
	}
	return stable
}
