package timetable

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

const sampleMaxGap = 30 * time.Second

func sampleTables(t *testing.T) []storedTable {
	t.Helper()
	base := time.Unix(1_700_000_000, 0)
	a := NewTable(16, sampleMaxGap)
	for i := range 10 {
		at := base.Add(time.Duration(i) * 10 * time.Second)
		if i == 6 {
			base = base.Add(5 * time.Minute) // an outage: the next point ends a gap
			at = base.Add(time.Duration(i) * 10 * time.Second)
		}
		a.Add(int64(i*100), at, at)
	}
	require.Len(t, a.gaps, 1)
	b := NewTable(16, sampleMaxGap)
	b.Add(7, base, base)
	return []storedTable{
		{tp: kafka.TopicPartition{Topic: "orders", Partition: 3}, table: a, start: 40, hasStart: true},
		{tp: kafka.TopicPartition{Topic: "ünïcode.topic-with.dots", Partition: 0}, table: b},
	}
}

// decodeAll decodes state with no bound on its times, and fails where
// decodeState would skip a table.
func decodeAll(data []byte, maxPoints int, maxGap time.Duration) ([]storedTable, error) {
	decoded, err := decodeState(data, maxPoints, maxGap, math.MinInt64, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	if len(decoded.skipped) > 0 {
		return nil, errors.Join(decoded.skipped...)
	}
	return decoded.tables, nil
}

func TestStateRoundTrip(t *testing.T) {
	in := sampleTables(t)
	data := encodeState("", in)
	out, err := decodeAll(data, 16, sampleMaxGap)
	require.NoError(t, err)
	require.Len(t, out, 2)
	byTP := map[kafka.TopicPartition]storedTable{}
	for _, st := range out {
		byTP[st.tp] = st
	}
	for _, want := range in {
		got := byTP[want.tp]
		require.Equal(t, want.table.samples(), got.table.samples(), want.tp)
		require.Equal(t, want.table.lastRead, got.table.lastRead)
		require.Equal(t, len(want.table.gaps), len(got.table.gaps))
		for at := range want.table.gaps {
			require.Contains(t, got.table.gaps, at)
		}
		require.Equal(t, want.hasStart, got.hasStart)
		require.Equal(t, want.start, got.start)
		require.Equal(t, want.table.widest, got.table.widest)
		require.Equal(t, want.table.widthBoundUntil, got.table.widthBoundUntil)
	}
	// Encoding is deterministic.
	require.Equal(t, data, encodeState("", out))
}

func TestStateDecodeThinsToCurrentBound(t *testing.T) {
	big := NewTable(1000, 0)
	base := time.Unix(1_700_000_000, 0)
	// Bursts every other second: no point is on the line between its
	// neighbours, so simplification keeps them all.
	offset := int64(0)
	for i := range 600 {
		at := base.Add(time.Duration(i) * time.Second)
		offset += 1 + int64(i%2)*100
		big.Add(offset, at, at)
	}
	require.Equal(t, 600, tableLen(big))
	out, err := decodeAll(encodeState("", []storedTable{{tp: kafka.TopicPartition{Topic: "t", Partition: 0}, table: big}}), 64, 0)
	require.NoError(t, err)
	require.LessOrEqual(t, tableLen(out[0].table), 64)
	require.Equal(t, big.samples()[0], out[0].table.samples()[0], "the oldest point survives thinning")
	require.Equal(t, big.samples()[599], out[0].table.samples()[tableLen(out[0].table)-1], "so does the newest")
}

func TestStateDecodeRejectsBadInput(t *testing.T) {
	good := encodeState("", sampleTables(t))
	// Version 3 is this package's own; 4 is the next one's.
	otherVersion := append([]byte(stateMagic), stateVersion+1, 0)
	cases := map[string][]byte{
		"empty":               nil,
		"bad magic":           []byte("NOPE\x01\x00"),
		"other version":       otherVersion,
		"truncated":           good[:len(good)/2],
		"trailing bytes":      append(append([]byte(nil), good...), 0),
		"huge table count":    append([]byte(stateMagic), 1, 0xff, 0xff, 0xff, 0xff, 0x0f),
		"huge table count v2": append([]byte(stateMagic), 2, 0xff, 0xff, 0xff, 0xff, 0x0f),
		"huge table count v3": append([]byte(stateMagic), 3, 0, 0xff, 0xff, 0xff, 0xff, 0x0f),
		"huge cluster id":     append([]byte(stateMagic), 3, 0xff, 0xff, 0x03),
		"huge table body":     append([]byte(stateMagic), 3, 0, 1, 0xff, 0xff, 0x03, 1),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := decodeAll(data, 16, 0)
			require.Error(t, err)
		})
	}
	// Every truncation of a valid state fails cleanly, never panics.
	for n := range len(good) {
		_, err := decodeAll(good[:n], 16, 0)
		require.Error(t, err, "prefix of %d bytes", n)
	}
	// The same holds for the earlier releases' layouts.
	for _, version := range []uint64{stateVersionWithGap, stateVersionNoIDs, stateVersionFramed} {
		old := encodeStateVersion(t, version, sampleTables(t))
		for n := range len(old) {
			_, err := decodeAll(old[:n], 16, 0)
			require.Error(t, err, "prefix of %d bytes of version %d", n, version)
		}
	}
}

