package timetable

import (
	"slices"
	"sync"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// unknownReadsBeforeSkip is how many reads in a row must find a partition
// missing from the cluster before the sampler stops asking for it: a topic
// being created or a broker behind on metadata answers UNKNOWN for a moment.
const unknownReadsBeforeSkip = 3

// Clock returns the current time. The store measures with it how far time
// went between two reads (time.Now carries a monotonic reading, which steps
// of the wall clock do not move) and bounds restored times by it.
type Clock func() time.Time

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
	// clock is nil when the store is not to watch the wall clock (tests
	// whose reads carry made-up times).
	clock Clock
	frame clockFrame
	// monotonic measures the monotonic time between two reads' receipt;
	// nil is monotonicSince. Tests set it: Go cannot make a time whose wall
	// reading stepped while its monotonic one did not.
	monotonic func(from, to time.Time) time.Duration
	tables    map[kafka.TopicPartition]*Table
	// sorted is the tracked partitions in order as of the last Track or
	// RestoreState, which EncodeState saves without listing the map under
	// the lock. It is replaced, never modified.
	sorted []kafka.TopicPartition
	// starts holds the last log start offset read for each partition: it
	// tells when retention deleted records a group never consumed.
	starts map[kafka.TopicPartition]int64
	// startWatch keeps how the log starts changed, when watched.
	startWatch startWatch
	// resets holds the partitions whose table a Record reset since the last
	// TakeResets, so that what the caller learned about their old log can
	// be forgotten too, whichever goroutine's read saw the reset.
	resets map[kafka.TopicPartition]struct{}
	// unknown counts the reads in a row that found each partition missing
	// from the cluster.
	unknown map[kafka.TopicPartition]int
	// clusterID and topicIDs are the identity of what the tables were
	// sampled from (see Identify); identified is whether the cluster has
	// confirmed them since the store was made or restored.
	clusterID  string
	topicIDs   map[string]kafka.TopicID
	identified bool
	// compaction is the tables' working storage for dropping points,
	// reused under the lock from one table to the next.
	compaction compactBuffers
}

// NewStore returns an empty store whose tables hold at most maxPoints points
// and count segments longer than maxGap as gaps (see NewTable). With a clock
// it corrects its tables for steps of the wall clock (see Record) and
// refuses restored tables from the future; nil leaves times as they come.
func NewStore(maxPoints int, maxGap time.Duration, clock Clock) *Store {
	return &Store{
		maxPoints: maxPoints,
		maxGap:    maxGap,
		clock:     clock,
		tables:    map[kafka.TopicPartition]*Table{},
		starts:    map[kafka.TopicPartition]int64{},
		resets:    map[kafka.TopicPartition]struct{}{},
		unknown:   map[kafka.TopicPartition]int{},
		topicIDs:  map[string]kafka.TopicID{},
	}
}

// Track adds the wanted partitions to the tracked set, as wanted at now:
// new ones get an empty table, so the sampler starts reading them. A table
// no Track has wanted for keepUnwanted is dropped, so that memory, saved
// state and the sampler's work follow the live set, not its history: 0
// drops every table not wanted now, which a caller that read every group
// passes; one whose read was partial passes how long a table may outlive
// the groups it could not read. It returns the tracked partitions, sorted.
func (s *Store) Track(wanted map[kafka.TopicPartition]struct{}, now time.Time, keepUnwanted time.Duration) (tracked []kafka.TopicPartition, dropped int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tp, table := range s.tables {
		if _, ok := wanted[tp]; ok {
			continue
		}
		if now.Sub(table.wanted) < keepUnwanted {
			continue
		}
		s.drop(tp)
		dropped++
	}
	for tp := range wanted {
		table, ok := s.tables[tp]
		if !ok {
			table = NewTable(s.maxPoints, s.maxGap)
			s.tables[tp] = table
		}
		table.wanted = now
	}
	if dropped > 0 {
		s.forgetUntrackedTopicIDs()
	}
	tracked = make([]kafka.TopicPartition, 0, len(s.tables))
	for tp := range s.tables {
		tracked = append(tracked, tp)
	}
	kafka.SortPartitions(tracked)
	s.sorted = slices.Clone(tracked)
	return tracked, dropped
}

// sortTracked sets sorted from the tables. Called with s.mu held.
func (s *Store) sortTracked() {
	sorted := make([]kafka.TopicPartition, 0, len(s.tables))
	for tp := range s.tables {
		sorted = append(sorted, tp)
	}
	kafka.SortPartitions(sorted)
	s.sorted = sorted
}

