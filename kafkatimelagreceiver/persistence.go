package kafkatimelagreceiver

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// Stored state layout (version 1), every integer a varint:
//
//	magic "KTLT" | version | table count
//	per table: topic length, topic bytes | partition | lastRead | maxGap |
//	           has start (0/1) [start] | point count |
//	           points: offset delta, time delta, gap end (0/1)
//
// Deltas keep a table of 512 points near 2 KiB. Anything that does not
// decode exactly, or breaks an invariant of the tables, is rejected whole:
// history that might be wrong is worse than none.
const (
	stateMagic   = "KTLT"
	stateVersion = 1
	// stateKey is the storage key; its version suffix lets a future layout
	// live beside this one during an upgrade.
	stateKey = "tables.v1"
)

// storedTable is one partition's saved state.
type storedTable struct {
	tp       topicPartition
	table    *offsetTable
	start    int64
	hasStart bool
}

// encodeState serialises tables in a stable order.
func encodeState(tables []storedTable) []byte {
	sort.Slice(tables, func(i, j int) bool {
		a, b := tables[i].tp, tables[j].tp
		if a.topic != b.topic {
			return a.topic < b.topic
		}
		return a.partition < b.partition
	})
	var buf bytes.Buffer
	var scratch [binary.MaxVarintLen64]byte
	putU := func(v uint64) { buf.Write(scratch[:binary.PutUvarint(scratch[:], v)]) }
	putI := func(v int64) { buf.Write(scratch[:binary.PutVarint(scratch[:], v)]) }
	buf.WriteString(stateMagic)
	putU(stateVersion)
	putU(uint64(len(tables)))
	for _, st := range tables {
		putU(uint64(len(st.tp.topic)))
		buf.WriteString(st.tp.topic)
		putI(int64(st.tp.partition))
		putI(st.table.lastRead)
		putI(st.table.maxGap)
		if st.hasStart {
			putU(1)
			putI(st.start)
		} else {
			putU(0)
		}
		putU(uint64(len(st.table.points)))
		var prev offsetSample
		for _, p := range st.table.points {
			putI(p.offset - prev.offset)
			putI(p.at - prev.at)
			if st.table.isGapEnd(p) {
				putU(1)
			} else {
				putU(0)
			}
			prev = p
		}
	}
	return buf.Bytes()
}

var errStateCorrupt = errors.New("stored state is corrupt")

// stateReader decodes varints and remembers the first failure.
type stateReader struct {
	r   *bytes.Reader
	err error
}

func (d *stateReader) u() uint64 {
	if d.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(d.r)
	if err != nil {
		d.err = fmt.Errorf("%w: %w", errStateCorrupt, err)
	}
	return v
}

func (d *stateReader) i() int64 {
	if d.err != nil {
		return 0
	}
	v, err := binary.ReadVarint(d.r)
	if err != nil {
		d.err = fmt.Errorf("%w: %w", errStateCorrupt, err)
	}
	return v
}

func (d *stateReader) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{errStateCorrupt}, args...)...)
	}
}

// decodeState parses stored state. Tables hold at most maxPoints points
// (thinned if the state was saved under a larger bound).
func decodeState(data []byte, maxPoints int) ([]storedTable, error) {
	if len(data) < len(stateMagic) || string(data[:len(stateMagic)]) != stateMagic {
		return nil, fmt.Errorf("%w: not a kafka_time_lag state (bad magic)", errStateCorrupt)
	}
	d := &stateReader{r: bytes.NewReader(data[len(stateMagic):])}
	if v := d.u(); d.err == nil && v != stateVersion {
		return nil, fmt.Errorf("stored state has version %d, this receiver reads version %d", v, stateVersion)
	}
	count := d.u()
	// Every table takes at least 6 bytes: a count larger than the input can
	// hold is corrupt, and must not drive an allocation.
	if d.err == nil && count > uint64(d.r.Len()/6+1) {
		d.fail("%d tables cannot fit in %d bytes", count, d.r.Len())
	}
	var out []storedTable
	seen := map[topicPartition]bool{}
	for n := uint64(0); n < count && d.err == nil; n++ {
		topicLen := d.u()
		if d.err == nil && topicLen > uint64(d.r.Len()) {
			d.fail("topic length %d exceeds the input", topicLen)
		}
		if d.err != nil {
			break
		}
		topic := make([]byte, topicLen)
		if _, err := d.r.Read(topic); err != nil && topicLen > 0 {
			d.fail("topic: %v", err)
		}
		partition := d.i()
		if d.err == nil && (partition < 0 || partition > 1<<31-1 || topicLen == 0) {
			d.fail("invalid partition %q/%d", topic, partition)
		}
		tp := topicPartition{string(topic), int32(partition)}
		if seen[tp] {
			d.fail("partition %s/%d stored twice", tp.topic, tp.partition)
		}
		seen[tp] = true
		st := storedTable{tp: tp, table: newOffsetTable(maxPoints)}
		st.table.lastRead = d.i()
		st.table.maxGap = d.i()
		switch d.u() {
		case 0:
		case 1:
			st.hasStart = true
			st.start = d.i()
		default:
			d.fail("invalid start flag")
		}
		points := d.u()
		if d.err == nil && points > uint64(d.r.Len()/3+1) {
			d.fail("%d points cannot fit in %d bytes", points, d.r.Len())
		}
		var prev offsetSample
		for p := uint64(0); p < points && d.err == nil; p++ {
			offsetDelta, atDelta := d.i(), d.i()
			gapEnd := d.u()
			cur := offsetSample{offset: prev.offset + offsetDelta, at: prev.at + atDelta}
			if d.err == nil && (gapEnd > 1 || (p > 0 && (offsetDelta < 0 || atDelta <= 0)) || cur.offset < 0) {
				d.fail("points of %s/%d are not increasing", tp.topic, tp.partition)
			}
			st.table.points = append(st.table.points, cur)
			if gapEnd == 1 {
				st.table.markGapEnd(cur.at)
			}
			prev = cur
		}
		if d.err == nil && len(st.table.points) > 0 && st.table.lastRead < st.table.points[len(st.table.points)-1].at {
			d.fail("table of %s/%d was read before its newest point", tp.topic, tp.partition)
		}
		if len(st.table.points) > maxPoints {
			st.table.thin()
		}
		out = append(out, st)
	}
	if d.err == nil && d.r.Len() != 0 {
		d.fail("%d trailing bytes", d.r.Len())
	}
	if d.err != nil {
		return nil, d.err
	}
	return out, nil
}