func TestStateErrorsTellCorruptFromOtherVersion(t *testing.T) {
	_, err := decodeAll([]byte("KTLT\x01\x05garbage"), 16, 0)
	require.ErrorIs(t, err, ErrStateCorrupt)
	_, err = decodeAll([]byte("NOPE"), 16, 0)
	require.ErrorIs(t, err, ErrStateCorrupt)

	_, err = decodeAll(append([]byte(stateMagic), 9, 0), 16, 0)
	require.Error(t, err)
	require.False(t, errors.Is(err, ErrStateCorrupt), "another version's state is not corrupt: %v", err)
	require.ErrorContains(t, err, "version 9")
}

// encodeStateVersion writes tables in the layout of version 1, 2 or 3, as
// earlier releases saved them: nanosecond deltas and a gap flag per point;
// versions 1 and 2 without cluster id, topic ids and framing, version 1
// with each table's maxGap after lastRead.
func encodeStateVersion(t *testing.T, version uint64, tables []storedTable) []byte {
	return encodeStateVersionOf(t, version, tables, nil)
}

// encodeStateVersionOf is encodeStateVersion with the points of the tables
// named in raw taken from there, as times a table of this version would not
// hold.
func encodeStateVersionOf(t *testing.T, version uint64, tables []storedTable, raw map[kafka.TopicPartition][]Sample) []byte {
	t.Helper()
	if version == stateVersionNoSpread || version == stateVersionTwoVarintPoints {
		require.Nil(t, raw, "versions 4 and 5 hold what a table holds")
		return encodeStateVersion5(version, tables)
	}
	b := []byte(stateMagic)
	b = binary.AppendUvarint(b, version)
	if version == stateVersionFramed {
		b = binary.AppendUvarint(b, 0) // no cluster id
	}
	b = binary.AppendUvarint(b, uint64(len(tables)))
	for _, st := range tables {
		var body []byte
		body = binary.AppendUvarint(body, uint64(len(st.tp.Topic)))
		body = append(body, st.tp.Topic...)
		body = binary.AppendVarint(body, int64(st.tp.Partition))
		if version == stateVersionFramed {
			body = binary.AppendUvarint(body, 0) // no topic id
		}
		body = binary.AppendVarint(body, st.table.lastRead)
		if version == stateVersionWithGap {
			body = binary.AppendVarint(body, st.table.maxGap)
		}
		if st.hasStart {
			body = binary.AppendUvarint(body, 1)
			body = binary.AppendVarint(body, st.start)
		} else {
			body = binary.AppendUvarint(body, 0)
		}
		points := st.table.samples()
		if r, ok := raw[st.tp]; ok {
			points = r
		}
		body = binary.AppendUvarint(body, uint64(len(points)))
		var prev Sample
		for _, p := range points {
			body = binary.AppendVarint(body, p.Offset-prev.Offset)
			body = binary.AppendVarint(body, p.At-prev.At)
			if st.table.isGapEnd(p) {
				body = binary.AppendUvarint(body, 1)
			} else {
				body = binary.AppendUvarint(body, 0)
			}
			prev = p
		}
		if version == stateVersionFramed {
			b = binary.AppendUvarint(b, uint64(len(body)))
		}
		b = append(b, body...)
	}
	return b
}

// encodeStateVersion5 is what versions 4 and 5 wrote: this version's
// layout with each point after the first as two varints, its offset and
// time deltas, unsigned; version 4 without each table's widest segment and
// width bound, which close its body.
func encodeStateVersion5(version uint64, tables []storedTable) []byte {
	var frames []byte
	for _, st := range tables {
		body := encodeTable(nil, st)
		t := st.table
		closing := body[len(body)-gapFieldsLen(t)-spreadFieldsLen(t):]
		opening := body[:len(body)-len(closing)-packedPointsLen(t)]
		old := append([]byte(nil), opening...)
		points := t.samples()
		for i := 1; i < len(points); i++ {
			old = binary.AppendUvarint(old, uint64(points[i].Offset-points[i-1].Offset))
			old = binary.AppendUvarint(old, uint64(points[i].At-points[i-1].At)/uint64(timeUnit))
		}
		if version == stateVersionNoSpread {
			closing = closing[:gapFieldsLen(t)]
		}
		body = append(old, closing...)
		frames = binary.AppendUvarint(frames, uint64(len(body)))
		frames = append(frames, body...)
	}
	out := binary.AppendUvarint([]byte(stateMagic), version)
	out = binary.AppendUvarint(out, 0) // no cluster id
	out = binary.AppendUvarint(out, uint64(len(tables)))
	return append(out, frames...)
}

