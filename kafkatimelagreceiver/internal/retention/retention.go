// Package retention tells how long the oldest record a group has not
// consumed has before Kafka may delete it, for every way Kafka deletes a
// partition's records in offset order:
//
//   - time (retention.ms): the limit minus the record's age, its time lag;
//   - size (retention.bytes): the bytes still to be produced before the
//     partition holds retention.bytes after the record, at the partition's
//     production rate in bytes;
//   - the log start's own observed advance, whatever moves it (either of
//     the above, DeleteRecords, a broker's overrides): when it keeps moving
//     while the group stands still.
//
// Each is when deletion may come at the soonest: Kafka deletes whole
// segments, at its next retention check, so the record usually outlives it
// by up to a segment's worth of time. A margin is the smallest of them,
// with the one that gave it. The topics' configurations and partitions'
// sizes are read through a Cache (read side); the margins are computed from
// plain values (Limits, the lags, a Tracker's log start moves) with no I/O.
package retention

import (
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
)

// Basis is what a margin was predicted from.
type Basis uint8

const (
	// BasisTime: the topic's retention.ms and the record's age.
	BasisTime Basis = iota
	// BasisSize: the topic's retention.bytes and the bytes produced after
	// the record.
	BasisSize
	// BasisLogStart: the log start's observed advance.
	BasisLogStart
)

// String is the basis as the metrics' retention attribute spells it.
func (b Basis) String() string {
	switch b {
	case BasisSize:
		return "size"
	case BasisLogStart:
		return "log_start"
	}
	return "time"
}

// Limits are what a scrape knows of the retention of the partitions it
// read: plain values, never changed once made (a Cache makes new ones).
type Limits struct {
	// Topics holds the retention settings of the topics whose
	// configuration was read.
	Topics map[string]kafka.TopicRetention
	// BytesPerOffset holds, for the partitions of topics deleting by size,
	// how many bytes an offset of the log took when its size was last read:
	// the size over the offsets from its log start to its end.
	BytesPerOffset map[kafka.TopicPartition]float64
}

// Outcome says what is known of a margin.
type Outcome uint8

const (
	// None: no deletion is predicted: the group has nothing left to
	// consume, or nothing deletes its records.
	None Outcome = iota
	// Known: Margin holds the soonest deletion predicted.
	Known
	// Unknown: a limit applies whose prediction could not be made (the end
	// offset, time lag, size or production rate was not known): a margin
	// of the others could be far later than the truth, so none is given.
	Unknown
)

// Margin is how long, in seconds, until Kafka may delete the oldest record
// a group has not consumed, and what predicted it. Negative: the deletion
// is due (or overdue) by that much.
type Margin struct {
	Seconds float64
	Basis   Basis
	Outcome Outcome
}

// soonest keeps the sooner of m and a prediction of basis.
func (m *Margin) soonest(seconds float64, basis Basis) {
	if m.Outcome != Known || seconds < m.Seconds {
		m.Seconds, m.Basis, m.Outcome = seconds, basis, Known
	}
}

// Pair is what a pair's margin is predicted from besides its lag.
type Pair struct {
	// Retention is the topic's configuration; HasRetention is false when
	// it was not read.
	Retention    kafka.TopicRetention
	HasRetention bool
	// BytesPerOffset is the partition's (Limits.BytesPerOffset), 0 when
	// not known.
	BytesPerOffset float64
	// Observed is the log start's observed advance while the group stood
	// still on the partition (Tracker.Observed), when HasObserved.
	Observed    Advance
	HasObserved bool
	// At is the scrape's instant, unix nanoseconds.
	At int64
}

// PredictPair is the margin of one pair. The time and size predictions
// are made when the topic's configuration sets their limit; the observed
// one when the log start's advance was measured, and it counts only where
// it is sooner than the configuration's by more than the time between two
// of its moves (its resolution): a log start that moves in segment steps
// as the configuration says would otherwise take turns with it.
func PredictPair(pl *lag.PartitionLag, in Pair) Margin {
	timeLimit, byTime := in.Retention.TimeLimit()
	sizeLimit, bySize := in.Retention.SizeLimit()
	byTime, bySize = byTime && in.HasRetention, bySize && in.HasRetention
	if !byTime && !bySize && !in.HasObserved {
		return Margin{} // nothing deletes its records
	}
	if !pl.HasEnd {
		return Margin{Outcome: Unknown}
	}
	if pl.CaughtUp || pl.Lag == 0 {
		return Margin{} // nothing left to lose
	}
	var m Margin
	if byTime {
		if !pl.HasTimeLag {
			return Margin{Outcome: Unknown}
		}
		m.soonest(timeLimit.Seconds()-pl.TimeLag, BasisTime)
	}
	if bySize && !in.Retention.RemoteStorage {
		seconds, deletes, known := sizeMargin(pl, sizeLimit, in.BytesPerOffset)
		if !known {
			return Margin{Outcome: Unknown}
		}
		if deletes {
			m.soonest(seconds, BasisSize)
		}
	}
	if in.HasObserved {
		seconds := in.Observed.Until(pl.Committed+pl.Lost, in.At)
		if m.Outcome != Known || seconds < m.Seconds-in.Observed.Interval {
			m.soonest(seconds, BasisLogStart)
		}
	}
	return m
}

// sizeMargin predicts when size retention may delete the oldest record the
// pair has not consumed, at from = its committed offset or the log start
// past it. A broker deletes a partition's oldest segment at a retention
// check when what remains without it is still at least retention.bytes, so
// it keeps at least retention.bytes, and never deletes the record before
// the bytes after it reach retention.bytes (its segment holds the record
// and may end anywhere after it, up to segment.bytes later). The bytes
// after it are the offsets after it times the partition's bytes per
// offset; the production rate in bytes is its rate in offsets times the
// same. deletes is false when nothing is produced and the bytes after it
// are below the limit: size deletes nothing then. known is false when the
// bytes per offset or the rate are not known.
func sizeMargin(pl *lag.PartitionLag, limit int64, bytesPerOffset float64) (seconds float64, deletes, known bool) {
	if bytesPerOffset <= 0 || !pl.HasProduceRate {
		return 0, false, false
	}
	from := pl.Committed + pl.Lost
	after := float64(max(0, pl.End-from-1)) * bytesPerOffset
	left := float64(limit) - after
	rate := pl.ProduceRate * bytesPerOffset
	switch {
	case rate > 0:
		return left / rate, true, true
	case left <= 0:
		return 0, true, true // due at the next retention check
	}
	return 0, false, true
}
