package lag

import (
	"cmp"
	"slices"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/clocks"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

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
func OutOfTable(idx *Tabled, at int64, tables Tables, records *recordcache.Cache) (missing []kafka.PartitionOffsets, used recordcache.Used) {
	used = recordcache.Used{}
	var wanted []wantedPartition
	// Groups of a partition often share an offset: each record is judged
	// once. The offsets are gathered by partition to find the distinct
	// ones, rather than looked up pair by pair in a set.
	lagging := idx.laggingOffsets()
	for rank := range idx.Parts {
		p, table := &idx.Parts[rank], idx.table(int32(rank))
		offsets := lagging.of(rank)
		if len(offsets) == 0 {
			continue
		}
		var view recordcache.Partition
		records.Resolve(p.TopicPartition, &view)
		// A compacted topic's committed offset may hold no record: its
		// records are read (or found exactly in the index) like those of
		// an idle partition, whose table cannot tell either.
		idle := tables.Idle(table, p.End, IdleBeforeRecordRead) || view.Compacted()
		markers := records.MarkersPossible(p.TopicPartition)
		apart := records.ClocksApart(p.TopicPartition)
		indexIdle := tables.Idle(table, p.End, IdleBeforeMarkerCheck)
		young := tables.Young(table, IdleBeforeMarkerCheck)
		var inUse []int64 // ascending, as lagging.of gives them
		w := wantedPartition{rank: int32(rank)}
		firstRefined := int64(-1)
		// unshown is a record read before that only its stamp dates, on a
		// partition whose stamps are not shown yet but whose table bounds
		// records: it is wanted again while nothing else is, so that the
		// records either side of the samples (Near) are read and show
		// them. A partition idle since its table started has none.
		unshown := int64(-1)
		for i, from := range offsets {
			b, ok := tables.Bracket(table, from, timetable.Sample{Offset: p.End, At: at})
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
			check := apart || MarkerCheck(markers, indexIdle, young, b)
			rec, read := view.Get(from)
			if read && (rec.Found != kafka.RecordNone || rec.Offset >= p.End) && !(check && clocks.FromIndex(rec)) {
				// Read before, and nothing since can change the answer: a
				// read that found only an open transaction, or stopped
				// short of today's end, needs a new read.
				if !ok && unshown < 0 && rec.Found == kafka.RecordTimed && !view.StampsShown(rec, at) &&
					len(clockBoundaries(idx, int32(rank), []int64{from}, at, tables, false)) > 0 {
					unshown = from
				}
				continue
			}
			// A record the index dated, wanted again for a marker check
			// only, has a date: it waits behind the records that have none.
			rechecked := read && clocks.FromIndex(rec)
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
		if len(w.offsets) == 0 && unshown >= 0 {
			w.offsets, w.behind = []int64{unshown}, p.End-unshown
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
		missing[i] = kafka.PartitionOffsets{TopicPartition: p.TopicPartition, Offsets: w.offsets, Near: clockBoundaries(idx, w.rank, w.offsets, at, tables, records.ClocksOf(p.TopicPartition).Measured())}
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
