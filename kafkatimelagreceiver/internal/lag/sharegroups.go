package lag

import (
	"slices"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// SharePartitionLag is one share group's position on one partition. A share
// group's members acknowledge records one by one: its start offset (SPSO) is
// the oldest record it has not finished, and records past it may be
// finished already.
type SharePartitionLag struct {
	Group string
	kafka.TopicPartition
	StartOffset int64
	End         int64
	// Lag is the broker's count of unfinished records from StartOffset to
	// the end (KIP-1226) when it gives one (LagFromBroker), else
	// max(0, End - StartOffset), which also counts the records already
	// finished past StartOffset.
	Lag     int64
	TimeLag float64 // seconds: the age of the record at StartOffset
	Method  Method
	// HasEnd is false when the partition's end offset was not read.
	HasEnd        bool
	HasLag        bool
	LagFromBroker bool
	HasTimeLag    bool
}

// rankedShare is a share group's start offset on the partition of rank, and
// the broker's lag there (-1: none).
type rankedShare struct {
	rank  int32
	start int64
	lag   int64
	tp    kafka.TopicPartition
}

// AddShareGroups indexes the share groups' start offsets, so that the
// records at them are judged (OutOfTable) and dated (Estimate) with the
// consumer groups': a scrape adds them before either runs. A partition
// without an end offset in the snapshot is not indexed: its share groups
// have no time lag there.
func (idx *Index) AddShareGroups(shares map[string][]kafka.ShareOffset) {
	if idx.shares == nil {
		idx.shares = make(map[string][]rankedShare, len(shares))
	}
	for group, offsets := range shares {
		ranked := make([]rankedShare, 0, len(offsets))
		for _, o := range offsets {
			rs := rankedShare{rank: -1, start: o.StartOffset, lag: o.Lag, tp: o.TopicPartition}
			if i, ok := idx.rank(o.TopicPartition); ok {
				rs.rank = i
			}
			ranked = append(ranked, rs)
		}
		slices.SortFunc(ranked, func(a, b rankedShare) int { return a.tp.Compare(b.tp) })
		idx.shares[group] = ranked
	}
	idx.lagging = nil // gathered again with the share groups'
}

// ShareGroupLags appends one share group's per-partition lags to out,
// sorted by (topic, partition), with the time lags Estimate dated: the age
// of the record at the start offset (or the oldest left, when retention
// deleted that one), measured at at as a consumer group's is; 0 when the
// start offset is the end offset.
func (e *Estimates) ShareGroupLags(out []SharePartitionLag, group string, at int64) []SharePartitionLag {
	idx := e.idx
	for _, rs := range idx.shares[group] {
		sl := SharePartitionLag{Group: group, TopicPartition: rs.tp, StartOffset: rs.start}
		if rs.lag >= 0 {
			sl.Lag, sl.HasLag, sl.LagFromBroker = rs.lag, true, true
		}
		if rs.rank < 0 || rs.start < 0 || !idx.Parts[rs.rank].HasEnd {
			out = append(out, sl)
			continue
		}
		p := &idx.Parts[rs.rank]
		sl.HasEnd, sl.End = true, p.End
		if !sl.HasLag {
			sl.Lag, sl.HasLag = max(0, p.End-rs.start), true
		}
		if from := ConsumeFrom(rs.start, p.Start, p.HasStart); from >= p.End {
			sl.HasTimeLag, sl.Method = true, MethodCaughtUp
		} else if d := e.date(rs.rank, from); d.ok {
			sl.HasTimeLag, sl.Method = true, d.method
			if d.method != MethodCaughtUp {
				// Never negative: a producer clock ahead of ours is not a
				// lead.
				sl.TimeLag = float64(max(0, at-d.at)) / 1e9
			}
		} else {
			sl.Method = d.method // none, or withheld
		}
		out = append(out, sl)
	}
	return out
}

// ShareGroupLags is Estimates.ShareGroupLags before any estimate.
func (idx *Index) ShareGroupLags(out []SharePartitionLag, group string, at int64) []SharePartitionLag {
	e := Estimates{idx: idx}
	return e.ShareGroupLags(out, group, at)
}

// rank is the rank of partition tp in the index.
func (idx *Index) rank(tp kafka.TopicPartition) (int32, bool) {
	i, found := slices.BinarySearchFunc(idx.Parts, tp, func(p Partition, tp kafka.TopicPartition) int {
		return p.TopicPartition.Compare(tp)
	})
	return int32(i), found
}

// AggregateShares appends to out the sums and maxima per (group, topic) of
// share-group lags, which must be sorted by group, then topic; so is what
// it appends. An aggregate is over every partition the group has state for
// on the topic, or it is not given: a sum or maximum over the partitions
// that happened to be read would understate what it names.
func AggregateShares(out []TopicLag, lags []SharePartitionLag) []TopicLag {
	for start := 0; start < len(lags); {
		end := start
		agg := TopicLag{Group: lags[start].Group, Topic: lags[start].Topic}
		for ; end < len(lags) && lags[end].Group == agg.Group && lags[end].Topic == agg.Topic; end++ {
			sl := &lags[end]
			agg.add(sl.HasLag, sl.Lag, sl.HasTimeLag, sl.TimeLag)
		}
		agg.settle()
		out = append(out, agg)
		start = end
	}
	return out
}

// AddShares counts the share-group lags whose end offset was read, by how
// their time lag was obtained.
func (c *MethodCounts) AddShares(lags []SharePartitionLag) {
	for _, sl := range lags {
		if sl.HasEnd {
			c[sl.Method]++
		}
	}
}
