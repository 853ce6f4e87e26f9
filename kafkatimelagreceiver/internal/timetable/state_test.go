package timetable

import (
	"encoding/binary"
	"errors"
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

func TestStateRoundTrip(t *testing.T) {
	in := sampleTables(t)
	data := encodeState(in)
	out, err := decodeState(data, 16, sampleMaxGap)
	require.NoError(t, err)
	require.Len(t, out, 2)
	byTP := map[kafka.TopicPartition]storedTable{}
	for _, st := range out {
		byTP[st.tp] = st
	}
	for _, want := range in {
		got := byTP[want.tp]
		require.Equal(t, want.table.points, got.table.points, want.tp)
		require.Equal(t, want.table.lastRead, got.table.lastRead)
		require.Equal(t, len(want.table.gaps), len(got.table.gaps))
		for at := range want.table.gaps {
			require.Contains(t, got.table.gaps, at)
		}
		require.Equal(t, want.hasStart, got.hasStart)
		require.Equal(t, want.start, got.start)
	}
	// Encoding is deterministic.
	require.Equal(t, data, encodeState(out))
}

func TestStateDecodeThinsToCurrentBound(t *testing.T) {
	big := NewTable(1000, 0)
	base := time.Unix(1_700_000_000, 0)
	for i := range 600 {
		at := base.Add(time.Duration(i) * time.Second)
		big.Add(int64(i*10), at, at)
	}
	out, err := decodeState(encodeState([]storedTable{{tp: kafka.TopicPartition{Topic: "t", Partition: 0}, table: big}}), 64, 0)
	require.NoError(t, err)
	require.LessOrEqual(t, tableLen(out[0].table), 64)
	require.Equal(t, big.points[0], out[0].table.points[0], "the oldest point survives thinning")
	require.Equal(t, big.points[599], out[0].table.points[tableLen(out[0].table)-1], "so does the newest")
}

func TestStateDecodeRejectsBadInput(t *testing.T) {
	good := encodeState(sampleTables(t))
	// Version 2 is now this package's own; 3 is the next one's.
	otherVersion := append([]byte(stateMagic), stateVersion+1, 0)
	cases := map[string][]byte{
		"empty":               nil,
		"bad magic":           []byte("NOPE\x01\x00"),
		"other version":       otherVersion,
		"truncated":           good[:len(good)/2],
		"trailing bytes":      append(append([]byte(nil), good...), 0),
		"huge table count":    append([]byte(stateMagic), 1, 0xff, 0xff, 0xff, 0xff, 0x0f),
		"huge table count v2": append([]byte(stateMagic), 2, 0xff, 0xff, 0xff, 0xff, 0x0f),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := decodeState(data, 16, 0)
			require.Error(t, err)
		})
	}
	// Every truncation of a valid state fails cleanly, never panics.
	for n := range len(good) {
		_, err := decodeState(good[:n], 16, 0)
		require.Error(t, err, "prefix of %d bytes", n)
	}
	// The same holds for the previous release's layout.
	v1 := encodeStateV1(t, sampleTables(t))
	for n := range len(v1) {
		_, err := decodeState(v1[:n], 16, 0)
		require.Error(t, err, "prefix of %d bytes of version 1", n)
	}
}

func TestStateErrorsTellCorruptFromOtherVersion(t *testing.T) {
	_, err := decodeState([]byte("KTLT\x01\x05garbage"), 16, 0)
	require.ErrorIs(t, err, ErrStateCorrupt)
	_, err = decodeState([]byte("NOPE"), 16, 0)
	require.ErrorIs(t, err, ErrStateCorrupt)

	_, err = decodeState(append([]byte(stateMagic), 9, 0), 16, 0)
	require.Error(t, err)
	require.False(t, errors.Is(err, ErrStateCorrupt), "another version's state is not corrupt: %v", err)
	require.ErrorContains(t, err, "version 9")
}

// encodeStateV1 writes tables in the layout of version 1, which stored each
// table's maxGap after lastRead, as the previous release saved them.
func encodeStateV1(t *testing.T, tables []storedTable) []byte {
	t.Helper()
	b := []byte(stateMagic)
	b = binary.AppendUvarint(b, 1)
	b = binary.AppendUvarint(b, uint64(len(tables)))
	for _, st := range tables {
		b = binary.AppendUvarint(b, uint64(len(st.tp.Topic)))
		b = append(b, st.tp.Topic...)
		b = binary.AppendVarint(b, int64(st.tp.Partition))
		b = binary.AppendVarint(b, st.table.lastRead)
		b = binary.AppendVarint(b, st.table.maxGap)
		if st.hasStart {
			b = binary.AppendUvarint(b, 1)
			b = binary.AppendVarint(b, st.start)
		} else {
			b = binary.AppendUvarint(b, 0)
		}
		b = binary.AppendUvarint(b, uint64(len(st.table.points)))
		var prev Sample
		for _, p := range st.table.points {
			b = binary.AppendVarint(b, p.Offset-prev.Offset)
			b = binary.AppendVarint(b, p.At-prev.At)
			if st.table.isGapEnd(p) {
				b = binary.AppendUvarint(b, 1)
			} else {
				b = binary.AppendUvarint(b, 0)
			}
			prev = p
		}
	}
	return b
}

func TestStateVersion1Restores(t *testing.T) {
	in := sampleTables(t)
	// The hand-built blob is exactly what the previous release wrote: its
	// first table, of "orders", as the bytes spell them.
	v1 := encodeStateV1(t, in)
	require.Equal(t, []byte("KTLT\x01\x02\x06orders\x06"), v1[:14])

	// A maxGap saved under another configuration is not what the store
	// applies: the store's own is.
	const storeMaxGap = 2 * time.Minute
	store := NewStore(16, storeMaxGap)
	tables, err := store.RestoreState(v1)
	require.NoError(t, err)
	require.Equal(t, 2, tables)

	orders := kafka.TopicPartition{Topic: "orders", Partition: 3}
	dots := kafka.TopicPartition{Topic: "ünïcode.topic-with.dots", Partition: 0}
	require.Equal(t, []kafka.TopicPartition{orders, dots}, store.Partitions())
	require.Equal(t, map[kafka.TopicPartition]int64{orders: 40}, store.StartOffsets())
	require.Equal(t, len(in[0].table.points)+len(in[1].table.points), store.Points())

	refs := store.Refs([]kafka.TopicPartition{orders, dots})
	for i, st := range in {
		got := refs[i].table
		require.NotNil(t, got, st.tp)
		require.Equal(t, st.table.points, got.points, st.tp)
		require.Equal(t, st.table.lastRead, got.lastRead, st.tp)
		require.Equal(t, st.table.gaps, got.gaps, st.tp)
		require.Equal(t, int64(storeMaxGap), got.maxGap, st.tp)
		require.Equal(t, 16, got.maxPoints, st.tp)
	}
	// The outage is still a gap, and estimates are those of the saved table.
	newest := in[0].table.points[len(in[0].table.points)-1]
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

	// Saving again writes version 2, which decodes to the same tables.
	v2 := store.EncodeState()
	require.Equal(t, byte(stateVersion), v2[len(stateMagic)])
	require.Equal(t, encodeState(in), v2)
	require.Less(t, len(v2), len(v1), "version 2 drops a field per table")
}