// drop forgets everything about a partition. A pending reset goes too:
// nothing of it is tracked any more, and the pending set stays bounded by
// the tracked one.
func (s *Store) drop(tp kafka.TopicPartition) {
	delete(s.tables, tp)
	delete(s.starts, tp)
	s.startWatch.forget(tp, false)
	delete(s.resets, tp)
	delete(s.unknown, tp)
}

// Partitions returns the tracked partitions, sorted.
func (s *Store) Partitions() []kafka.TopicPartition {
	return s.partitions(false)
}

// SamplePartitions returns the tracked partitions the sampler reads, sorted:
// all but those the cluster said it does not have unknownReadsBeforeSkip
// reads in a row. Each of those costs a metadata refresh per read, for an
// answer that does not change until the topic is created again; the
// scrape's own read, which names every tracked partition, still asks, and a
// partition it finds again is sampled again.
func (s *Store) SamplePartitions() []kafka.TopicPartition {
	return s.partitions(true)
}

func (s *Store) partitions(skipUnknown bool) []kafka.TopicPartition {
	s.mu.Lock()
	out := make([]kafka.TopicPartition, 0, len(s.tables))
	for tp := range s.tables {
		if skipUnknown && s.unknown[tp] >= unknownReadsBeforeSkip {
			continue
		}
		out = append(out, tp)
	}
	s.mu.Unlock()
	kafka.SortPartitions(out)
	return out
}

// Record adds an end-offset read to the tables of tracked partitions. The
// log start of a partition whose table it resets is forgotten with the old
// log; TakeResets tells which those were, and which tables suspect a reset.
// When the wall clock was stepped since the last read, the tables are
// first corrected for it (see ClockStep), which the result reports.
func (s *Store) Record(read kafka.OffsetRead) ClockStep {
	s.mu.Lock()
	defer s.mu.Unlock()
	step := s.observeClock(read.Received)
	for tp, offset := range read.Offsets {
		table, ok := s.tables[tp]
		if !ok {
			continue
		}
		delete(s.unknown, tp)
		switch table.add(offset, read.Sent, read.Received, &s.compaction) {
		case Reset:
			delete(s.starts, tp)
			s.startWatch.forget(tp, true)
			s.resets[tp] = struct{}{}
		case Suspected:
			// What was read of the records at committed offsets may be of
			// the old log: read it again.
			s.resets[tp] = struct{}{}
		}
	}
	for _, tp := range read.Unknown {
		if _, ok := s.tables[tp]; ok {
			s.unknown[tp]++
		}
	}
	return step
}

// TakeResets returns the partitions whose table a Record or Identify reset,
// or a Record suspects of a reset, since the last call, sorted and each
// once, and forgets them.
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

// RecordStart keeps the log start offsets of tracked partitions and, when
// watched (WatchStartChanges), how they changed.
func (s *Store) RecordStart(read kafka.OffsetRead) {
	s.Locked(func(v View) { v.RecordStart(read) })
}

// RecordStart is Store.RecordStart under the caller's lock.
func (v View) RecordStart(read kafka.OffsetRead) {
	s := v.s
	at := unixNanos(read.Received)
	for tp, offset := range read.Offsets {
		if _, ok := s.tables[tp]; ok {
			prev, had := s.starts[tp]
			s.starts[tp] = offset
			s.startWatch.record(tp, prev, had, offset, at)
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
	s.mu.Lock()
	defer s.mu.Unlock()
	return View{s: s}.Refs(tps)
}

// Bracket is Table.Bracket on the table ref names, under the store's lock.
func (s *Store) Bracket(ref Ref, c int64, upper Sample) (Bracket, bool) {
	if ref.table == nil {
		return Bracket{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return ref.table.Bracket(c, upper)
}

// Young is Table.Young on the table ref names, under the store's lock; a
// missing table is young.
func (s *Store) Young(ref Ref, span time.Duration) bool {
	if ref.table == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return ref.table.Young(span)
}

// Idle is Table.Idle on the table ref names, under the store's lock.
func (s *Store) Idle(ref Ref, end int64, still time.Duration) bool {
	if ref.table == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return ref.table.Idle(end, still)
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
	if ref.table.n == 0 || ref.table.suspected {
		// A table suspected of a reset may be the old log's.
		return Sample{}, false
	}
	return ref.table.first, true
}

// Points returns how many points the tables hold in all.
func (s *Store) Points() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, t := range s.tables {
		n += t.len()
	}
	return n
}

// DefaultMaxSamples is how many points a table holds unless configured
// otherwise (the receiver's max_samples).
const DefaultMaxSamples = 512

// GapSamples is how many sampling intervals may pass between two table
// points before the stretch between them counts as unwatched: one late
// sample is noise, not an outage. A store's maxGap is that many sampling
// intervals.
const GapSamples = 3
