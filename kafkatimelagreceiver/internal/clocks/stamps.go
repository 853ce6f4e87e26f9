package clocks

import (
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// A record's timestamp is the producer's to set. Most producers stamp the
// moment they send, and the clocks measured from the tables (clocks.go)
// correct what a host's clock adds. Others stamp when the event happened:
// Kafka Streams forwards its input's timestamps, Connect sources stamp the
// source's change time, MirrorMaker 2 keeps the source cluster's stamps.
// Their records are appended minutes or days after their stamps, in no
// order, and no clock offset turns those stamps into append times. So a
// stamp dates a record only where the partition's stamps are shown to be
// append times: the topic's configuration says so (LogAppendTime, or
// KIP-937 bounds that hold stamps near the append), or the records the
// tables bound on both sides agree with one clock, within the target, over
// stampsShownAfter reads. Elsewhere the tables date what they bound, and a
// record older than them is withheld (MethodUnproven).

// NoProducerClock is the clock the records of batches without a producer
// ID are measured by, per partition (a producer that is not idempotent,
// such as librdkafka's default): their reads cannot be told apart by
// producer, so together they show whether the partition's stamps are
// append times, and move no record.
const NoProducerClock int64 = -3

// stampsShownAfter is how many reads of records the tables bound on both
// sides a clock needs before its stamps are taken to be append times.
const stampsShownAfter = 4

// stampTolerance is how far a clock's reads may disagree (spread), for a
// record whose stamp says it is age old, for its stamp to date it: twice
// the target, max(1 s, 1 % of the age), what a date from the middle of the
// disagreement is within.
func stampTolerance(age int64) int64 {
	return 2 * max(int64(time.Second), age/100)
}

// spread is how far the clock's reads disagree: no single offset fits
// them all within that much. Where they agree, the clock's offset is one
// they allow, taken closest to none (clock.offset), as a clock
// the tables never contradict is trusted as it is.
func (c clock) spread() int64 {
	lo, hi := c.bounds()
	if lo <= unbounded || hi >= noBound {
		return 0
	}
	return max(0, lo-hi)
}

// shown tells whether the clock's reads show its stamps to be append times
// (moved by the clock's offset) within the target for a record age old.
func (c clock) shown(age int64) bool {
	return !c.restored && c.bounded >= stampsShownAfter && c.spread() <= stampTolerance(age)
}

// StampsShown tells whether rec's stamp dates it, at age (the scrape's
// time minus the stamp): its own clock (its producer's, the time index's,
// or that of the batches without an ID) shows it. No other clock speaks
// for it: a producer is not its neighbour (one partition can carry a
// producer stamping sends and one stamping event times), and a producer ID
// not measured since a restart may be another process's. within is how
// far the topic's configuration proves its stamps from their appends, when
// it does (bounded).
func (pc Partition) StampsShown(rec kafka.RecordTimestamp, age int64, within time.Duration, bounded bool) bool {
	if bounded && int64(within) <= stampTolerance(age)/2 {
		return true
	}
	own := NoProducerClock
	switch {
	case FromIndex(rec):
		own = TimeIndexClock
	case rec.ByProducer:
		own = rec.Producer
	}
	for _, c := range pc {
		if c.producer == own {
			return rec.Offset >= c.since && c.shown(age)
		}
	}
	return false
}

// Measured tells whether some clock was read enough to show whether its
// stamps are append times.
func (pc Partition) Measured() bool {
	for _, c := range pc {
		if !c.restored && c.bounded >= stampsShownAfter {
			return true
		}
	}
	return false
}

// ProducerShown tells whether some producer's own clock (not the time
// index's, nor that of the batches without an ID) was read enough to show
// whether its stamps are append times: a read, which says which producer
// stamped a record, then dates its records where the index cannot.
func (pc Partition) ProducerShown() bool {
	for _, c := range pc {
		if c.producer >= 0 && !c.restored && c.bounded >= stampsShownAfter {
			return true
		}
	}
	return false
}
