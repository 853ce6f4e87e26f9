package lag

// GroupLags is Estimates.GroupLags before any estimate: the lags, and
// only the caught-up ones dated.
func (idx *Index) GroupLags(out []PartitionLag, group string, at int64) []PartitionLag {
	e := Estimates{idx: idx}
	return e.GroupLags(out, group, at)
}

// ShareGroupLags is Estimates.ShareGroupLags before any estimate.
func (idx *Index) ShareGroupLags(out []SharePartitionLag, group string, at int64) []SharePartitionLag {
	e := Estimates{idx: idx}
	return e.ShareGroupLags(out, group, at)
}
