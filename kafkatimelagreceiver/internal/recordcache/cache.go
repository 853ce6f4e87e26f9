// Package recordcache remembers what the scrapes read of records: the
// timestamps of the records the lagging groups sit on, the producers'
// clocks those reads measured (package clocks), whether a partition's
// producers write in transactions, and what the topics' configuration
// says of their stamps. A scrape dates through it (lag.AppendTimes) and
// fills it (dating); the state's saves read its clocks.
package recordcache

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/clocks"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// Cache remembers the timestamps read for records at committed offsets
// older than their partition's table, so that a group stuck at one offset
// costs one Fetch, not one per scrape. Entries live while some group is still
// committed there. It belongs to the scrape, which alone reads and writes
// it; only the producers' clocks are also read by the state's saves
// (EncodeClocks), under a lock of their own. Records are kept by
// partition, so that a scrape finds a partition's once and not once per
// group committed on it.
type Cache struct {
	known map[kafka.TopicPartition]partitionRecords
	// clocks are the producers' clocks the reads measured (Proof), by
	// partition. The state's saves read them from another goroutine
	// (EncodeClocks): what changes them holds clocksMu, which the scrape's
	// own reads of them need not.
	clocks   map[kafka.TopicPartition]clocks.Partition
	clocksMu sync.Mutex
	// transactional is what reads showed of a partition's batches: true
	// once one was written in a transaction (or only markers were found),
	// false once a data record read was not; a partition never read is
	// missing. Only a read tells a transaction marker from data, and only a
	// partition that may hold markers needs one (MarkersPossible).
	transactional map[kafka.TopicPartition]bool
	// topics are the settings of the topics read (SetTopics): whether
	// their stamps are append times or bounded near them, and whether
	// they compact.
	topics map[string]kafka.TopicRetention
	// trusted names the topics whose stamps are taken to be append times
	// by configuration (TrustedStamps); nil: none.
	trusted func(topic string) bool
	// changes counts the calls that changed known, so that a lookup
	// remembered (AppendTimes) is known to be current.
	changes int
}

// SetTopics takes the topics' settings as last read: a topic missing (not
// read, or refused) is taken to stamp CreateTime, unbounded, and not to
// compact.
func (r *Cache) SetTopics(topics map[string]kafka.TopicRetention) {
	r.changes++
	r.topics = topics
}

// compacted tells whether tp's topic compacts.
func (r *Cache) compacted(tp kafka.TopicPartition) bool {
	return r.topics[tp.Topic].Compact
}

// partitionRecords are one partition's records read, by offset, in one
// array: a scrape looks them up once per group committed on the partition.
type partitionRecords []recordEntry

type recordEntry struct {
	offset int64
	ts     kafka.RecordTimestamp
}

func (pr partitionRecords) get(offset int64) (kafka.RecordTimestamp, bool) {
	if len(pr) <= 8 {
		// Few groups sit apart on a partition: a scan beats a search.
		for i := range pr {
			if pr[i].offset >= offset {
				return pr[i].ts, pr[i].offset == offset
			}
		}
		return kafka.RecordTimestamp{}, false
	}
	i, ok := slices.BinarySearchFunc(pr, offset, compareOffset)
	if !ok {
		return kafka.RecordTimestamp{}, false
	}
	return pr[i].ts, true
}

func (pr partitionRecords) put(offset int64, ts kafka.RecordTimestamp) partitionRecords {
	i, ok := slices.BinarySearchFunc(pr, offset, compareOffset)
	if ok {
		pr[i].ts = ts
		return pr
	}
	return slices.Insert(pr, i, recordEntry{offset: offset, ts: ts})
}

func compareOffset(e recordEntry, offset int64) int { return cmp.Compare(e.offset, offset) }

// Option sets up a Cache.
type Option func(*Cache)

// TrustedStamps takes the stamps of the topics trusted names (nil: none)
// to be append times before any read shows it (trusted_timestamp_topics).
func TrustedStamps(trusted func(topic string) bool) Option {
	return func(r *Cache) { r.trusted = trusted }
}

// New is an empty cache, set up by opts.
func New(opts ...Option) *Cache {
	r := &Cache{known: map[kafka.TopicPartition]partitionRecords{}, clocks: map[kafka.TopicPartition]clocks.Partition{},
		transactional: map[kafka.TopicPartition]bool{}}
	for _, o := range opts {
		o(r)
	}
	return r
}

