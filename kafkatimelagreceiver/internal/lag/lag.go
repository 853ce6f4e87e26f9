// Package lag turns one scrape's snapshot of offsets into each group's
// per-partition lag and time lag, and their per-(group, topic) aggregates.
// It does no I/O: append times come from an AppendTimeFunc.
//
// The read builds a scrape's Index once (NewIndex, ResolveTables,
// OutOfTable, and SetStarts where it read log starts) and hands it over;
// from then on the Index is only read. What the computation finds, the
// append times and production rates, goes into an Estimates value beside
// it (Estimate) rather than into it, and the sampler's tables are seen
// through Tables, a read-only view: the types keep what the read returned
// as it was read.
package lag

import (
	"math"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// Snapshot is what one scrape read from Kafka: committed offsets first, then
// end offsets, all stamped with the instant the end offsets were read.
type Snapshot struct {
	At        int64                          // unix nanoseconds
	Committed map[string]kafka.Commits       // by group; nil once indexed (read.Reader.Read)
	End       map[kafka.TopicPartition]int64 // high watermarks
	Start     map[kafka.TopicPartition]int64 // log start offsets, where read
	Stable    map[kafka.TopicPartition]int64 // last stable offsets, where read
	// Shares are the share groups' start offsets, by share group: indexed
	// with the commits (AddShareGroups).
	Shares map[string][]kafka.ShareOffset
	// CommitsUnread and SharesUnread are, by group, the partitions whose
	// committed offset (share-partition state) the read could not read
	// though it read the group's others (kafka.PartitionError): a value
	// folded over the group's partitions of their topics is withheld.
	CommitsUnread, SharesUnread map[string][]kafka.TopicPartition
}

// Method says how a time lag was obtained.
type Method uint8

const (
	MethodNone     Method = iota // no estimate could be made
	MethodCaughtUp               // nothing left to consume: 0
	MethodTable                  // interpolated in the partition's table
	MethodRecord                 // the record's own timestamp
	// MethodWithheld: an estimate outside what the tables and the scrape
	// prove of the record's append time (AppendTimes): a time lag below 0
	// or older than the oldest bound, withheld rather than sent.
	MethodWithheld
	// MethodUnproven: only the record's timestamp could date it, and the
	// partition's timestamps are not shown to be append times (package clocks);
	// or its topic compacts and no read found which record is next.
	// Withheld rather than sent.
	MethodUnproven
)

func (m Method) String() string {
	switch m {
	case MethodCaughtUp:
		return "caught_up"
	case MethodTable:
		return "interpolation"
	case MethodRecord:
		return "record_timestamp"
	case MethodWithheld:
		return "withheld"
	case MethodUnproven:
		return "unproven"
	default:
		return "none"
	}
}

// AppendTimeFunc estimates when the record at offset c of the index's
// partition of rank was appended. MethodCaughtUp says there is no such
// record to wait for: only transaction markers and aborted records are
// left.
type AppendTimeFunc func(rank int32, c int64) (appendedAt int64, method Method, ok bool)

// PartitionLag is one group's position on one partition. A scrape walks a
// group's lags once per consumer of them (trackers, aggregates, the
// writer): the flags and Method are packed at the end to keep it small.
type PartitionLag struct {
	Group string
	kafka.TopicPartition
	Committed int64
	End       int64
	Lag       int64
	TimeLag   float64 // seconds
	Lost      int64   // records deleted by retention before the group read them
	// StableLag is the lag a read_committed consumer has: up to the last
	// stable offset, and 0 when caught up.
	StableLag int64
	// ProduceRate is the partition's (Estimates.ResolveProduceRates).
	ProduceRate float64
	Method      Method
	HasEnd      bool // false when the end offset could not be read
	HasTimeLag  bool
	// HasStableLag is false when the last stable offset was not read.
	HasStableLag bool
	// CommitUnread: the group's committed offset on the partition could
	// not be read (Snapshot.CommitsUnread): the pair has no value at all.
	CommitUnread bool
	// CaughtUp: the group has consumed everything. Lag is 0, or every
	// record from the committed offset to the end is a transaction marker
	// or a record of an aborted transaction (Lag still counts their
	// offsets: it is the end offset minus the committed offset).
	CaughtUp       bool
	HasProduceRate bool
}

// ConsumeFrom is the offset of the oldest record the group can still
// consume: its committed offset, or the log start when retention has already
// deleted the records at the committed offset.
func ConsumeFrom(committed, start int64, hasStart bool) int64 {
	if hasStart && start > committed {
		return start
	}
	return committed
}

// GroupLags appends one group's per-partition lags to out, sorted by
// (topic, partition), with the time lags Estimate dated and the production
// rates ResolveProduceRates found. A scrape goes group by group so that
// only one group's lags are held at a time, not every pair of the cluster.
func (e *Estimates) GroupLags(out []PartitionLag, group string, at int64) []PartitionLag {
	idx := e.idx
	for _, rc := range idx.commits[group] {
		p := &idx.Parts[rc.rank]
		committed := rc.committed
		pl := PartitionLag{Group: group, TopicPartition: p.TopicPartition, Committed: committed}
		if committed == commitUnread {
			pl.Committed, pl.CommitUnread = 0, true
			out = append(out, pl)
			continue
		}
		if p.HasEnd {
			pl.HasEnd = true
			pl.End = p.End
			if e.rates != nil {
				r := e.rates[rc.rank]
				pl.ProduceRate, pl.HasProduceRate = r.PerSecond, r.OK
			}
			pl.Lag = max(0, p.End-committed)
			from := ConsumeFrom(committed, p.Start, p.HasStart)
			pl.Lost = from - committed
			if from >= p.End {
				// Records the group never read and retention deleted are
				// lost, not caught up with: Lost says so, and the rules
				// keep judging the lag.
				pl.HasTimeLag, pl.Method, pl.CaughtUp = true, MethodCaughtUp, pl.Lag == 0
			} else if d := e.date(rc.rank, from); d.ok {
				pl.HasTimeLag, pl.Method, pl.CaughtUp = true, d.method, d.method == MethodCaughtUp
				// Never negative: a producer clock ahead of ours, or a
				// point taken a moment after the read, is not a lead.
				pl.TimeLag = float64(max(0, at-d.at)) / 1e9
			} else {
				pl.Method = d.method // none, or withheld
			}
		}
		if p.HasStable && pl.HasEnd {
			pl.HasStableLag = true
			if !pl.CaughtUp {
				pl.StableLag = max(0, p.Stable-committed)
			}
		}
		out = append(out, pl)
	}
	return out
}

// TopicLag aggregates one group's lags over the partitions of one topic.
// An aggregate is over every partition the group committed on in the topic,
// or it is not known: a sum or maximum over the partitions that happened to
// be read would understate the lag exactly when a broker is in trouble.
type TopicLag struct {
	Group, Topic string
	LagSum       int64
	LagMax       int64
	HasLag       bool
	TimeLagMax   float64
	HasTimeLag   bool
	// Unread counts the partitions whose end offset was not read, of
	// which CommitsUnread those whose committed offset (share-partition
	// state) was not read either; Undated those read whose time lag could
	// not be estimated.
	Unread, CommitsUnread, Undated int
}

// Aggregate appends to out the sums and maxima per (group, topic) of lags,
// which must be sorted by group, then topic; so is what it appends.
func Aggregate(out []TopicLag, lags []PartitionLag) []TopicLag {
	from := len(out)
	for _, pl := range lags {
		if n := len(out); n == from || out[n-1].Group != pl.Group || out[n-1].Topic != pl.Topic {
			out = append(out, TopicLag{Group: pl.Group, Topic: pl.Topic})
		}
		out[len(out)-1].add(pl.HasEnd, pl.Lag, pl.HasTimeLag, pl.TimeLag, pl.CommitUnread)
	}
	for i := from; i < len(out); i++ {
		out[i].settle()
	}
	return out
}

// add folds one partition in: its lag, when known, and its time lag;
// commitUnread when the group's offset on it was not read.
func (agg *TopicLag) add(hasLag bool, lag int64, hasTimeLag bool, timeLag float64, commitUnread bool) {
	switch {
	case commitUnread:
		agg.Unread++
		agg.CommitsUnread++
	case !hasLag:
		agg.Unread++
	case !hasTimeLag:
		agg.Undated++
	}
	agg.LagSum = AddLags(agg.LagSum, lag)
	agg.LagMax = max(agg.LagMax, lag)
	agg.TimeLagMax = max(agg.TimeLagMax, timeLag)
}

// settle says what the partitions folded in make known, and zeroes the
// rest: a sum or maximum over some of them is no value at all.
func (agg *TopicLag) settle() {
	agg.HasLag = agg.Unread == 0
	agg.HasTimeLag = agg.HasLag && agg.Undated == 0
	if !agg.HasLag {
		agg.LagSum, agg.LagMax = 0, 0
	}
	if !agg.HasTimeLag {
		agg.TimeLagMax = 0
	}
}

// Complete says whether every one of lags, one group's on one topic or
// more, had its end offset read: only then is a value folded over them (a
// sum, a maximum, a drain time) over everything it names.
func Complete(lags []PartitionLag) bool {
	for i := range lags {
		if !lags[i].HasEnd {
			return false
		}
	}
	return true
}

// AddLags adds two lags, saturating at the largest int64 rather than
// wrapping to a negative sum: lags are never negative, and offsets near the
// int64 limit (a broken or hostile broker's) must not make a sum of many
// partitions' lags read as a small or negative one.
func AddLags(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// MethodCounts counts a scrape's estimates by method.
type MethodCounts [MethodUnproven + 1]int64

// Add counts the lags whose end offset was read: the others had nothing to
// estimate.
func (c *MethodCounts) Add(lags []PartitionLag) {
	for _, pl := range lags {
		if pl.HasEnd {
			c[pl.Method]++
		}
	}
}
