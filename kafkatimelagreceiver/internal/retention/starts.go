package retention

import (
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/progress"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// movesKept is how many moves of a log start the tracker keeps per
// partition: a rate needs two made while a group stood still, and the
// last few tell it better than the last two.
const movesKept = 4

// forgetMovesAfter is how long after its last move a partition's moves are
// kept: a log start that moves less than daily gives no rate worth having,
// and the tracker stays bounded by the partitions whose log start moves.
const forgetMovesAfter = 24 * 3600 * 1e9

// expiresAfterIntervals: an advance whose log start has not moved for this
// many times the time between two of its moves has stopped (production
// stopped under size retention, a DeleteRecords job ended): predicting
// from it would announce deletions that do not come.
const expiresAfterIntervals = 3

// move is one change of a log start, seen between since and at (unix
// nanoseconds).
type move struct {
	offset, since, at int64
}

type moves struct {
	last [movesKept]move // oldest first
	n    int
}

// Tracker follows how the log starts move from scrape to scrape, partition
// by partition, and predicts the margins of a scrape's pairs. The scrape
// goroutine owns it.
type Tracker struct {
	parts map[kafka.TopicPartition]*moves
}

func NewTracker() *Tracker {
	return &Tracker{parts: map[kafka.TopicPartition]*moves{}}
}

// Observe folds in the log start changes the tables saw since the last
// scrape (timetable.Store.TakeStartChanges: in partition order, oldest
// first within one), at the scrape's instant at (unix nanoseconds), and
// forgets the partitions whose log start has not moved for a day.
func (t *Tracker) Observe(changes []timetable.StartChange, at int64) {
	for _, c := range changes {
		if c.Restart || c.Offset < c.From {
			// A new log, or a start that went back (a stale replica
			// answered): the moves kept say nothing of what comes.
			delete(t.parts, c.TopicPartition)
			continue
		}
		m, ok := t.parts[c.TopicPartition]
		if !ok {
			m = &moves{}
			t.parts[c.TopicPartition] = m
		}
		if m.n == movesKept {
			copy(m.last[:], m.last[1:])
			m.n--
		}
		m.last[m.n] = move{offset: c.Offset, since: c.Since, at: c.At}
		m.n++
	}
	for tp, m := range t.parts {
		if at-m.last[m.n-1].at > forgetMovesAfter {
			delete(t.parts, tp)
		}
	}
}

// Moving are the partitions whose log start moved in the last day (those
// Observed may predict from), sorted: their log starts are worth reading at
// every sample (timetable.Store.WatchStartsEverySample).
func (t *Tracker) Moving() []kafka.TopicPartition {
	out := make([]kafka.TopicPartition, 0, len(t.parts))
	for tp := range t.parts {
		out = append(out, tp)
	}
	kafka.SortPartitions(out)
	return out
}

// Advance is a log start's observed advance.
type Advance struct {
	// Rate is how fast it moved, in offsets per second.
	Rate float64
	// Offset is where its last move took it, at the soonest at Since (unix
	// nanoseconds: the read before the one that saw it there).
	Offset, Since int64
	// Interval is the time between two of its moves, in seconds, on
	// average: how finely it predicts.
	Interval float64
}

// Until is how long, in seconds from at, until the log start passes offset
// at this advance: it moves in steps (whole segments, or whatever
// DeleteRecords asks), so a prediction from its average rate comes at most
// one step before the step that takes the record.
func (a Advance) Until(offset, at int64) float64 {
	return float64(a.Since-at)/1e9 + float64(offset+1-a.Offset)/a.Rate
}

// Observed is the advance of the partition's log start measured from its
// moves made since stillSince (unix nanoseconds, when a group was first
// seen standing still at its committed offset): moves a consumer's own
// progress caused (Kafka Streams deletes what its group has committed)
// stop when the group does, so only moves made while it stood still say
// that the records it sits on are going too. None with fewer than two such
// moves, or once the log start has stopped moving.
func (t *Tracker) Observed(tp kafka.TopicPartition, stillSince, at int64) (Advance, bool) {
	m, ok := t.parts[tp]
	if !ok {
		return Advance{}, false
	}
	first := 0
	for first < m.n && m.last[first].since < stillSince {
		first++
	}
	if m.n-first < 2 {
		return Advance{}, false
	}
	oldest, newest := m.last[first], m.last[m.n-1]
	span := newest.at - oldest.at
	if span <= 0 || newest.offset <= oldest.offset {
		return Advance{}, false
	}
	interval := float64(span) / float64(m.n-first-1)
	if float64(at-newest.at) > expiresAfterIntervals*interval {
		return Advance{}, false
	}
	since := newest.since
	if since == 0 {
		since = newest.at
	}
	return Advance{
		Rate:     float64(newest.offset-oldest.offset) / (float64(span) / 1e9),
		Offset:   newest.offset,
		Since:    since,
		Interval: interval / 1e9,
	}, true
}

// Margins appends to out the margin of each of one group's pairs, in the
// order of lags (sorted by topic, then partition): from limits, and from
// the log starts' advance while the group stood still on each partition,
// which parts tells (progress.Tracker.ObserveGroup, in the order of lags;
// nil: not known, and no advance is used). at is the scrape's instant.
func (t *Tracker) Margins(out []Margin, lags []lag.PartitionLag, parts []progress.Partition, limits Limits, at int64) []Margin {
	var in Pair
	for i := range lags {
		pl := &lags[i]
		if i == 0 || pl.Topic != lags[i-1].Topic {
			in.Retention, in.HasRetention = limits.Topics[pl.Topic]
		}
		in.At = at
		in.BytesPerOffset = 0
		if _, bySize := in.Retention.SizeLimit(); bySize && in.HasRetention {
			in.BytesPerOffset = limits.BytesPerOffset[pl.TopicPartition]
		}
		in.HasObserved = false
		if parts != nil && parts[i].HasStuck && parts[i].Stuck > 0 {
			stillSince := at - int64(parts[i].Stuck*1e9)
			in.Observed, in.HasObserved = t.Observed(pl.TopicPartition, stillSince, at)
		}
		out = append(out, PredictPair(pl, in))
	}
	return out
}
