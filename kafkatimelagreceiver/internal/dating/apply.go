package dating

import (
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// apply puts the findings not applied yet into the record cache, in the
// order they were found, measuring their producers' clocks by the brackets
// the tables prove where a batch measures. tables is the View of the
// caller's lock.
func (d *dater) apply(idx *lag.Tabled, tables timetable.View, found *findings) {
	for _, b := range found.batches[found.applied:] {
		existed := recordcache.Existed{End: d.snap.End, EndAt: d.snap.At, Received: b.received}
		proof := recordcache.Proof{}
		if b.measure {
			proof = lag.Proof(idx, tables, d.snap.At)
		}
		u := d.records.PutAll(b.reads, existed, proof)
		if b.counted {
			d.rep.Untimed.Future += u.Future
			d.rep.Untimed.Invalid += u.Invalid
		}
	}
	found.applied = len(found.batches)
}

// raiseStarts applies the log starts read of partitions whose records
// retention deleted: to the tables, the snapshot and the index, whose
// groups' offsets move up to them.
func (d *dater) raiseStarts(idx *lag.Tabled, tables timetable.View, starts kafka.OffsetRead) {
	tables.RecordStart(starts)
	for tp, start := range starts.Offsets {
		d.snap.Start[tp] = start
	}
	idx.SetStarts(starts.Offsets)
}

// estimate keeps the records in use and dates the record each lagging
// group consumes next (lag.Estimate), and the partitions' production rates
// with Options.RateWindow. tables is the View of the caller's lock.
func (d *dater) estimate(idx *lag.Tabled, tables timetable.View) *lag.Estimates {
	d.records.Retain(d.used)
	est := lag.Estimate(idx.Index, lag.AppendTimes(idx, tables, d.records, d.snap.At))
	if d.opt.RateWindow > 0 {
		est.ResolveProduceRates(idx, tables, d.opt.RateWindow)
	}
	return est
}
