package kafkatimelagreceiver

import (
	"slices"
	"sync"
)

// tableStore holds the interpolation table of every tracked partition. The
// sampler and the scraper share it; its lock is only ever held for in-memory
// work, never across a Kafka request.
type tableStore struct {
	mu        sync.Mutex
	maxPoints int
	// maxGap is given to every table: see offsetTable.maxGap.
	maxGap int64
	tables map[topicPartition]*offsetTable
	// starts holds the last log start offset read for each partition: it
	// tells when retention deleted records a group never consumed.
	starts map[topicPartition]int64
}

func newTableStore(maxPoints int) *tableStore {
	return &tableStore{maxPoints: maxPoints, tables: map[topicPartition]*offsetTable{}, starts: map[topicPartition]int64{}}
}

// track makes the given partitions the tracked set: new ones get an empty
// table (so the sampler starts reading them) and the tables of partitions no
// longer tracked are dropped, so memory follows the live set, not its history.
func (s *tableStore) track(partitions map[topicPartition]struct{}) (dropped int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tp := range s.tables {
		if _, ok := partitions[tp]; !ok {
			delete(s.tables, tp)
			delete(s.starts, tp)
			dropped++
		}
	}
	for tp := range partitions {
		if _, ok := s.tables[tp]; !ok {
			s.tables[tp] = s.newTable()
		}
	}
	return dropped
}

func (s *tableStore) newTable() *offsetTable {
	t := newOffsetTable(s.maxPoints)
	t.maxGap = s.maxGap
	return t
}

// partitions returns the tracked partitions, sorted.
func (s *tableStore) partitions() []topicPartition {
	s.mu.Lock()
	out := make([]topicPartition, 0, len(s.tables))
	for tp := range s.tables {
		out = append(out, tp)
	}
	s.mu.Unlock()
	sortPartitions(out)
	return out
}

// record adds an end-offset read to the tables of tracked partitions and
// returns the partitions whose table it reset.
func (s *tableStore) record(read offsetRead) (reset []topicPartition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tp, offset := range read.offsets {
		table, ok := s.tables[tp]
		if !ok {
			continue
		}
		if table.add(offset, read.sent, read.received) == tableReset {
			delete(s.starts, tp)
			reset = append(reset, tp)
		}
	}
	return reset
}

// recordStart keeps the log start offsets of tracked partitions.
func (s *tableStore) recordStart(read offsetRead) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tp, offset := range read.offsets {
		if _, ok := s.tables[tp]; ok {
			s.starts[tp] = offset
		}
	}
}

// startOffsets returns a copy of the known log start offsets.
func (s *tableStore) startOffsets() map[topicPartition]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[topicPartition]int64, len(s.starts))
	for tp, offset := range s.starts {
		out[tp] = offset
	}
	return out
}

// resolveTables points each indexed partition at its table (nil when it has
// none), so that a scrape finds a table without hashing its partition once
// per group. The pointers stay right until the next track, which only the
// scrape calls, before it indexes; the tables' contents, which the sampler
// appends to meanwhile, are read through estimateIn, under the lock.
func (s *tableStore) resolveTables(parts []indexedPartition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range parts {
		parts[i].table = s.tables[parts[i].topicPartition]
	}
}

// estimateIn estimates when the record at offset c of table t was appended,
// and whether that comes from an unwatched stretch of the table; see
// offsetTable.estimate. One lock and one search serve both answers.
func (s *tableStore) estimateIn(t *offsetTable, c int64, upper offsetSample) (at int64, ok, gap bool) {
	if t == nil {
		return 0, false, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return t.estimate(c, upper)
}

// export copies every table with its log start offset, for saving.
func (s *tableStore) export() []storedTable {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]storedTable, 0, len(s.tables))
	for tp, t := range s.tables {
		if len(t.points) == 0 {
			continue
		}
		cp := &offsetTable{
			points:    append([]offsetSample(nil), t.points...),
			maxPoints: t.maxPoints,
			lastRead:  t.lastRead,
			maxGap:    t.maxGap,
		}
		for at := range t.gaps {
			cp.markGapEnd(at)
		}
		start, hasStart := s.starts[tp]
		out = append(out, storedTable{tp: tp, table: cp, start: start, hasStart: hasStart})
	}
	return out
}

// restore installs saved tables, as the tracked set until the first scrape
// says which are still wanted. The current configuration's bounds apply.
func (s *tableStore) restore(tables []storedTable) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range tables {
		st.table.maxPoints = s.maxPoints
		st.table.maxGap = s.maxGap
		if len(st.table.points) > s.maxPoints {
			st.table.thin()
		}
		s.tables[st.tp] = st.table
		if st.hasStart {
			s.starts[st.tp] = st.start
		}
	}
}

// points returns how many points the tables hold in all.
func (s *tableStore) points() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, t := range s.tables {
		n += t.len()
	}
	return n
}

func sortPartitions(tps []topicPartition) {
	slices.SortFunc(tps, compareTopicPartition)
}
