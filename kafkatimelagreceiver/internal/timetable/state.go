package timetable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// Stored state layout (version 2), every integer a varint:
//
//	magic "KTLT" | version | table count
//	per table: topic length, topic bytes | partition | lastRead |
//	           has start (0/1) [start] | point count |
//	           points: offset delta, time delta, gap end (0/1)
//
// Version 1 also stored each table's maxGap after lastRead. The gap bound is
// configuration, not history, and a restore always applied the current one,
// so version 2 drops it; version 1 is still read, skipping that field, so
// that state saved by the previous release restores.
//
// Deltas keep a table of 512 points near 2 KiB. Anything that does not
// decode exactly, or breaks an invariant of the tables, is rejected whole:
// history that might be wrong is worse than none.
const (
	stateMagic          = "KTLT"
	stateVersion        = 2
	stateVersionWithGap = 1
)

// ErrStateCorrupt is wrapped by the error of RestoreState when the state is
// damaged or was not written by EncodeState.
var ErrStateCorrupt = errors.New("stored state is corrupt")

// storedTable is one partition's saved state.
type storedTable struct {
	tp       kafka.TopicPartition
	table    *Table
	start    int64
	hasStart bool
}

// encodeState serialises tables in a stable order, so that unchanged tables
// are saved as unchanged bytes.
func encodeState(tables []storedTable) []byte {
	slices.SortFunc(tables, func(a, b storedTable) int { return a.tp.Compare(b.tp) })
	var buf bytes.Buffer
	var scratch [binary.MaxVarintLen64]byte
	putU := func(v uint64) { buf.Write(scratch[:binary.PutUvarint(scratch[:], v)]) }
	putI := func(v int64) { buf.Write(scratch[:binary.PutVarint(scratch[:], v)]) }
	putFlag := func(b bool) {
		if b {
			putU(1)
		} else {
			putU(0)
		}
	}
	buf.WriteString(stateMagic)
	putU(stateVersion)
	putU(uint64(len(tables)))
	for _, st := range tables {
		putU(uint64(len(st.tp.Topic)))
		buf.WriteString(st.tp.Topic)
		putI(int64(st.tp.Partition))
		putI(st.table.lastRead)
		putFlag(st.hasStart)
		if st.hasStart {
			putI(st.start)
		}
		putU(uint64(len(st.table.points)))
		var prev Sample
		for _, p := range st.table.points {
			putI(p.Offset - prev.Offset)
			putI(p.At - prev.At)
			putFlag(st.table.isGapEnd(p))
			prev = p
		}
	}
	return buf.Bytes()
}

// stateReader decodes varints and remembers the first failure, so that the
// decoder reads straight through and checks once per field group.
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
		d.err = fmt.Errorf("%w: %w", ErrStateCorrupt, err)
	}
	return v
}

func (d *stateReader) i() int64 {
	if d.err != nil {
		return 0
	}
	v, err := binary.ReadVarint(d.r)
	if err != nil {
		d.err = fmt.Errorf("%w: %w", ErrStateCorrupt, err)
	}
	return v
}

func (d *stateReader) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrStateCorrupt}, args...)...)
	}
}

// decodeState parses stored state into tables of the given bounds (thinned
// if the state was saved under a larger maxPoints).
func decodeState(data []byte, maxPoints int, maxGap time.Duration) ([]storedTable, error) {
	if len(data) < len(stateMagic) || string(data[:len(stateMagic)]) != stateMagic {
		return nil, fmt.Errorf("%w: not a kafka_time_lag state (bad magic)", ErrStateCorrupt)
	}
	d := &stateReader{r: bytes.NewReader(data[len(stateMagic):])}
	version := d.u()
	if d.err == nil && version != stateVersion && version != stateVersionWithGap {
		return nil, fmt.Errorf("stored state has version %d, this receiver reads versions %d and %d", version, stateVersionWithGap, stateVersion)
	}
	count := d.u()
	// Every table takes at least 6 bytes: a count larger than the input can
	// hold is corrupt, and must not drive an allocation.
	if d.err == nil && count > uint64(d.r.Len()/6+1) {
		d.fail("%d tables cannot fit in %d bytes", count, d.r.Len())
	}
	var out []storedTable
	seen := map[kafka.TopicPartition]bool{}
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
		tp := kafka.TopicPartition{Topic: string(topic), Partition: int32(partition)}
		if seen[tp] {
			d.fail("partition %s/%d stored twice", tp.Topic, tp.Partition)
		}
		seen[tp] = true
		st := storedTable{tp: tp, table: NewTable(maxPoints, maxGap)}
		st.table.lastRead = d.i()
		if version == stateVersionWithGap {
			_ = d.i() // the saved maxGap: the store's applies
		}
		switch d.u() {
		case 0:
		case 1:
			st.hasStart = true
			st.start = d.i()
		default:
			d.fail("invalid start flag of %s/%d", tp.Topic, tp.Partition)
		}
		points := d.u()
		if d.err == nil && points > uint64(d.r.Len()/3+1) {
			d.fail("%d points cannot fit in %d bytes", points, d.r.Len())
		}
		var prev Sample
		for p := uint64(0); p < points && d.err == nil; p++ {
			offsetDelta, atDelta := d.i(), d.i()
			gapEnd := d.u()
			cur := Sample{Offset: prev.Offset + offsetDelta, At: prev.At + atDelta}
			if d.err == nil && (gapEnd > 1 || (p > 0 && (offsetDelta < 0 || atDelta <= 0)) || cur.Offset < 0) {
				d.fail("points of %s/%d are not increasing", tp.Topic, tp.Partition)
			}
			st.table.points = append(st.table.points, cur)
			if gapEnd == 1 {
				st.table.markGapEnd(cur.At)
			}
			prev = cur
		}
		if d.err == nil && len(st.table.points) > 0 && st.table.lastRead < st.table.points[len(st.table.points)-1].At {
			d.fail("table of %s/%d was read before its newest point", tp.Topic, tp.Partition)
		}
		if d.err == nil && len(st.table.points) > st.table.maxPoints {
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
