package timetable

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/statecodec"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// Stored state layout (version 3), every integer a varint:
//
//	magic "KTLT" | version | cluster id length, cluster id | table count
//	per table: body length | body
//	body: topic length, topic bytes | partition | topic id: 0, or 1 and 16 bytes |
//	      lastRead | has start (0/1) [start] | point count |
//	      points: offset delta, time delta, gap end (0/1)
//
// Version 3 adds the cluster id and the topic ids, which tell state sampled
// from another cluster, or from a topic since deleted and created again,
// from the tables' own; and it frames each table, so that a table that does
// not decode is skipped and the others are restored. Version 2 is version 3
// without the cluster id, the framing and the topic ids; version 1 also
// stored each table's maxGap after lastRead (configuration, not history:
// the store's own applies). Both are still read, so that state saved by an
// earlier release restores.
//
// Deltas keep a table of 512 points near 2 KiB. A table that breaks an
// invariant of the tables (history that might be wrong is worse than none),
// or whose times lie in the future, is skipped; state whose framing does
// not decode is rejected whole.
const (
	stateMagic          = "KTLT"
	stateVersion        = 3
	stateVersionNoIDs   = 2
	stateVersionWithGap = 1
	// maxClusterIDLen bounds a stored cluster id; Kafka's are 22 bytes.
	maxClusterIDLen = 256
	// maxTopicLen is the longest topic name Kafka allows.
	maxTopicLen = 249
)

// ErrStateCorrupt is wrapped by the error of RestoreState when the state is
// damaged or was not written by EncodeState.
var ErrStateCorrupt = statecodec.ErrCorrupt

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
	out := binary.AppendUvarint([]byte(stateMagic), stateVersion)
	out = binary.AppendUvarint(out, uint64(len(clusterID)))
	out = append(out, clusterID...)
	out = binary.AppendUvarint(out, uint64(len(tables)))
	var body []byte
	for _, st := range tables {
		body = encodeTable(body[:0], st)
		out = binary.AppendUvarint(out, uint64(len(body)))
		out = append(out, body...)
	}
	return out
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
	b = binary.AppendUvarint(b, uint64(len(st.table.points)))
	var prev Sample
	for _, p := range st.table.points {
		b = binary.AppendVarint(b, p.Offset-prev.Offset)
		b = binary.AppendVarint(b, p.At-prev.At)
		b = binary.AppendUvarint(b, flag(st.table.isGapEnd(p)))
		prev = p
	}
	return b
}

// decodeState parses stored state into tables of the given bounds (thinned
// if the state was saved under a larger maxPoints). Tables read at a time
// after notAfter (unix nanoseconds) are skipped, as are tables that break an
// invariant; the error is for state that cannot be read at all.
func decodeState(data []byte, maxPoints int, maxGap time.Duration, notAfter int64) (decodedState, error) {
	if len(data) < len(stateMagic) || string(data[:len(stateMagic)]) != stateMagic {
		return decodedState{}, fmt.Errorf("%w: not a kafka_time_lag state (bad magic)", ErrStateCorrupt)
	}
	d := statecodec.NewReader(data[len(stateMagic):])
	version := d.Uvarint()
	if d.OK() && (version < stateVersionWithGap || version > stateVersion) {
		return decodedState{}, fmt.Errorf("stored state has version %d, this receiver reads versions %d to %d", version, stateVersionWithGap, stateVersion)
	}
	var out decodedState
	if version >= stateVersion {
		n := d.Uvarint()
		if d.OK() && n > maxClusterIDLen {
			d.Fail("cluster id of %d bytes", n)
		}
		out.clusterID = string(d.Bytes(n))
	}
	count := d.Uvarint()
	// Every table takes at least 6 bytes: a count larger than the input can
	// hold is corrupt, and must not drive an allocation.
	if d.OK() && count > uint64(d.Len()/6+1) {
		d.Fail("%d tables cannot fit in %d bytes", count, d.Len())
	}
	seen := map[kafka.TopicPartition]bool{}
	for n := uint64(0); n < count && d.OK(); n++ {
		var (
			st      storedTable
			problem error
		)
		if version >= stateVersion {
			size := d.Uvarint()
			if d.OK() && size > uint64(d.Len()) {
				d.Fail("table %d of %d bytes exceeds the input", n, size)
			}
			body := statecodec.NewReader(d.Bytes(size))
			st, problem = decodeTable(body, version, maxPoints, maxGap)
			if problem == nil && body.OK() && body.Len() != 0 {
				problem = fmt.Errorf("table of %s/%d: %d trailing bytes", st.tp.Topic, st.tp.Partition, body.Len())
			}
			if !body.OK() {
				problem = fmt.Errorf("table %d: %w", n, body.Err())
			}
		} else {
			st, problem = decodeTable(d, version, maxPoints, maxGap)
		}
		if !d.OK() {
			break
		}
		switch {
		case problem != nil:
		case seen[st.tp]:
			problem = fmt.Errorf("table of %s/%d: stored twice", st.tp.Topic, st.tp.Partition)
		case st.table.lastRead > notAfter:
			problem = fmt.Errorf("table of %s/%d: read at %s, after now: the clock was stepped back since it was saved, or the state comes from a host whose clock was ahead",
				st.tp.Topic, st.tp.Partition, time.Unix(0, st.table.lastRead).UTC().Format(time.RFC3339))
		}
		if problem != nil {
			out.skipped = append(out.skipped, problem)
			continue
		}
		seen[st.tp] = true
		if len(st.table.points) > st.table.maxPoints {
			st.table.thin()
		}
		out.tables = append(out.tables, st)
	}
	if d.OK() && d.Len() != 0 {
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
	if version >= stateVersion {
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
		if version >= stateVersion {
			bad("invalid start flag")
		} else {
			// Unframed: whether a start follows is unknown, and so is where
			// the next table begins.
			d.Fail("invalid start flag of %s/%d", st.tp.Topic, st.tp.Partition)
		}
	}
	points := d.Uvarint()
	if d.OK() && points > uint64(d.Len()/3+1) {
		d.Fail("%d points cannot fit in %d bytes", points, d.Len())
	}
	if !d.OK() {
		return st, nil
	}
	var prev Sample
	for p := uint64(0); p < points && d.OK(); p++ {
		offsetDelta, atDelta := d.Varint(), d.Varint()
		gapEnd := d.Uvarint()
		offset, offsetOK := addExact(prev.Offset, offsetDelta)
		at, atOK := addExact(prev.At, atDelta)
		cur := Sample{Offset: offset, At: at}
		switch {
		case !offsetOK || !atOK:
			bad("point %d overflows", p)
		case offset < 0:
			bad("negative offset %d", offset)
		case p > 0 && (offsetDelta < 0 || atDelta <= 0):
			bad("points are not increasing")
		case gapEnd > 1:
			bad("invalid gap flag")
		}
		if problem != nil {
			continue // read the rest of the table, keep nothing of it
		}
		st.table.points = append(st.table.points, cur)
		if gapEnd == 1 {
			st.table.markGapEnd(cur.At)
		}
		prev = cur
	}
	if problem == nil && len(st.table.points) > 0 && st.table.lastRead < st.table.points[len(st.table.points)-1].At {
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