// PutAll remembers the records a read found, and counts those that give no
// time. A timestamp after the record provably existed (existed) is not when
// it was appended: such a record gives no time (kafka.RecordUntimed), like
// one no clock could have written; a producer clock minutes ahead would
// otherwise date records at the scrape, and hide their lag. The records'
// brackets in proof measure their producers' clocks.
func (r *Cache) PutAll(found kafka.RecordReads, existed Existed, proof Proof) Untimed {
	r.changes++
	r.clocksMu.Lock()
	defer r.clocksMu.Unlock()
	if proof.Appended != nil {
		r.forgetOldClocks(proof.At)
	}
	var untimed Untimed
	for tp, reads := range found {
		if len(reads) == 0 {
			continue
		}
		end, hasEnd := existed.End[tp]
		checked := make([]kafka.RecordRead, len(reads))
		timed := make([]kafka.RecordRead, 0, len(reads))
		for i, read := range reads {
			ts := read.RecordTimestamp
			switch {
			case ts.Found == kafka.RecordUntimed:
				untimed.Invalid++
			case ts.Found == kafka.RecordTimed && ts.Timestamp > existed.by(end, hasEnd, ts.Offset):
				if ts.Timestamp-existed.by(end, hasEnd, ts.Offset) <= clocks.StepMin {
					// A clock a little ahead: the tables measure it, and
					// its records near the head are the ones that do.
					timed = append(timed, read)
				}
				ts = kafka.RecordTimestamp{Offset: ts.Offset, Found: kafka.RecordUntimed}
				untimed.Future++
			case ts.Found == kafka.RecordTimed:
				timed = append(timed, read)
			}
			checked[i] = kafka.RecordRead{Wanted: read.Wanted, RecordTimestamp: ts}
		}
		// In offset order: a clock counts the reads of records past those
		// it counted (producerClock.count).
		slices.SortStableFunc(timed, func(a, b kafka.RecordRead) int { return cmp.Compare(a.Offset, b.Offset) })
		// A stamp further ahead than a clock a little off gives no time,
		// and measures no clock either. Measured
		// before the records are kept: a clock that starts over bakes the
		// records read before this read, not those of this read.
		r.learnClocks(tp, timed, proof)
		known := r.known[tp]
		for i, read := range checked {
			known = known.put(read.Wanted, read.RecordTimestamp)
			r.noteTransactions(tp, reads[i].RecordTimestamp)
		}
		r.known[tp] = known
	}
	return untimed
}

// noteTransactions learns from a record read (not one dated from the time
// index) whether its partition's producers write in transactions: once one
// did, the partition may hold markers for good.
func (r *Cache) noteTransactions(tp kafka.TopicPartition, rec kafka.RecordTimestamp) {
	switch {
	case clocks.FromIndex(rec) || rec.Found == kafka.RecordUntimed:
	case rec.Found == kafka.RecordNone || rec.Transactional:
		r.transactional[tp] = true
	default:
		if _, known := r.transactional[tp]; !known {
			r.transactional[tp] = false
		}
	}
}

// MarkersPossible tells whether tp may hold transaction markers: a read
// found a transactional batch or only markers there, or no record of it
// was read yet.
func (r *Cache) MarkersPossible(tp kafka.TopicPartition) bool {
	transactional, known := r.transactional[tp]
	return transactional || !known
}

// Existed says by when the records a read found existed: those below
// their partition's end offset in End by EndAt, when that offset was read
// (the scrape's Snapshot.At); the others by Received, when the read
// returned. Times are unix nanoseconds.
type Existed struct {
	End      map[kafka.TopicPartition]int64
	EndAt    int64
	Received int64
}

// by is when the record at offset of a partition existed by, given the
// partition's end offset in End (hasEnd when it has one).
func (e Existed) by(end int64, hasEnd bool, offset int64) int64 {
	if hasEnd && offset < end {
		return min(e.EndAt, e.Received)
	}
	return e.Received
}

// Untimed counts the records of a read that give no time.
type Untimed struct {
	// Future were stamped after they provably existed (Existed).
	Future int64
	// Invalid have no timestamp, one no clock could have written, or a
	// batch that could not be read (kafka.RecordUntimed).
	Invalid int64
}

// Resolve points view at tp's records and clocks as the cache holds them
// now, unless it still does: a scrape asks once per group committed on
// the partition, and a view is looked up again only after the cache
// changed.
func (r *Cache) Resolve(tp kafka.TopicPartition, view *Partition) {
	if view.from == r && view.changes == r.changes && view.tp == tp {
		return
	}
	within, bounded := r.stampsWithin(tp.Topic)
	*view = Partition{from: r, changes: r.changes, tp: tp, records: r.known[tp], clocks: r.clocks[tp],
		stampsWithin: within, stampsBounded: bounded, compact: r.topics[tp.Topic].Compact}
}

// Partition is a view of a partition's records and its producers' clocks
// as the cache held them after changes changes (Resolve).
type Partition struct {
	from    *Cache
	changes int
	tp      kafka.TopicPartition
	records partitionRecords
	clocks  clocks.Partition
	// stampsWithin is how far the topic's configuration proves its stamps
	// from their appends, when stampsBounded; compact: the topic compacts.
	stampsWithin  time.Duration
	stampsBounded bool
	compact       bool
}

