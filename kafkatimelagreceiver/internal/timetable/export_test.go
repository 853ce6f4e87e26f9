package timetable

// Estimate is Table.Estimate on the table ref names, under the store's lock:
// one lock and one search serve both the estimate and the gap flag.
func (s *Store) Estimate(ref Ref, c int64, upper Sample) (at int64, ok, gap bool) {
	if ref.table == nil {
		return 0, false, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return ref.table.Estimate(c, upper)
}
