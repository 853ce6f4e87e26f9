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

// ShareGroupLags appends one share group's per-partition lags to out, in
// the order of offsets ((topic, partition)). The time lag is measured at at
// as a consumer group's is, from where the group would consume: the record
// at the start offset, or the log start when retention deleted it; 0 when
// that is the end offset.
func (idx *Index) ShareGroupLags(out []SharePartitionLag, group string, offsets []kafka.ShareOffset, appendTime AppendTimeFunc, at int64) []SharePartitionLag {
	for _, o := range offsets {
		sl := SharePartitionLag{Group: group, TopicPartition: o.TopicPartition, StartOffset: o.StartOffset}
		if o.Lag >= 0 {
			sl.Lag, sl.HasLag, sl.LagFromBroker = o.Lag, true, true
		}
		p := idx.Partition(o.TopicPartition)
		if p == nil || !p.HasEnd || o.StartOffset < 0 {
			out = append(out, sl)
			continue
		}
		sl.HasEnd, sl.End = true, p.End
		if !sl.HasLag {
			sl.Lag, sl.HasLag = max(0, p.End-o.StartOffset), true
		}
		from := ConsumeFrom(o.StartOffset, p.Start, p.HasStart)
		if from >= p.End {
			sl.HasTimeLag, sl.Method = true, MethodCaughtUp
		} else if appended, method, ok := appendTime(p, from); ok {
			sl.HasTimeLag, sl.Method = true, method
			if method != MethodCaughtUp {
				// Never negative: a producer clock ahead of ours is not a
				// lead.
				sl.TimeLag = float64(max(0, at-appended)) / 1e9
			}
		}
		out = append(out, sl)
	}
	return out
}

// Partition is the indexed partition tp, or nil.
func (idx *Index) Partition(tp kafka.TopicPartition) *Partition {
	i, found := slices.BinarySearchFunc(idx.Parts, tp, func(p Partition, tp kafka.TopicPartition) int {
		return p.TopicPartition.Compare(tp)
	})
	if !found {
		return nil
	}
	return &idx.Parts[i]
}

// AggregateShares appends to out the sums and maxima per (group, topic) of
// share-group lags, which must be sorted by group, then topic; so is what
// it appends. An aggregate is over every partition the group has state for
// on the topic, or it is not given: a sum or maximum over the partitions
// that happened to be read would understate what it names.
func AggregateShares(out []TopicLag, lags []SharePartitionLag) []TopicLag {
	for start := 0; start < len(lags); {
		end := start
		agg := TopicLag{Group: lags[start].Group, Topic: lags[start].Topic, HasLag: true, HasTimeLag: true}
		for ; end < len(lags) && lags[end].Group == agg.Group && lags[end].Topic == agg.Topic; end++ {
			sl := &lags[end]
			agg.HasLag = agg.HasLag && sl.HasLag
			agg.HasTimeLag = agg.HasTimeLag && sl.HasTimeLag
			agg.LagSum = AddLags(agg.LagSum, sl.Lag)
			agg.LagMax = max(agg.LagMax, sl.Lag)
			agg.TimeLagMax = max(agg.TimeLagMax, sl.TimeLag)
		}
		if !agg.HasLag {
			agg.LagSum, agg.LagMax = 0, 0
		}
		if !agg.HasTimeLag {
			agg.TimeLagMax = 0
		}
		out = append(out, agg)
		start = end
	}
	return out
}