// Get is the record read at offset, when there is one.
func (v *Partition) Get(offset int64) (kafka.RecordTimestamp, bool) { return v.records.get(offset) }

// Clocks are the partition's producers' clocks.
func (v *Partition) Clocks() clocks.Partition { return v.clocks }

// Compacted tells whether the partition's topic compacts: an offset may
// hold no record.
func (v *Partition) Compacted() bool { return v.compact }

// StampsShown tells whether rec's stamp dates it at a scrape at at: the
// topic's configuration bounds its stamps, or its own clock shows them
// (clocks.Partition.StampsShown).
func (v *Partition) StampsShown(rec kafka.RecordTimestamp, at int64) bool {
	return v.clocks.StampsShown(rec, at-rec.Timestamp, v.stampsWithin, v.stampsBounded)
}

// Forget drops everything known about the partitions, whose logs were
// recreated or truncated.
func (r *Cache) Forget(partitions []kafka.TopicPartition) {
	r.changes++
	r.clocksMu.Lock()
	defer r.clocksMu.Unlock()
	for _, tp := range partitions {
		delete(r.known, tp)
		delete(r.clocks, tp)
		delete(r.transactional, tp)
	}
}

// Retain keeps only the entries still in use.
func (r *Cache) Retain(used Used) {
	r.changes++
	for tp, pr := range r.known {
		offsets := used[tp]
		kept := pr[:0]
		for _, e := range pr {
			if _, ok := slices.BinarySearch(offsets, e.offset); ok {
				kept = append(kept, e)
			}
		}
		switch {
		case len(kept) == 0:
			delete(r.known, tp)
		case cap(kept) > 2*len(kept):
			// A scrape puts many records of a partition (with the time
			// index, its answers too) and keeps the few its groups are
			// on: the array they grew into is let go, not held at its
			// largest until the next put.
			r.known[tp] = slices.Clone(kept)
		default:
			r.known[tp] = slices.Clip(kept)
		}
	}
}

// Used are the records a scrape's estimates may date from: by
// partition, its offsets ascending. A set of (partition, offset) pairs
// would hash a topic name for every lagging offset of every scrape, a
// million at a busy cluster's size; this looks each partition up once.
type Used map[kafka.TopicPartition][]int64

// Len is how many records are in use.
func (u Used) Len() int {
	n := 0
	for _, offsets := range u {
		n += len(offsets)
	}
	return n
}

// Merge adds other's records to u.
func (u Used) Merge(other Used) {
	for tp, offsets := range other {
		merged := append(u[tp], offsets...)
		slices.Sort(merged)
		u[tp] = slices.Compact(merged)
	}
}

// Facts is what the record cache says of a partition's records as a
// whole, as values: for dating to plan its searches of the time index.
type Facts struct {
	// MarkersPossible: transactions were read, or nothing yet
	// (Cache.MarkersPossible).
	MarkersPossible bool
	// ClocksApart: producers' clocks were measured apart
	// (Cache.ClocksApart).
	ClocksApart bool
	// Compacted: the topic compacts, so an offset may hold no record.
	Compacted bool
	// IndexClockPinned: the clock the time index's points measure is
	// pinned, so the records either side of the samples need no asking.
	IndexClockPinned bool
}

// Facts are what the cache says of tp's records.
func (r *Cache) Facts(tp kafka.TopicPartition) Facts {
	return Facts{MarkersPossible: r.MarkersPossible(tp), ClocksApart: r.ClocksApart(tp), Compacted: r.compacted(tp), IndexClockPinned: r.clocks[tp].IndexPinned()}
}

// Proof is what the tables prove of when the records a read found were
// appended, and when the scrape read its end offsets (At, unix
// nanoseconds). Its zero value proves nothing, and no clock is measured.
type Proof struct {
	// Appended is when the record at offset of tp was appended, as far as
	// the tables prove: after lo (clocks.Unbounded for an offset older
	// than its table) and by hi; not ok where they prove nothing.
	Appended func(tp kafka.TopicPartition, offset int64) (lo, hi int64, ok bool)
	At       int64
}

// Known is the record at offset of tp as the cache holds it, when it does.
func (r *Cache) Known(tp kafka.TopicPartition, offset int64) (kafka.RecordTimestamp, bool) {
	return r.known[tp].get(offset)
}

// ReadDates tells whether a read of rec, a record of tp the time index
// dated, would date it where the index's clock does not (readDates).
func (r *Cache) ReadDates(tp kafka.TopicPartition, rec kafka.RecordTimestamp, at int64) bool {
	return r.readDates(tp, rec, at)
}