// packedPointsLen is how many bytes the points after the first take in a
// table's body.
func packedPointsLen(t *Table) int {
	if t.n < 2 {
		return 0
	}
	newest := startCursor(t.tail)
	return len(t.packed) + newest.packedLen(t.last)
}

// gapFieldsLen is how many bytes the gap ends take in a table's body.
func gapFieldsLen(t *Table) int {
	n, prev := 0, 0
	for i, p := range t.samples() {
		if t.isGapEnd(p) {
			n += uvarintLen(uint64(i - prev))
			prev = i
		}
	}
	return n + uvarintLen(uint64(len(t.gaps)))
}

// spreadFieldsLen is how many bytes version 5 adds to a table's body.
func spreadFieldsLen(t *Table) int {
	n := uvarintLen(uint64(t.widest))
	if t.widthBoundUntil == 0 {
		return n + 1
	}
	return n + uvarintLen(1+uint64((t.last.At-t.widthBoundUntil)/timeUnit))
}

func TestStateEarlierVersionsRestore(t *testing.T) {
	for _, version := range []uint64{stateVersionWithGap, stateVersionNoIDs, stateVersionFramed, stateVersionNoSpread, stateVersionTwoVarintPoints} {
		in := sampleTables(t)
		t.Run(fmt.Sprintf("version %d", version), func(t *testing.T) {
			// The hand-built blob is exactly what the earlier release wrote:
			// its first table, of "orders", as the bytes spell them.
			old := encodeStateVersion(t, version, in)
			if version < stateVersionFramed {
				require.Equal(t, []byte{'K', 'T', 'L', 'T', byte(version), 2, 6, 'o', 'r', 'd', 'e', 'r', 's', 6}, old[:14])
			}

			// A maxGap saved under another configuration is not what the
			// store applies: the store's own is.
			const storeMaxGap = 2 * time.Minute
			store := NewStore(16, storeMaxGap, nil)
			restored, err := store.RestoreState(old)
			require.NoError(t, err)
			require.Equal(t, Restored{Tables: 2}, restored)
			require.False(t, store.Identified(), "no cluster id to check yet")

			orders := kafka.TopicPartition{Topic: "orders", Partition: 3}
			dots := kafka.TopicPartition{Topic: "ünïcode.topic-with.dots", Partition: 0}
			require.Equal(t, []kafka.TopicPartition{orders, dots}, store.Partitions())
			require.Equal(t, map[kafka.TopicPartition]int64{orders: 40}, store.StartOffsets())
			require.Equal(t, len(in[0].table.samples())+len(in[1].table.samples()), store.Points())

			refs := store.Refs([]kafka.TopicPartition{orders, dots})
			for i, st := range in {
				got := refs[i].table
				require.NotNil(t, got, st.tp)
				require.Equal(t, st.table.samples(), got.samples(), st.tp)
				require.Equal(t, st.table.lastRead, got.lastRead, st.tp)
				require.Equal(t, st.table.gaps, got.gaps, st.tp)
				require.Equal(t, int64(storeMaxGap), got.maxGap, st.tp)
				require.Equal(t, int32(16), got.maxPoints, st.tp)
			}
			// The outage is still a gap, and estimates are those of the saved table.
			newest := in[0].table.samples()[len(in[0].table.samples())-1]
			upper := Sample{Offset: newest.Offset + 100, At: newest.At + int64(10*time.Second)}
			for c := int64(0); c < upper.Offset; c += 25 {
				wantAt, wantOK, wantGap := in[0].table.Estimate(c, upper)
				at, ok, gap := store.Estimate(refs[0], c, upper)
				require.Equal(t, wantOK, ok, "offset %d", c)
				require.Equal(t, wantAt, at, "offset %d", c)
				require.Equal(t, wantGap, gap, "offset %d", c)
			}
			_, _, gap := store.Estimate(refs[0], 550, upper)
			require.True(t, gap, "the outage between offsets 500 and 600 stays a gap")
			// Before version 5 nothing said how closely the saved segments
			// date their records: each to within its width, as when it was
			// saved. Version 5 says what the saved table knew.
			for c := int64(0); c < newest.Offset; c += 25 {
				b, ok := store.Bracket(refs[0], c, upper)
				require.True(t, ok)
				want := b.Hi.At - b.Lo.At
				if version >= stateVersionTwoVarintPoints {
					saved, _ := in[0].table.Bracket(c, upper)
					want = saved.Spread
				}
				require.Equal(t, want, b.Spread, "offset %d", c)
			}

			// Saving again writes this version, which decodes to the same
			// tables, bound by their width up to the newest saved point
			// before version 5.
			saved := store.EncodeState()
			require.Equal(t, byte(stateVersion), saved[len(stateMagic)])
			if version < stateVersionTwoVarintPoints {
				for _, st := range in {
					st.table.widest, st.table.widthBoundUntil = 0, st.table.last.At
				}
			}
			require.Equal(t, encodeState("", in), saved)
		})
	}
}

