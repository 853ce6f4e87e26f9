package lag

import (
	"slices"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// Tables is what the computation reads of the sampler's interpolation
// tables, and all it may do with them; *timetable.Store is one.
type Tables interface {
	Refs(tps []kafka.TopicPartition) []timetable.Ref
	Bracket(ref timetable.Ref, c int64, upper timetable.Sample) (timetable.Bracket, bool)
	Idle(ref timetable.Ref, end int64, still time.Duration) bool
	Young(ref timetable.Ref, span time.Duration) bool
	ProduceRates(refs []timetable.Ref, window time.Duration) []timetable.Rate
}

// Estimates are what a scrape computes over its Index: when the record each
// lagging group consumes next was appended, and each partition's
// production rate. The Index is only read.
type Estimates struct {
	idx     *Index
	lagging *laggingOffsets
	dates   []appendDate // by lagging offset
	// rates are the partitions' production rates by rank, once
	// ResolveProduceRates ran.
	rates []timetable.Rate
}

// appendDate is what an AppendTimeFunc said of one offset.
type appendDate struct {
	at     int64
	method Method
	ok     bool
}

// Estimate dates, with appendTime, the record each lagging group of idx
// consumes next (the oldest it has not consumed): each partition's, offset
// by offset, each offset once. A scrape estimates once, after its record
// reads (OutOfTable).
func Estimate(idx *Index, appendTime AppendTimeFunc) *Estimates {
	l := idx.lagging
	if l == nil {
		l = idx.gatherLaggingOffsets()
	}
	e := &Estimates{idx: idx, lagging: l, dates: make([]appendDate, len(l.offsets))}
	for rank := range idx.Parts {
		if l.bounds[rank] == l.bounds[rank+1] {
			continue
		}
		for i := l.bounds[rank]; i < l.bounds[rank+1]; i++ {
			at, method, ok := appendTime(int32(rank), l.offsets[i])
			e.dates[i] = appendDate{at: at, method: method, ok: ok}
		}
	}
	return e
}

// date is what Estimate found of the record at offset on the partition of
// rank; not ok without an estimate.
func (e *Estimates) date(rank int32, offset int64) appendDate {
	if e.dates == nil {
		return appendDate{}
	}
	lo, hi := e.lagging.bounds[rank], e.lagging.bounds[rank+1]
	i, found := slices.BinarySearch(e.lagging.offsets[lo:hi], offset)
	if !found {
		return appendDate{}
	}
	return e.dates[lo+i]
}

// ResolveProduceRates finds the production rate over window of every
// partition of t, the estimates' index, whose end offset was read, from
// its table (Store.ProduceRates): the scrape's own read is the table's
// newest point, so the window ends at the scrape.
func (e *Estimates) ResolveProduceRates(t *Tabled, tables Tables, window time.Duration) {
	refs := make([]timetable.Ref, len(e.idx.Parts))
	for i := range e.idx.Parts {
		if e.idx.Parts[i].HasEnd {
			refs[i] = t.table(int32(i))
		}
	}
	e.rates = tables.ProduceRates(refs, window)
}

// PartitionGauge is what a scrape reports of one partition: what was read
// of it, and its production rate over the rate window.
type PartitionGauge struct {
	*Partition
	ProduceRate    float64
	HasProduceRate bool
}

// Gauges are the index's partitions in gauged (nil: all of them), in
// (topic, partition) order, with their production rates.
func (e *Estimates) Gauges(gauged map[kafka.TopicPartition]struct{}) []PartitionGauge {
	size := len(e.idx.Parts)
	if gauged != nil {
		size = min(size, len(gauged))
	}
	out := make([]PartitionGauge, 0, size)
	for rank := range e.idx.Parts {
		p := &e.idx.Parts[rank]
		if gauged != nil {
			if _, ok := gauged[p.TopicPartition]; !ok {
				continue
			}
		}
		g := PartitionGauge{Partition: p}
		if e.rates != nil {
			g.ProduceRate, g.HasProduceRate = e.rates[rank].PerSecond, e.rates[rank].OK
		}
		out = append(out, g)
	}
	return out
}
