package clocks

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/statecodec"
)

// clocksStateMagic and clocksStateVersion head the producers' clocks as
// saved (Encode): another version's state is refused whole.
const (
	clocksStateMagic   = "KTLC"
	clocksStateVersion = 2
	// clocksStateVersionUnbounded is the version before clocks kept how
	// many of their reads the tables bound on both sides: its clocks are
	// restored as bounding none.
	clocksStateVersionUnbounded = 1
)

// restoredClockLead is how far after the restore a saved clock may say it
// was last read: clocks of two hosts kept by NTP agree to far better.
const restoredClockLead = int64(time.Minute)

// Encode saves the producers' clocks: by partition, in (topic, partition)
// order, each clock's bounds, when it was last read, how many reads it
// holds and how many of those the tables bound on both sides; each
// partition's clocks followed by their checksum, so that a partition
// damaged in storage is left out alone.
func Encode(byPartition map[kafka.TopicPartition]Partition) []byte {
	tps := make([]kafka.TopicPartition, 0, len(byPartition))
	for tp := range byPartition {
		tps = append(tps, tp)
	}
	kafka.SortPartitions(tps)
	out := append([]byte(clocksStateMagic), clocksStateVersion)
	out = binary.AppendUvarint(out, uint64(len(tps)))
	for _, tp := range tps {
		from := len(out)
		out = binary.AppendUvarint(out, uint64(len(tp.Topic)))
		out = append(out, tp.Topic...)
		out = binary.AppendUvarint(out, uint64(tp.Partition))
		pc := byPartition[tp]
		out = binary.AppendUvarint(out, uint64(len(pc)))
		for _, c := range pc {
			for _, v := range []int64{c.producer, c.lo, c.hi, c.prevLo, c.prevHi, c.learned} {
				out = binary.AppendVarint(out, v)
			}
			out = binary.AppendUvarint(out, uint64(c.reads))
			out = binary.AppendUvarint(out, uint64(c.windowReads))
			out = binary.AppendUvarint(out, uint64(c.bounded))
		}
		out = statecodec.AppendChecksum(out, from)
	}
	return out
}

// Restored says what Decode restored.
type Restored struct {
	Partitions, Clocks int
	// Skipped are the partitions left out, each with why: damaged in
	// storage (statecodec.ErrDamaged), or holding a clock no read could
	// have measured.
	Skipped []error
}

// Decode restores producers' clocks saved by Encode at now: those last
// read within clockForgetAfter before now, as a clock read then would be
// kept; a partition whose bytes are damaged, or whose clocks break what
// reads can measure, is left out, and the rest restored. State of another
// version, or whose framing is damaged, is refused whole.
func Decode(data []byte, now time.Time) (map[kafka.TopicPartition]Partition, Restored, error) {
	var restored Restored
	d := statecodec.NewReader(data)
	if string(d.Bytes(uint64(len(clocksStateMagic)))) != clocksStateMagic || !d.OK() {
		return nil, restored, fmt.Errorf("restore producers' clocks: %w: not a state of producers' clocks", statecodec.ErrCorrupt)
	}
	v := d.Bytes(1)
	if !d.OK() || v[0] != clocksStateVersion && v[0] != clocksStateVersionUnbounded {
		return nil, restored, fmt.Errorf("restore producers' clocks: %w: version %v, this receiver reads %d and %d", statecodec.ErrCorrupt, v, clocksStateVersionUnbounded, clocksStateVersion)
	}
	withBounded := v[0] == clocksStateVersion
	at := now.UnixNano()
	n := d.Count(4, "partitions")
	byPartition := make(map[kafka.TopicPartition]Partition, n)
	for range n {
		from := d.Pos()
		tp := kafka.TopicPartition{Topic: d.Name("topic")}
		tp.Partition = int32(d.Bounded(1<<31-1, "partition"))
		count := d.Count(9, "clocks")
		pc := make(Partition, 0, count)
		var implausible error
		for range count {
			c := clock{producer: d.Varint(), lo: d.Varint(), hi: d.Varint(), prevLo: d.Varint(), prevHi: d.Varint(), learned: d.Varint(), countedUpTo: -1, since: -1}
			c.reads = uint16(d.Bounded(clockSettled, "reads"))
			c.windowReads = uint16(d.Bounded(clockWindow, "window reads"))
			if withBounded {
				c.bounded = uint16(d.Bounded(stampsShownAfter, "reads bounded on both sides"))
			}
			// Until a read after the restart agrees, the producer ID may be
			// another process's (clock.restored).
			c.restored = true
			if err := c.plausible(at); err != nil && implausible == nil {
				implausible = fmt.Errorf("%s/%d producer %d: %w", tp.Topic, tp.Partition, c.producer, err)
			}
			if at-c.learned <= clockForgetAfter {
				pc = append(pc, c)
			}
		}
		switch {
		case !d.Checksum(from):
			if !d.OK() {
				return nil, restored, fmt.Errorf("restore producers' clocks: %w", d.Err())
			}
			restored.Skipped = append(restored.Skipped, fmt.Errorf("%s/%d: %w", tp.Topic, tp.Partition, statecodec.ErrDamaged))
		case implausible != nil:
			restored.Skipped = append(restored.Skipped, implausible)
		case len(pc) > 0:
			byPartition[tp] = slices.Clip(pc[:min(len(pc), clocksPerPartition)])
			restored.Partitions++
			restored.Clocks += len(byPartition[tp])
		}
	}
	if d.Len() > 0 {
		return nil, Restored{}, fmt.Errorf("restore producers' clocks: %w: %d bytes after the last partition", statecodec.ErrCorrupt, d.Len())
	}
	return byPartition, restored, nil
}

// plausible says why a restored clock is not one reads could have
// measured by at (unix nanoseconds), or nil: read in the future or before
// Kafka, bounds beyond a clock's lead (kafka.MaxClockLead) but for the
// sentinels of no bound, or more reads than a clock counts.
func (c clock) plausible(at int64) error {
	switch {
	case c.learned > at+restoredClockLead || c.learned < kafka.MinRecordTime.UnixNano():
		return fmt.Errorf("last read at %s", time.Unix(0, c.learned).UTC().Format(time.RFC3339))
	case c.reads == 0 || c.windowReads == 0:
		return fmt.Errorf("no read")
	}
	lead := int64(kafka.MaxClockLead)
	for _, b := range []struct {
		v        int64
		sentinel int64
	}{{c.lo, unbounded}, {c.hi, noBound}, {c.prevLo, unbounded}, {c.prevHi, noBound}} {
		if b.v != b.sentinel && cmp.Compare(max(b.v, -b.v), lead) > 0 {
			return fmt.Errorf("an offset of %s", time.Duration(b.v))
		}
	}
	return nil
}
