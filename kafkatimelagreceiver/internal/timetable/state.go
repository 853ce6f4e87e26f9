package timetable

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/statecodec"
)

// Stored state layout (version 8), every integer a varint:
//
//	magic "KTLT" | version | cluster id length, cluster id | table count |
//	checksum of the header after the magic
//	per table: body length | body | checksum of the body length and body
//	body: topic length, topic bytes | partition | topic id: 0, or 1 and 16 bytes |
//	      lastRead | has start (0/1) [start] | point count |
//	      points: the first's offset and time (in timeUnits), then each
//	      one's deltas from the one before as a table packs them
//	      (packCursor), the newest's time delta told whole |
//	      gap count | gaps: index of each gap end point, as deltas |
//	      widest sampled segment (timeUnits) | width bound: 0 for none, or
//	      1 + how long before the newest point it ends (timeUnits)
//
// Version 8 adds the checksums (CRC-32C, statecodec.AppendChecksum): a
// table whose bytes were damaged in storage is left out rather than
// restored as other history (one flipped bit in a point's time can make a
// time lag of a century), and a damaged header refuses the whole state. It
// is 8 and not 7 because one flipped bit turns 7 into 6, 5 or 3, whose
// states carry no checksum to tell, while no single bit turns 8 into an
// earlier version.
// Version 6 packs a point whose offset did not move (the end of a flat
// run) into one varint, as the tables do: versions 4 and 5 stored each
// point as two, its offset and time deltas, unsigned.
// Version 5 adds what a table knows of how closely its segments date their
// records (see Bracket.Spread); a table of an earlier version dates them
// to within each segment's width, as it did when it was saved.
// Version 4 stores times in the tables' resolution (timeUnit) and gap ends
// as a list, not a flag in every point: a table of 512 busy points takes
// about 3 KiB where version 3 took 4, and a simplified one a few hundred
// bytes. Its points are the table's packed form, copied as they are.
// Version 3 adds the cluster id and the topic ids, which tell state sampled
// from another cluster, or from a topic since deleted and created again,
// from the tables' own; and it frames each table, so that a table that does
// not decode is skipped and the others are restored. Version 3 stores each
// point as signed offset and time (nanosecond) deltas and a gap-end flag.
// Version 2 is version 3 without the cluster id, the framing and the topic
// ids; version 1 also stored each table's maxGap after lastRead
// (configuration, not history: the store's own applies). All are still
// read, so that state saved by an earlier release restores; their times are
// rounded up to timeUnit.
//
// A table that breaks an invariant of the tables (history that might be
// wrong is worse than none), or whose times lie in the future or before
// any Kafka record, is skipped; so is one whose checksum does not match
// and, when its length is damaged beyond one flipped bit, which hides
// where the next tables begin, those after it. State whose header or
// (before version 8) framing does not decode is rejected whole.
const (
	stateMagic                  = "KTLT"
	stateVersion                = 8
	stateVersionUnchecked       = 6
	stateVersionTwoVarintPoints = 5
	stateVersionNoSpread        = 4
	stateVersionFramed          = 3
	stateVersionNoIDs           = 2
	stateVersionWithGap         = 1
	// maxClusterIDLen bounds a stored cluster id; Kafka's are 22 bytes.
	maxClusterIDLen = 256
	// maxTopicLen is the longest topic name Kafka allows.
	maxTopicLen = 249
)

// ErrStateCorrupt is wrapped by the error of RestoreState when the state is
// damaged or was not written by EncodeState.
var ErrStateCorrupt = statecodec.ErrCorrupt

// ErrDamaged is wrapped by the reason a table was left out (Restored.Skipped)
// when its bytes do not match the checksum saved with them, or a damaged
// length before it hides where it begins; and by the error of RestoreState
// when the header's do not.
var ErrDamaged = statecodec.ErrDamaged

// storedTable is one partition's saved state.
type storedTable struct {
	tp       kafka.TopicPartition
	topicID  kafka.TopicID
	table    *Table
	start    int64
	hasStart bool
}