// A time delta that overflows int64 wraps to a time before the previous
// point: the table is malformed and must not be restored, whatever its
// bytes say; the tables beside it are.
func TestStateDecoderRejectsTimeDeltaOverflow(t *testing.T) {
	firstAt := int64(math.MaxInt64) / timeUnit * timeUnit
	wrappedAt := firstAt + 10*timeUnit // wraps: saved as a delta of 10 units
	wrapped := NewTable(16, 0)
	wrapped.lastRead = wrappedAt
	wrapped.setPoints([]Sample{{Offset: 0, At: firstAt}, {Offset: 1, At: wrappedAt}})
	tp := kafka.TopicPartition{Topic: "wrapped", Partition: 0}
	data := encodeState("", append(sampleTables(t), storedTable{tp: tp, table: wrapped}))

	s := NewStore(16, 0, nil)
	restored, err := s.RestoreState(data)
	require.NoError(t, err)
	require.NotContains(t, s.Partitions(), tp, "the overflowing table is left out")
	require.Len(t, s.Partitions(), 2, "the others are restored")
	require.Len(t, restored.Skipped, 1)
	require.ErrorContains(t, restored.Skipped[0], "table of wrapped/0: point 1 overflows")
}

// One table with an impossible offset is one bad table, not a reason to
// start every partition without history.
func TestOneBadTableDoesNotDiscardTheOthers(t *testing.T) {
	tables := sampleTables(t)
	bad := NewTable(16, 0)
	bad.setPoints([]Sample{{Offset: -5, At: unixSec(1_700_000_000)}})
	bad.lastRead = unixSec(1_700_000_000)
	badTP := kafka.TopicPartition{Topic: "negative", Partition: 1}
	withBad := append(tables, storedTable{tp: badTP, table: bad})
	for name, data := range map[string][]byte{
		"this version": encodeState("", withBad),
		// Saved before tables were framed: the bad table's fields are read
		// through to find the next one.
		"version 2": encodeStateVersion(t, stateVersionNoIDs, []storedTable{withBad[0], withBad[2], withBad[1]}),
	} {
		t.Run(name, func(t *testing.T) {
			s := NewStore(16, 0, nil)
			restored, err := s.RestoreState(data)
			require.NoError(t, err)
			require.ElementsMatch(t, []kafka.TopicPartition{tables[0].tp, tables[1].tp}, s.Partitions())
			require.Equal(t, tableLen(tables[0].table)+tableLen(tables[1].table), s.Points())
			require.Equal(t, 2, restored.Tables)
			require.Len(t, restored.Skipped, 1)
			require.ErrorContains(t, restored.Skipped[0], "negative/1")
		})
	}
}

// State of version 3 kept times to the nanosecond: restored, they are
// rounded up to the tables' resolution, and two points a fraction of it
// apart become the later one.
func TestStateVersion3TimesAreRoundedUp(t *testing.T) {
	base := int64(1_700_000_000) * int64(time.Second)
	tp := kafka.TopicPartition{Topic: "t", Partition: 0}
	points := []Sample{{10, base + 1}, {20, base + 400_000}, {30, base + 2*timeUnit + 7}}
	table := NewTable(16, 0)
	table.lastRead = points[2].At
	data := encodeStateVersionOf(t, stateVersionFramed, []storedTable{{tp: tp, table: table}}, map[kafka.TopicPartition][]Sample{tp: points})
	out, err := decodeAll(data, 16, 0)
	require.NoError(t, err)
	require.Len(t, out, 1)
	require.Equal(t, []Sample{{20, base + timeUnit}, {30, base + 3*timeUnit}}, out[0].table.samples())
	require.Equal(t, base+3*timeUnit, out[0].table.lastRead)
}
