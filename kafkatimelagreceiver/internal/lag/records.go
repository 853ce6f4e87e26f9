package lag

import (
	"sort"
	"sync"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// RecordTimes remembers the timestamps read for records at committed offsets
// older than their partition's table, so that a group stuck at one offset
// costs one Fetch, not one per scrape. Entries live while some group is still
// committed there.
type RecordTimes struct {
	mu    sync.Mutex
	known map[kafka.RecordAt]kafka.RecordTimestamp
}

func NewRecordTimes() *RecordTimes {
	return &RecordTimes{known: map[kafka.RecordAt]kafka.RecordTimestamp{}}
}

func (r *RecordTimes) Get(at kafka.RecordAt) (kafka.RecordTimestamp, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ts, ok := r.known[at]
	return ts, ok
}

func (r *RecordTimes) PutAll(found map[kafka.RecordAt]kafka.RecordTimestamp) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for at, ts := range found {
		r.known[at] = ts
	}
}

// Forget drops everything known about the partitions, whose logs were
// recreated or truncated.
func (r *RecordTimes) Forget(partitions []kafka.TopicPartition) {
	if len(partitions) == 0 {
		return
	}
	drop := make(map[kafka.TopicPartition]struct{}, len(partitions))
	for _, tp := range partitions {
		drop[tp] = struct{}{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for at := range r.known {
		if _, ok := drop[at.TopicPartition]; ok {
			delete(r.known, at)
		}
	}
}

// Retain keeps only the entries still in use.
func (r *RecordTimes) Retain(used map[kafka.RecordAt]struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for at := range r.known {
		if _, ok := used[at]; !ok {
			delete(r.known, at)
		}
	}
}

// AppendTimes estimates append times the way a scrape does: from the
// partition's table where it brackets the offset in a watched stretch, else
// from the record's own timestamp when it was read, else from the table's
// straight line across an unwatched stretch.
func AppendTimes(tables *timetable.Store, records *RecordTimes, at int64) AppendTimeFunc {
	return func(p *Partition, c int64) (int64, Method, bool) {
		// The scrape's own end-offset read is the newest point there is.
		upper := timetable.Sample{Offset: p.End, At: at}
		appended, inTable, gap := tables.Estimate(p.Table, c, upper)
		if inTable && !gap {
			return appended, MethodTable, true
		}
		if ts, ok := records.Get(kafka.RecordAt{TopicPartition: p.TopicPartition, Offset: c}); ok {
			return ts.Timestamp, MethodRecord, true
		}
		if inTable {
			// An unwatched stretch, and no record read this time (capped):
			// the straight line is still the best guess there is.
			return appended, MethodTable, true
		}
		return 0, MethodNone, false
	}
}

// OutOfTable lists the records whose append time no table can tell well:
// the oldest unconsumed record of a lagging group, older than its table or
// inside a stretch of it that was not watched (the collector or Kafka was
// down). Missing are those not read yet, the furthest behind first (when a
// cap bites, the worst lags are the ones worth knowing); used is every such
// record, read or not.
func OutOfTable(idx *Index, at int64, tables *timetable.Store, records *RecordTimes) (missing []kafka.RecordAt, used map[kafka.RecordAt]struct{}) {
	used = map[kafka.RecordAt]struct{}{}
	behind := map[kafka.RecordAt]int64{}
	for _, commits := range idx.commits {
		for _, rc := range commits {
			p := &idx.Parts[rc.rank]
			if !p.HasEnd {
				continue
			}
			from := ConsumeFrom(rc.committed, p.Start, p.HasStart)
			if from >= p.End {
				continue
			}
			if _, ok, gap := tables.Estimate(p.Table, from, timetable.Sample{Offset: p.End, At: at}); ok && !gap {
				continue
			}
			rec := kafka.RecordAt{TopicPartition: p.TopicPartition, Offset: from}
			if _, seen := used[rec]; seen {
				continue
			}
			used[rec] = struct{}{}
			if _, ok := records.Get(rec); !ok {
				missing = append(missing, rec)
				behind[rec] = p.End - from
			}
		}
	}
	sort.Slice(missing, func(i, j int) bool {
		if li, lj := behind[missing[i]], behind[missing[j]]; li != lj {
			return li > lj
		}
		return missing[i].TopicPartition.Compare(missing[j].TopicPartition) < 0
	})
	return missing, used
}