// decodedState is what decodeState read.
type decodedState struct {
	clusterID string
	tables    []storedTable
	// skipped says why each table left out was.
	skipped []error
}

// encodeState serialises tables in a stable order, so that unchanged tables
// are saved as unchanged bytes.
func encodeState(clusterID string, tables []storedTable) []byte {
	slices.SortFunc(tables, func(a, b storedTable) int { return a.tp.Compare(b.tp) })
	var frames, body []byte
	for _, st := range tables {
		frames, body = appendFramedTable(frames, body, st)
	}
	return appendStateHeader(clusterID, len(tables), len(frames), frames)
}

// appendStateHeader returns the header of a state of count tables followed
// by their frames.
func appendStateHeader(clusterID string, count, size int, frames []byte) []byte {
	out := make([]byte, 0, stateHeaderRoom(clusterID)+size)
	out = binary.AppendUvarint(append(out, stateMagic...), stateVersion)
	out = binary.AppendUvarint(out, uint64(len(clusterID)))
	out = append(out, clusterID...)
	out = binary.AppendUvarint(out, uint64(count))
	out = statecodec.AppendChecksum(out, len(stateMagic))
	return append(out, frames...)
}

// stateHeaderRoom is the longest header appendStateHeader can write.
func stateHeaderRoom(clusterID string) int {
	return len(stateMagic) + 3*binary.MaxVarintLen64 + len(clusterID) + statecodec.ChecksumLen
}

// appendFramedTable appends the frame of one table to frames, encoding it
// in body, whose storage it returns for the next table.
func appendFramedTable(frames, body []byte, st storedTable) (newFrames, newBody []byte) {
	body = encodeTable(body[:0], st)
	start := len(frames)
	frames = binary.AppendUvarint(frames, uint64(len(body)))
	return statecodec.AppendChecksum(append(frames, body...), start), body
}

func encodeTable(b []byte, st storedTable) []byte {
	flag := func(set bool) uint64 {
		if set {
			return 1
		}
		return 0
	}
	b = binary.AppendUvarint(b, uint64(len(st.tp.Topic)))
	b = append(b, st.tp.Topic...)
	b = binary.AppendVarint(b, int64(st.tp.Partition))
	b = binary.AppendUvarint(b, flag(!st.topicID.IsZero()))
	if !st.topicID.IsZero() {
		b = append(b, st.topicID[:]...)
	}
	b = binary.AppendVarint(b, st.table.lastRead)
	b = binary.AppendUvarint(b, flag(st.hasStart))
	if st.hasStart {
		b = binary.AppendVarint(b, st.start)
	}
	t := st.table
	b = binary.AppendUvarint(b, uint64(t.n))
	if t.n > 0 {
		b = binary.AppendVarint(b, t.first.Offset)
		b = binary.AppendVarint(b, t.first.At/timeUnit)
		b = append(b, t.packed...)
	}
	if t.n >= 2 {
		// The newest point, which the table keeps unpacked, is told
		// whole, so that saving a table decodes none of it.
		newest := startCursor(t.tail)
		b = newest.appendPacked(b, t.last)
	}
	var gapEnds []int
	if len(t.gaps) > 0 {
		for i, p := range t.samples() {
			if t.isGapEnd(p) {
				gapEnds = append(gapEnds, i)
			}
		}
	}
	b = binary.AppendUvarint(b, uint64(len(gapEnds)))
	prev := 0
	for _, i := range gapEnds {
		b = binary.AppendUvarint(b, uint64(i-prev))
		prev = i
	}
	b = binary.AppendUvarint(b, uint64(t.widest))
	if t.widthBoundUntil == 0 {
		return binary.AppendUvarint(b, 0)
	}
	return binary.AppendUvarint(b, 1+uint64((t.last.At-t.widthBoundUntil)/timeUnit))
}

