package accuracy

import (
	"slices"
	"strconv"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// The receiver's defaults that shape its estimates (config.go and
// receiver.go of the receiver, which this package cannot import without
// pulling in the collector): the table's bound, and how many sampling
// intervals make a segment an unwatched gap.
const (
	ReceiverMaxSamples = 512
	ReceiverGapSamples = 3
)

var simPartition = kafka.TopicPartition{Topic: "sim", Partition: 0}

// receiverMethod runs the receiver's own estimator: its tables
// (timetable.Store), the record-read rules (lag.OutOfTable, answered from
// the timeline as a RecordTimestamps read would be) and the dating of each
// committed offset (lag.AppendTimes), in the order a scrape runs them.
type receiverMethod struct {
	tables      *timetable.Store
	records     *lag.RecordTimes
	recordReads bool
	// refineOnce reads, of the records the rules list to refine a coarse
	// bracket, only the first of the partition (the furthest behind): the
	// narrower rule, to measure what refining every group near that one
	// buys.
	refineOnce bool
	// trustClocks dates a record by its producer's clock as it stands:
	// the reads do not tell whose clock stamped it, so none is measured.
	trustClocks bool
	cost        Cost
}

// NewReceiver is the receiver as shipped (recordReads) or with
// max_record_reads_per_scrape 0, at the sampling interval.
func NewReceiver(sampling int64, recordReads bool) Method {
	return &receiverMethod{
		tables:      timetable.NewStore(ReceiverMaxSamples, ReceiverGapSamples*time.Duration(sampling), nil),
		records:     lag.NewRecordTimes(),
		recordReads: recordReads,
	}
}

// RefineOnce is the receiver reading, to refine coarse brackets, one
// record per partition and scrape (its furthest behind) rather than those
// of every group near that one.
var RefineOnce = MethodSpec{Key: "receiver-refine-once", Name: "this receiver, one refining read per partition (before)", New: func(s int64) Method {
	m := NewReceiver(s, true).(*receiverMethod)
	m.refineOnce = true
	return m
}}

// TrustClocks is the receiver dating a record read by its producer's
// timestamp as it stands, clamped to its bracket, rather than moved by
// that producer's clock offset as its reads measured it.
var TrustClocks = MethodSpec{Key: "receiver-trust-clocks", Name: "this receiver, producers' clocks not measured (before)", New: func(s int64) Method {
	m := NewReceiver(s, true).(*receiverMethod)
	m.trustClocks = true
	return m
}}

func (m *receiverMethod) Sample(r Read) {
	m.record(r)
}

func (m *receiverMethod) record(r Read) {
	m.cost.OffsetReads++
	m.tables.Record(kafka.OffsetRead{
		Offsets:  map[kafka.TopicPartition]int64{simPartition: r.End},
		Sent:     time.Unix(0, r.Sent),
		Received: time.Unix(0, r.Received),
	})
}

func (m *receiverMethod) Scrape(s Scrape) Estimate {
	m.tables.Track(map[kafka.TopicPartition]struct{}{simPartition: {}}, time.Unix(0, s.Sent), 0)
	m.record(s.Read)
	m.records.Forget(m.tables.TakeResets())
	committed := make(map[string]kafka.Commits, len(s.Committed))
	for i, c := range s.Committed {
		committed[groupName(i)] = kafka.Commits{{TopicPartition: simPartition, Offset: c}}
	}
	snap := &lag.Snapshot{
		At:        s.Received,
		Committed: committed,
		End:       map[kafka.TopicPartition]int64{simPartition: s.End},
		Start:     map[kafka.TopicPartition]int64{},
	}
	idx := lag.NewIndex(snap)
	idx.ResolveTables(m.tables)
	missing, used := lag.OutOfTable(idx, snap.At, m.tables, m.records)
	var offsets []int64 // of the one partition
	for _, w := range missing {
		offsets = append(offsets, w.Offsets...)
	}
	if m.refineOnce {
		offsets = m.firstRefining(idx.Parts[0], offsets, snap.At)
	}
	if m.recordReads && len(offsets) > 0 {
		var found []kafka.RecordRead
		var refining []int64
		for _, offset := range offsets {
			ts, bytes, ok := readRecord(s.Log, offset, s.End)
			if m.refines(idx.Parts[0], offset, snap.At) {
				refining = append(refining, offset)
			} else {
				m.cost.RecordReads++
				m.cost.FetchBytes += bytes
			}
			if ok {
				found = append(found, kafka.RecordRead{Wanted: offset, RecordTimestamp: m.recordAt(s.Log, offset, ts)})
			}
		}
		// The records on either side of samples (Near), where the reads
		// return them.
		var near []int64
		for _, w := range missing {
			near = append(near, w.Near...)
		}
		reads := s.Log.Fetched(offsets, s.End, FetchMaxBytes)
		for _, o := range near {
			if !slices.ContainsFunc(reads, func(r FetchedRange) bool { return r.From <= o && o < r.UpTo }) {
				continue
			}
			if ts, _, ok := readRecord(s.Log, o, s.End); ok {
				found = append(found, kafka.RecordRead{Wanted: o, RecordTimestamp: m.recordAt(s.Log, o, ts)})
			}
		}
		slices.Sort(refining)
		rounds, bytes := s.Log.FetchRounds(refining, s.End, FetchMaxBytes)
		m.cost.SharedReads += rounds
		m.cost.SharedBytes += bytes
		m.records.PutAll(kafka.RecordReads{simPartition: found}, lag.Existed{End: snap.End, EndAt: snap.At, Received: snap.At}, lag.Proof{Index: idx, Tables: m.tables, At: snap.At})
	}
	m.records.Retain(used)
	estimates := lag.Estimate(idx, lag.AppendTimes(m.tables, m.records, snap.At))
	e := Estimate{At: snap.At, Cost: m.cost}
	m.cost = Cost{}
	var lags []lag.PartitionLag
	for i := range s.Committed {
		var g GroupEstimate
		lags = estimates.GroupLags(lags[:0], groupName(i), snap.At)
		for _, pl := range lags {
			g = GroupEstimate{TimeLag: pl.TimeLag, OK: pl.HasTimeLag}
		}
		e.Groups = append(e.Groups, g)
	}
	return e
}

// recordAt is what a read finds of the record at offset, stamped ts: the
// producer whose clock stamped it, unless the method trusts the clocks.
func (m *receiverMethod) recordAt(log *Timeline, offset, ts int64) kafka.RecordTimestamp {
	rec := kafka.RecordTimestamp{Offset: offset, Timestamp: ts, Found: kafka.RecordTimed}
	if !m.trustClocks {
		rec.Producer, _ = log.Producer(offset)
		rec.ByProducer = true
	}
	return rec
}

// groupName names the simulation's i-th group.
func groupName(i int) string { return "group-" + strconv.Itoa(i) }

// firstRefining drops, of the offsets missing (ascending), those listed to
// refine an estimate but the first.
func (m *receiverMethod) firstRefining(p lag.Partition, missing []int64, at int64) []int64 {
	kept, refined := missing[:0:0], false
	for _, offset := range missing {
		if m.refines(p, offset, at) {
			if refined {
				continue
			}
			refined = true
		}
		kept = append(kept, offset)
	}
	return kept
}

// refines tells whether a record read of offset only refines what the
// table dates (the rule lag.OutOfTable applies): the cost model counts
// such reads as the partition's, in the rounds of Fetches the receiver
// makes for them (each read answering every offset its batches hold),
// rather than one per group.
func (m *receiverMethod) refines(p lag.Partition, offset, at int64) bool {
	b, ok := m.tables.Bracket(p.Table, offset, timetable.Sample{Offset: p.End, At: at})
	return ok && !b.Gap && !m.tables.Idle(p.Table, p.End, lag.IdleBeforeRecordRead)
}
