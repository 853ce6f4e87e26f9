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
	// Unread: the group's state on the partition could not be read
	// (Snapshot.SharesUnread): the pair has no value at all.
	Unread bool
	// BeyondEnd: the start offset read is above the end offset read (a
	// topic recreated under the group, a truncated log): the pair is
	// reported caught up when the broker's lag agrees, else it has no lag
	// and no time lag.
	BeyondEnd bool
}

// rankedShare is a share group's start offset on the partition of rank, and
// the broker's lag there (-1: none).
type rankedShare struct {
	rank   int32
	start  int64
	lag    int64
	tp     kafka.TopicPartition
	unread bool
}

// AddShareGroups indexes the share groups' start offsets, and the
// partitions whose state was not read (unread), so that the
// records at them are judged (OutOfTable) and dated (Estimate) with the
// consumer groups': a scrape adds them before either runs. A partition
// without an end offset in the snapshot is not indexed: its share groups
// have no time lag there.
func (idx *Index) AddShareGroups(shares map[string][]kafka.ShareOffset, unread map[string][]kafka.TopicPartition) {
	if idx.shares == nil {
		idx.shares = make(map[string][]rankedShare, len(shares))
	}
	groups := make(map[string]struct{}, len(shares)+len(unread))
	for group := range shares {
		groups[group] = struct{}{}
	}
	for group := range unread {
		groups[group] = struct{}{}
	}
	for group := range groups {
		offsets := shares[group]
		ranked := make([]rankedShare, 0, len(offsets)+len(unread[group]))
		for _, o := range offsets {
			rs := rankedShare{rank: -1, start: o.StartOffset, lag: o.Lag, tp: o.TopicPartition}
			if i, ok := idx.rank(o.TopicPartition); ok {
				rs.rank = i
			}
			ranked = append(ranked, rs)
		}
		for _, tp := range unread[group] {
			ranked = append(ranked, rankedShare{rank: -1, start: -1, lag: -1, tp: tp, unread: true})
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
		sl := SharePartitionLag{Group: group, TopicPartition: rs.tp, StartOffset: rs.start, Unread: rs.unread}
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
		if rs.start > p.End {
			// The group's state and the end offset were read apart, and
			// disagree: caught up only if the broker's own lag says so.
			sl.BeyondEnd = true
			if sl.Lag > 0 {
				sl.Lag, sl.HasLag, sl.LagFromBroker = 0, false, false
			} else {
				sl.HasTimeLag, sl.Method = true, MethodCaughtUp
			}
			out = append(out, sl)
			continue
		}
		if from := ConsumeFrom(rs.start, p.Start, p.HasStart); from >= p.End {
			if sl.Lag > 0 {
				// The broker counts records left that the end offset read
				// after it does not: neither value is sent.
				sl.Lag, sl.HasLag, sl.LagFromBroker = 0, false, false
			} else {
				sl.HasTimeLag, sl.Method = true, MethodCaughtUp
			}
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
			agg.add(sl.HasLag, sl.Lag, sl.HasTimeLag, sl.TimeLag, sl.Unread)
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