// decodeState parses stored state into tables of the given bounds (thinned
// if the state was saved under a larger maxPoints). Tables with a time
// before notBefore or read after notAfter (unix nanoseconds) are skipped, as
// are tables that break an invariant or whose checksum does not match; the
// error is for state that cannot be read at all.
func decodeState(data []byte, maxPoints int, maxGap time.Duration, notBefore, notAfter int64) (decodedState, error) {
	if len(data) < len(stateMagic) || string(data[:len(stateMagic)]) != stateMagic {
		return decodedState{}, fmt.Errorf("%w: not a kafka_time_lag state (bad magic)", ErrStateCorrupt)
	}
	d := statecodec.NewReader(data[len(stateMagic):])
	version := d.Uvarint()
	if d.OK() && (version < stateVersionWithGap || version > stateVersion || version == stateVersionUnchecked+1) {
		return decodedState{}, fmt.Errorf("stored state has version %d, this receiver reads versions %d to %d and %d", version, stateVersionWithGap, stateVersionUnchecked, stateVersion)
	}
	checked := version > stateVersionUnchecked
	var out decodedState
	if version >= stateVersionFramed {
		n := d.Uvarint()
		if d.OK() && n > maxClusterIDLen {
			d.Fail("cluster id of %d bytes", n)
		}
		out.clusterID = string(d.Bytes(n))
	}
	count := d.Uvarint()
	if checked && !d.Checksum(0) && d.OK() {
		return decodedState{}, fmt.Errorf("%w: header: %w", ErrStateCorrupt, ErrDamaged)
	}
	// Every table takes at least 6 bytes: a count larger than the input can
	// hold is corrupt, and must not drive an allocation.
	if d.OK() && count > uint64(d.Len()/6+1) {
		d.Fail("%d tables cannot fit in %d bytes", count, d.Len())
	}
	seen := map[kafka.TopicPartition]bool{}
	damaged := false
	for n := uint64(0); n < count && d.OK(); n++ {
		var (
			st      storedTable
			problem error
		)
		switch {
		case checked:
			body, end, match := nextFrame(d.Rest())
			if end < 0 {
				// A damaged length that no single flipped bit explains:
				// where this table and the ones after it begin is lost.
				// Those before it matched their checksums.
				for ; n < count; n++ {
					out.skipped = append(out.skipped, fmt.Errorf("table %d of %d: %w: its length does not fit the state", n+1, count, ErrDamaged))
				}
				return out, nil
			}
			d.Bytes(uint64(end))
			if !match {
				damaged = true
				out.skipped = append(out.skipped, fmt.Errorf("table %d of %d, saved as %s: %w", n+1, count, savedAs(body), ErrDamaged))
				continue
			}
			st, problem = decodeFramedTable(body, n, version, maxPoints, maxGap)
		case version >= stateVersionFramed:
			size := d.Uvarint()
			if d.OK() && size > uint64(d.Len()) {
				d.Fail("table %d of %d bytes exceeds the input", n, size)
			}
			st, problem = decodeFramedTable(d.Bytes(size), n, version, maxPoints, maxGap)
		default:
			st, problem = decodeTable(d, version, maxPoints, maxGap)
		}
		if !d.OK() {
			break
		}
		if problem == nil {
			problem = implausible(st, seen, notBefore, notAfter)
		}
		if problem != nil {
			out.skipped = append(out.skipped, problem)
			continue
		}
		seen[st.tp] = true
		if st.table.n > st.table.maxPoints {
			st.table.setPoints(st.table.thin(st.table.samples(), nil))
		}
		out.tables = append(out.tables, st)
	}
	// A damaged length that still fits the state leaves bytes over.
	if d.OK() && d.Len() != 0 && !damaged {
		d.Fail("%d trailing bytes", d.Len())
	}
	if !d.OK() {
		return decodedState{}, d.Err()
	}
	return out, nil
}

