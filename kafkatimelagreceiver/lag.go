package kafkatimelagreceiver

import "slices"

// snapshot is what one scrape read from Kafka: committed offsets first, then
// end offsets, all stamped with the instant the end offsets were read.
type snapshot struct {
	at        int64                               // unix nanoseconds
	committed map[string]map[topicPartition]int64 // group -> partition -> committed offset
	end       map[topicPartition]int64            // high watermarks
	start     map[topicPartition]int64            // log start offsets, where read
}

// estimateMethod says how a time lag was obtained.
type estimateMethod int

const (
	methodNone     estimateMethod = iota // no estimate could be made
	methodCaughtUp                       // nothing left to consume: 0
	methodTable                          // interpolated in the partition's table
	methodRecord                         // the record's own timestamp
)

func (m estimateMethod) String() string {
	switch m {
	case methodCaughtUp:
		return "caught_up"
	case methodTable:
		return "interpolation"
	case methodRecord:
		return "record_timestamp"
	default:
		return "none"
	}
}

// appendTimeFunc estimates when the record at offset c of tp was appended.
type appendTimeFunc func(tp topicPartition, c int64) (appendedAt int64, method estimateMethod, ok bool)

// partitionLag is one group's position on one partition.
type partitionLag struct {
	group string
	topicPartition
	committed  int64
	hasEnd     bool // false when the end offset could not be read
	end        int64
	lag        int64
	timeLag    float64 // seconds
	hasTimeLag bool
	lost       int64 // records deleted by retention before the group read them
	method     estimateMethod
}

// consumeFrom is the offset of the oldest record the group can still
// consume: its committed offset, or the log start when retention has already
// deleted the records at the committed offset.
func consumeFrom(committed int64, tp topicPartition, snap *snapshot) int64 {
	if start, ok := snap.start[tp]; ok && start > committed {
		return start
	}
	return committed
}

// sortedGroups returns the groups of the snapshot, sorted.
func sortedGroups(snap *snapshot) []string {
	groups := make([]string, 0, len(snap.committed))
	for group := range snap.committed {
		groups = append(groups, group)
	}
	slices.Sort(groups)
	return groups
}

// groupLags appends one group's per-partition lags to out, sorted by
// (topic, partition). It does no I/O: every estimate of an append time
// comes from appendTime. A scrape goes group by group so that only one
// group's lags are held at a time, not every pair of the cluster.
func groupLags(out []partitionLag, group string, snap *snapshot, appendTime appendTimeFunc) []partitionLag {
	offsets := snap.committed[group]
	tps := make([]topicPartition, 0, len(offsets))
	for tp := range offsets {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, compareTopicPartition)
	for _, tp := range tps {
		committed := offsets[tp]
		pl := partitionLag{group: group, topicPartition: tp, committed: committed}
		end, ok := snap.end[tp]
		if ok {
			pl.hasEnd = true
			pl.end = end
			pl.lag = max(0, end-committed)
			if start, ok := snap.start[tp]; ok && start > committed {
				pl.lost = start - committed
			}
			from := consumeFrom(committed, tp, snap)
			if from >= end {
				pl.hasTimeLag, pl.method = true, methodCaughtUp
			} else if appendedAt, method, ok := appendTime(tp, from); ok {
				pl.hasTimeLag, pl.method = true, method
				// Never negative: a producer clock ahead of ours, or a
				// point taken a moment after the read, is not a lead.
				pl.timeLag = float64(max(0, snap.at-appendedAt)) / 1e9
			}
		}
		out = append(out, pl)
	}
	return out
}

// topicLag aggregates one group's lags over the partitions of one topic.
type topicLag struct {
	group, topic string
	lagSum       int64
	lagMax       int64
	hasLag       bool
	timeLagMax   float64
	hasTimeLag   bool
}

// aggregateLags appends to out the sums and maxima per (group, topic) of
// lags, which must be sorted by group, then topic; so is what it appends.
func aggregateLags(out []topicLag, lags []partitionLag) []topicLag {
	from := len(out)
	for _, pl := range lags {
		if n := len(out); n == from || out[n-1].group != pl.group || out[n-1].topic != pl.topic {
			out = append(out, topicLag{group: pl.group, topic: pl.topic})
		}
		agg := &out[len(out)-1]
		if pl.hasEnd {
			agg.hasLag = true
			agg.lagSum += pl.lag
			agg.lagMax = max(agg.lagMax, pl.lag)
		}
		if pl.hasTimeLag {
			agg.hasTimeLag = true
			agg.timeLagMax = max(agg.timeLagMax, pl.timeLag)
		}
	}
	return out
}
