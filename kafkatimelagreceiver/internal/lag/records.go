package lag

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// RecordTimes remembers the timestamps read for records at committed offsets
// older than their partition's table, so that a group stuck at one offset
// costs one Fetch, not one per scrape. Entries live while some group is still
// committed there. It belongs to the scrape, which alone reads and writes
// it; only the producers' clocks are also read by the state's saves
// (EncodeClocks), under a lock of their own. Records are kept by
// partition, so that a scrape finds a partition's once and not once per
// group committed on it.
type RecordTimes struct {
	known map[kafka.TopicPartition]partitionRecords
	// clocks are the producers' clocks the reads measured (Proof), by
	// partition. The state's saves read them from another goroutine
	// (EncodeClocks): what changes them holds clocksMu, which the scrape's
	// own reads of them need not.
	clocks   map[kafka.TopicPartition]partitionClocks
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
	// changes counts the calls that changed known, so that a lookup
	// remembered (AppendTimes) is known to be current.
	changes int
}

// SetTopics takes the topics' settings as last read: a topic missing (not
// read, or refused) is taken to stamp CreateTime, unbounded, and not to
// compact.
func (r *RecordTimes) SetTopics(topics map[string]kafka.TopicRetention) {
	r.changes++
	r.topics = topics
}

// compacted tells whether tp's topic compacts.
func (r *RecordTimes) compacted(tp kafka.TopicPartition) bool {
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

func NewRecordTimes() *RecordTimes {
	return &RecordTimes{known: map[kafka.TopicPartition]partitionRecords{}, clocks: map[kafka.TopicPartition]partitionClocks{},
		transactional: map[kafka.TopicPartition]bool{}}
}

// PutAll remembers the records a read found, and counts those that give no
// time. A timestamp after the record provably existed (existed) is not when
// it was appended: such a record gives no time (kafka.RecordUntimed), like
// one no clock could have written; a producer clock minutes ahead would
// otherwise date records at the scrape, and hide their lag. The records'
// brackets in proof measure their producers' clocks.
func (r *RecordTimes) PutAll(found kafka.RecordReads, existed Existed, proof Proof) Untimed {
	r.changes++
	r.clocksMu.Lock()
	defer r.clocksMu.Unlock()
	if proof.Index != nil {
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
				if ts.Timestamp-existed.by(end, hasEnd, ts.Offset) <= clockStepMin {
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
func (r *RecordTimes) noteTransactions(tp kafka.TopicPartition, rec kafka.RecordTimestamp) {
	switch {
	case fromIndex(rec) || rec.Found == kafka.RecordUntimed:
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
func (r *RecordTimes) MarkersPossible(tp kafka.TopicPartition) bool {
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

// of returns p's records. A scrape asks once per group committed on the
// partition: p remembers them until the records change.
func (r *RecordTimes) of(p *Partition) *resolvedRecords {
	if p.records.from != r || p.records.changes != r.changes {
		topic := r.topics[p.Topic]
		within, bounded := topic.StampsWithin()
		p.records = resolvedRecords{from: r, changes: r.changes, records: r.known[p.TopicPartition], clocks: r.clocks[p.TopicPartition],
			stampsWithin: within, stampsBounded: bounded, compact: topic.Compact}
	}
	return &p.records
}

// resolvedRecords are a partition's records and its producers' clocks as
// RecordTimes held them after changes changes.
type resolvedRecords struct {
	from    *RecordTimes
	changes int
	records partitionRecords
	clocks  partitionClocks
	// stampsWithin is how far the topic's configuration proves its stamps
	// from their appends, when stampsBounded; compact: the topic compacts.
	stampsWithin  time.Duration
	stampsBounded bool
	compact       bool
}

// stampsShown tells whether rec's stamp dates it at a scrape at at.
func (rr *resolvedRecords) stampsShown(rec kafka.RecordTimestamp, at int64) bool {
	return rr.clocks.stampsShown(rec, at-rec.Timestamp, rr.stampsWithin, rr.stampsBounded)
}

// Forget drops everything known about the partitions, whose logs were
// recreated or truncated.
func (r *RecordTimes) Forget(partitions []kafka.TopicPartition) {
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
func (r *RecordTimes) Retain(used UsedRecords) {
	r.changes++
	for tp, pr := range r.known {
		offsets := used[tp]
		kept := pr[:0]
		for _, e := range pr {
			if _, ok := slices.BinarySearch(offsets, e.offset); ok {
				kept = append(kept, e)
			}
		}
		if len(kept) == 0 {
			delete(r.known, tp)
			continue
		}
		r.known[tp] = slices.Clip(kept)
	}
}

// UsedRecords are the records a scrape's estimates may date from: by
// partition, its offsets ascending. A set of (partition, offset) pairs
// would hash a topic name for every lagging offset of every scrape, a
// million at a busy cluster's size; this looks each partition up once.
type UsedRecords map[kafka.TopicPartition][]int64

// Len is how many records are in use.
func (u UsedRecords) Len() int {
	n := 0
	for _, offsets := range u {
		n += len(offsets)
	}
	return n
}

// Merge adds other's records to u.
func (u UsedRecords) Merge(other UsedRecords) {
	for tp, offsets := range other {
		merged := append(u[tp], offsets...)
		slices.Sort(merged)
		u[tp] = slices.Compact(merged)
	}
}

// IdleBeforeRecordRead is how long a partition's end offset must have stood
// still before the records at lagging groups' offsets inside its table are
// read to tell data from transaction markers. A partition written a few
// times a second and sampled faster looks still between two samples now and
// then; reading for it every scrape would cost a Fetch per broker for
// nothing, since the next write makes the lag real data. A group sitting on
// a marker is found caught up once the partition has been still this long.
const IdleBeforeRecordRead = time.Second

// OutOfTable lists the records whose append time no table can tell well:
// the oldest unconsumed record of a lagging group, older than its table or
// inside a stretch of it that was not watched (the collector or Kafka was
// down); and, on a partition whose end offset has stood still for
// IdleBeforeRecordRead, the record at a lagging group's offset even inside
// the table, since only a read tells a record from a transaction marker: a
// group committed on the last transaction's commit marker (last offset + 1)
// lags by 1 for ever and must be found caught up, not ageing with the
// clock; and last the records a table dates only coarsely (Coarse), whose
// reads refine an estimate rather than make one, those of a partition
// within refineSpan of its furthest behind. Missing are those not read
// yet, or read short of today's end, by partition: first the partitions
// holding a record no table dates, then the others, each furthest behind
// first (when a cap bites, the worst lags are the ones worth knowing);
// used is every such record, read or not.
func OutOfTable(idx *Index, at int64, tables Tables, records *RecordTimes) (missing []kafka.PartitionOffsets, used UsedRecords) {
	used = UsedRecords{}
	var wanted []wantedPartition
	// Groups of a partition often share an offset: each record is judged
	// once. The offsets are gathered by partition to find the distinct
	// ones, rather than looked up pair by pair in a set.
	lagging := idx.laggingOffsets()
	for rank := range idx.Parts {
		p := &idx.Parts[rank]
		offsets := lagging.of(rank)
		if len(offsets) == 0 {
			continue
		}
		// Looked up here, not through records.of: the read leaves the index
		// as it built it.
		known := records.known[p.TopicPartition]
		// A compacted topic's committed offset may hold no record: its
		// records are read (or found exactly in the index) like those of
		// an idle partition, whose table cannot tell either.
		idle := tables.Idle(p.Table, p.End, IdleBeforeRecordRead) || records.compacted(p.TopicPartition)
		markers := records.MarkersPossible(p.TopicPartition)
		apart := records.ClocksApart(p.TopicPartition)
		indexIdle := tables.Idle(p.Table, p.End, IdleBeforeMarkerCheck)
		young := tables.Young(p.Table, IdleBeforeMarkerCheck)
		var inUse []int64 // ascending, as lagging.of gives them
		w := wantedPartition{rank: int32(rank)}
		firstRefined := int64(-1)
		for i, from := range offsets {
			b, ok := tables.Bracket(p.Table, from, timetable.Sample{Offset: p.End, At: at})
			dated := ok && !b.Gap && !idle
			coarse := dated && Coarse(b, from, ExpectedAppend(b.Lo, b.Hi, from), at)
			if dated && !coarse {
				continue
			}
			if inUse == nil {
				inUse = make([]int64, 0, len(offsets)-i)
			}
			inUse = append(inUse, from)
			// A record the time index dated where a marker may stand is
			// still to be read: only a read tells data from a marker.
			check := apart || markerCheck(markers, indexIdle, young, b)
			rec, read := known.get(from)
			if read && (rec.Found != kafka.RecordNone || rec.Offset >= p.End) && !(check && fromIndex(rec)) {
				// Read before, and nothing since can change the answer: a
				// read that found only an open transaction, or stopped
				// short of today's end, needs a new read.
				continue
			}
			// A record the index dated, wanted again for a marker check
			// only, has a date: it waits behind the records that have none.
			rechecked := read && fromIndex(rec)
			behind := p.End - from
			switch {
			case rechecked:
				if !w.undated && firstRefined < 0 {
					w.behind = max(w.behind, behind)
				}
			case !coarse:
				if !w.undated {
					w.undated, w.behind = true, behind
				}
			case firstRefined < 0:
				firstRefined = from
				if !w.undated {
					w.behind = behind
				}
			case from-firstRefined >= refineSpan:
				continue
			}
			w.offsets = append(w.offsets, from)
		}
		if len(inUse) > 0 {
			used[p.TopicPartition] = inUse
		}
		if len(w.offsets) > 0 {
			wanted = append(wanted, w)
		}
	}
	slices.SortFunc(wanted, func(a, b wantedPartition) int {
		if a.undated != b.undated {
			if a.undated {
				return -1
			}
			return 1
		}
		// Ranks follow (topic, partition).
		return cmp.Or(cmp.Compare(b.behind, a.behind), cmp.Compare(a.rank, b.rank))
	})
	missing = make([]kafka.PartitionOffsets, len(wanted))
	for i, w := range wanted {
		p := &idx.Parts[w.rank]
		missing[i] = kafka.PartitionOffsets{TopicPartition: p.TopicPartition, Offsets: w.offsets, Near: clockBoundaries(p, w.offsets, at, tables, records.stampsMeasured(p.TopicPartition))}
	}
	return missing, used
}

// wantedPartition is a partition whose records OutOfTable lists, with what
// orders it.
type wantedPartition struct {
	rank    int32
	offsets []int64 // ascending
	// undated: some record is one no table dates; behind is how many
	// records lie between the furthest behind of those (else of the coarse
	// ones) and the end.
	undated bool
	behind  int64
}

// refineSpan bounds how far past a partition's first record read to refine
// an estimate (its furthest behind) the others it refines in the same
// scrape may lie, in offsets. A read answers every wanted offset that the
// batches it returns hold, and the first read asks for 64 KiB: groups near
// the head of a busy partition sit within a few hundred records of each
// other, and are dated by that one read rather than left to the table's
// coarse bracket. Offsets further out would each cost a Fetch round.
const refineSpan = 512