// decodeTable reads one table. Whatever the bytes hold, it reads every field
// of the table, so that a table of an unframed version that breaks an
// invariant is skipped without losing the place of the next; problem says
// which invariant. A failure to read at all is left in d.Err().
func decodeTable(d *statecodec.Reader, version uint64, maxPoints int, maxGap time.Duration) (st storedTable, problem error) {
	bad := func(format string, args ...any) {
		if problem == nil {
			problem = fmt.Errorf("table of %s/%d: "+format, append([]any{st.tp.Topic, st.tp.Partition}, args...)...)
		}
	}
	topicLen := d.Uvarint()
	if d.OK() && topicLen > uint64(d.Len()) {
		d.Fail("topic length %d exceeds the input", topicLen)
	}
	topic := d.Bytes(topicLen)
	partition := d.Varint()
	st.tp = kafka.TopicPartition{Topic: string(topic), Partition: int32(partition)}
	switch {
	case topicLen > maxTopicLen:
		st.tp.Topic = fmt.Sprintf("<%d-byte name>", topicLen)
		bad("topic name longer than Kafka allows")
	case topicLen == 0:
		bad("empty topic name")
	case partition < 0 || partition > math.MaxInt32:
		bad("invalid partition %d", partition)
	}
	st.table = NewTable(maxPoints, maxGap)
	if version >= stateVersionFramed {
		switch d.Uvarint() {
		case 0:
		case 1:
			copy(st.topicID[:], d.Bytes(uint64(len(st.topicID))))
		default:
			bad("invalid topic id flag")
		}
	}
	st.table.lastRead = d.Varint()
	if version == stateVersionWithGap {
		_ = d.Varint() // the saved maxGap: the store's applies
	}
	switch d.Uvarint() {
	case 0:
	case 1:
		st.hasStart = true
		st.start = d.Varint()
		if st.start < 0 {
			bad("negative log start %d", st.start)
		}
	default:
		if version >= stateVersionFramed {
			bad("invalid start flag")
		} else {
			// Unframed: whether a start follows is unknown, and so is where
			// the next table begins.
			d.Fail("invalid start flag of %s/%d", st.tp.Topic, st.tp.Partition)
		}
	}
	var points []Sample
	var gapEnds map[int64]struct{}
	if version >= stateVersionNoSpread {
		points, gapEnds = decodePoints(d, version > stateVersionTwoVarintPoints, bad)
	} else {
		points, gapEnds = decodePointsV3(d, bad)
		st.table.lastRead = quantize(st.table.lastRead)
	}
	if !d.OK() || problem != nil {
		return st, problem
	}
	widest, widthBoundUntil := uint64(0), int64(0)
	if len(points) > 0 {
		// As saved by an earlier version: every segment dates its records
		// to within its width.
		widthBoundUntil = points[len(points)-1].At
	}
	if version >= stateVersionTwoVarintPoints && d.OK() {
		widest = d.Uvarint()
		before := d.Uvarint()
		switch {
		case widest > math.MaxInt32:
			bad("widest segment %d out of range", widest)
		case before == 0:
			widthBoundUntil = 0
		case len(points) == 0 || before-1 > uint64(points[len(points)-1].At-points[0].At)/uint64(timeUnit):
			bad("width bound outside the table")
		default:
			widthBoundUntil = points[len(points)-1].At - int64(before-1)*timeUnit
		}
	}
	if !d.OK() || problem != nil {
		return st, problem
	}
	st.table.setPoints(points)
	st.table.gaps = gapEnds
	st.table.widest, st.table.widthBoundUntil = int32(widest), widthBoundUntil
	if len(points) > 0 && st.table.lastRead < points[len(points)-1].At {
		bad("read before its newest point")
	}
	return st, problem
}

// addExact adds, reporting false when the sum overflows int64: the decoder
// checks after adding, so a delta cannot wrap a point around.
func addExact(a, b int64) (int64, bool) {
	sum := a + b
	return sum, (b >= 0) == (sum >= a)
}
