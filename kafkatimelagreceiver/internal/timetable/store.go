package timetable

import (
	"fmt"
	"sync"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// Store holds the interpolation table of every tracked partition. The sampler
// and the scraper share it; its lock is only ever held for in-memory work,
// never across a Kafka request.
type Store struct {
	mu sync.Mutex
	// maxPoints and maxGap are given to every table, including restored
	// ones: the current configuration applies, not the one state was saved
	// under.
	maxPoints int
	maxGap    time.Duration
	tables    map[kafka.TopicPartition]*Table
	// starts holds the last log start offset read for each partition: it
	// tells when retention deleted records a group never consumed.
	starts map[kafka.TopicPartition]int64
	// resets holds the partitions whose table a Record reset since the last
	// TakeResets, so that what the caller learned about their old log can
	// be forgotten too, whichever goroutine's read saw the reset.
	resets map[kafka.TopicPartition]struct{}
}

// NewStore returns an empty store whose tables hold at most maxPoints points
// and count segments longer than maxGap as gaps (see NewTable).
func NewStore(maxPoints int, maxGap time.Duration) *Store {
	return &Store{
		maxPoints: maxPoints,
		maxGap:    maxGap,
		tables:    map[kafka.TopicPartition]*Table{},
		starts:    map[kafka.TopicPartition]int64{},
		resets:    map[kafka.TopicPartition]struct{}{},
	}
}

// Track makes the given partitions the tracked set: new ones get an empty
// table (so the sampler starts reading them) and the tables of partitions no
// longer tracked are dropped, so memory follows the live set, not its history.
// A pending reset of a dropped partition goes too: nothing of it is tracked
// any more, and the pending set stays bounded by the tracked one.
func (s *Store) Track(partitions map[kafka.TopicPartition]struct{}) (dropped int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tp := range s.tables {
		if _, ok := partitions[tp]; !ok {
			delete(s.tables, tp)
			delete(s.starts, tp)
			delete(s.resets, tp)
			dropped++
		}
	}
	for tp := range partitions {
		if _, ok := s.tables[tp]; !ok {
			s.tables[tp] = NewTable(s.maxPoints, s.maxGap)
		}
	}
	return dropped
}

// Partitions returns the tracked partitions, sorted.
func (s *Store) Partitions() []kafka.TopicPartition {
	s.mu.Lock()
	out := make([]kafka.TopicPartition, 0, len(s.tables))
	for tp := range s.tables {
		out = append(out, tp)
	}
	s.mu.Unlock()
	kafka.SortPartitions(out)
	return out
}

// Record adds an end-offset read to the tables of tracked partitions. The
// log start of a partition whose table it resets is forgotten with the old
// log; TakeResets tells which those were.
func (s *Store) Record(read kafka.OffsetRead) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tp, offset := range read.Offsets {
		table, ok := s.tables[tp]
		if !ok {
			continue
		}
		if table.Add(offset, read.Sent, read.Received) == Reset {
			delete(s.starts, tp)
			s.resets[tp] = struct{}{}
		}
	}
}

// TakeResets returns the partitions whose table a Record reset since the
// last call, sorted and each once, and forgets them.
func (s *Store) TakeResets() []kafka.TopicPartition {
	s.mu.Lock()
	if len(s.resets) == 0 {
		s.mu.Unlock()
		return nil
	}
	out := make([]kafka.TopicPartition, 0, len(s.resets))
	for tp := range s.resets {
		out = append(out, tp)
	}
	clear(s.resets)
	s.mu.Unlock()
	kafka.SortPartitions(out)
	return out
}

// RecordStart keeps the log start offsets of tracked partitions.
func (s *Store) RecordStart(read kafka.OffsetRead) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tp, offset := range read.Offsets {
		if _, ok := s.tables[tp]; ok {
			s.starts[tp] = offset
		}
	}
}

// StartOffsets returns a copy of the known log start offsets.
func (s *Store) StartOffsets() map[kafka.TopicPartition]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[kafka.TopicPartition]int64, len(s.starts))
	for tp, offset := range s.starts {
		out[tp] = offset
	}
	return out
}

// Ref names one partition's table for Store.Estimate. It is opaque so that
// a table cannot be read outside the store's lock while the sampler appends
// to it. The zero Ref names no table.
type Ref struct {
	table *Table
}

// Refs resolves the partitions' tables, in order (the zero Ref where a
// partition has none), so that a scrape hashes each partition once rather
// than once per group that commits on it. A Ref stays right until the next
// Track or RestoreState, which replace tables; until then the sampler only
// appends to the tables a Ref names.
func (s *Store) Refs(tps []kafka.TopicPartition) []Ref {
	out := make([]Ref, len(tps))
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, tp := range tps {
		out[i] = Ref{s.tables[tp]}
	}
	return out
}

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

// Bracket is Table.Bracket on the table ref names, under the store's lock.
func (s *Store) Bracket(ref Ref, c int64, upper Sample) (lo, hi Sample, ok, gap bool) {
	if ref.table == nil {
		return Sample{}, Sample{}, false, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return ref.table.Bracket(c, upper)
}

// Idle is Table.Idle on the table ref names, under the store's lock.
func (s *Store) Idle(ref Ref, end int64) bool {
	if ref.table == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return ref.table.Idle(end)
}

// Oldest returns the oldest point of the table ref names: by then every
// record below its offset had been appended, so no record at or above it
// can be older.
func (s *Store) Oldest(ref Ref) (Sample, bool) {
	if ref.table == nil {
		return Sample{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(ref.table.points) == 0 {
		return Sample{}, false
	}
	return ref.table.points[0], true
}

// Points returns how many points the tables hold in all.
func (s *Store) Points() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, t := range s.tables {
		n += len(t.points)
	}
	return n
}

// EncodeState serialises every non-empty table with its log start offset.
// The copy is taken under the lock and encoded outside it, so that saving
// delays neither the sampler nor a scrape.
func (s *Store) EncodeState() []byte {
	s.mu.Lock()
	tables := make([]storedTable, 0, len(s.tables))
	for tp, t := range s.tables {
		if len(t.points) == 0 {
			continue
		}
		start, hasStart := s.starts[tp]
		tables = append(tables, storedTable{tp: tp, table: t.clone(), start: start, hasStart: hasStart})
	}
	s.mu.Unlock()
	return encodeState(tables)
}

// RestoreState installs the tables of state made by EncodeState (of this
// release or the previous one), as the tracked set until the first Track
// says which are still wanted. The store's bounds apply: tables saved under
// a larger maxPoints are thinned. Nothing is installed unless all of data
// decodes: the error wraps ErrStateCorrupt when data is damaged, and says
// which version it is when it is another version's.
func (s *Store) RestoreState(data []byte) (tables int, err error) {
	decoded, err := decodeState(data, s.maxPoints, s.maxGap)
	if err != nil {
		return 0, fmt.Errorf("restore interpolation tables from %d bytes: %w", len(data), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range decoded {
		s.tables[st.tp] = st.table
		if st.hasStart {
			s.starts[st.tp] = st.start
		}
	}
	return len(decoded), nil
}
