package timetable

import (
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// View is the tables as one holder of the store's lock sees them (Locked):
// what it reads cannot change under it, and each call costs no lock of its
// own.
type View struct {
	s *Store
	// seek is where the last Bracket's search stopped: the next one on
	// the same table goes on from there (Table.bracket). Nil: each search
	// starts afresh.
	seek *seek
}

// Locked calls fn with the tables under the store's lock. fn does no I/O:
// the sampler's reads wait for it.
func (s *Store) Locked(fn func(v View)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(View{s: s, seek: &seek{}})
}

// Refs is Store.Refs under the caller's lock.
func (v View) Refs(tps []kafka.TopicPartition) []Ref {
	out := make([]Ref, len(tps))
	for i, tp := range tps {
		out[i] = Ref{v.s.tables[tp]}
	}
	return out
}

// Bracket is Table.Bracket on the table ref names. Brackets of one
// table's offsets in rising order, one after the other, decode its points
// once between them.
func (v View) Bracket(ref Ref, c int64, upper Sample) (Bracket, bool) {
	if ref.table == nil {
		return Bracket{}, false
	}
	if v.seek == nil {
		return ref.table.Bracket(c, upper)
	}
	return ref.table.bracket(c, upper, v.seek)
}

// Idle is Table.Idle on the table ref names.
func (View) Idle(ref Ref, end int64, still time.Duration) bool {
	if ref.table == nil {
		return false
	}
	return ref.table.Idle(end, still)
}

// Young is Table.Young on the table ref names; a missing table is young.
func (View) Young(ref Ref, span time.Duration) bool {
	return ref.table == nil || ref.table.Young(span)
}

// ProduceRates is Table.Rate of each table refs name, in order; a zero Ref
// gives a zero Rate.
func (View) ProduceRates(refs []Ref, window time.Duration) []Rate {
	out := make([]Rate, len(refs))
	for i, ref := range refs {
		if ref.table != nil {
			out[i] = ref.table.Rate(window)
		}
	}
	return out
}
