package dating

import (
	"slices"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// dater is one Date: what it reads with, what is left of the scrape's
// budgets, what it reports, and the records in use.
type dater struct {
	src     Source
	records *recordcache.Cache
	snap    *lag.Snapshot
	opt     Options
	// reads is what is left of MaxReads, readBytes of MaxReadBytes.
	reads     int
	readBytes int64
	rep       Report
	errs      []error
	// used are the records the scrape's groups are on that no table dates
	// well, read or not: the record cache keeps those (Retain).
	used recordcache.Used
}

// plan is what dating does, chosen under the tables' lock: values that
// the search and the reads use without it.
type plan struct {
	// wanted are the partitions whose records to date, largest lags
	// first, within what is left of MaxReads.
	wanted []kafka.PartitionOffsets
	// searches are the records of wanted to search the time index for,
	// partition by partition, and markerChecks those only a read answers
	// (indexTargets); with Options.TimeIndex only.
	searches     []partitionSearch
	markerChecks []kafka.PartitionOffsets
	// still are the partitions of markerChecks read once outside the byte
	// budget (indexTargets).
	still map[kafka.TopicPartition]bool
}

// plan chooses what the scrape dates (choose) and, with the time index,
// the searches for it. tables is the View of the caller's lock.
func (d *dater) plan(idx *lag.Tabled, tables timetable.View) plan {
	p := plan{wanted: d.choose(idx, tables)}
	if d.opt.TimeIndex && len(p.wanted) > 0 {
		p.searches, p.markerChecks, p.still = indexTargets(idx, d.snap.At, tables, d.records, p.wanted)
	}
	return p
}

// choose lists the records no table dates well (lag.OutOfTable), within
// what is left of MaxReads, and adds them to the records in use.
func (d *dater) choose(idx *lag.Tabled, tables timetable.View) []kafka.PartitionOffsets {
	wanted, used := lag.OutOfTable(idx, d.snap.At, tables, d.records)
	if d.opt.Topics != nil {
		wanted = slices.DeleteFunc(wanted, func(w kafka.PartitionOffsets) bool { return !d.opt.Topics(w.Topic) })
	}
	if d.used == nil {
		d.used = used
	} else {
		d.used.Merge(used)
	}
	d.rep.Wanted += len(wanted)
	wanted = wanted[:min(len(wanted), d.reads)]
	d.reads -= len(wanted)
	d.rep.Read += len(wanted)
	return wanted
}
