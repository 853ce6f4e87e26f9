package timetable

import (
	"bytes"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// The fuzz targets check invariants rather than values: whatever sequence of
// reads the sampler and scraper feed a table, and whatever bytes a storage
// extension hands back, nothing panics and no table is malformed. Seed
// corpora live in testdata/fuzz/<target>/; `go test` runs them as tests, and
// `go test -run '^$' -fuzz <target> ./kafkatimelagreceiver/internal/timetable/`
// explores.

// fuzzReader hands out the fuzzer's bytes as small numbers, and zeros once
// they run out, so that every input decodes to some sequence of operations.
type fuzzReader struct{ data []byte }

func (r *fuzzReader) more() bool { return len(r.data) > 0 }

func (r *fuzzReader) byte() byte {
	if len(r.data) == 0 {
		return 0
	}
	b := r.data[0]
	r.data = r.data[1:]
	return b
}

func (r *fuzzReader) uint16() uint16 { return uint16(r.byte())<<8 | uint16(r.byte()) }

// fuzzTableCheck fails when the table breaks an invariant of offsetTable.
func fuzzTableCheck(t *testing.T, table *Table) {
	t.Helper()
	if tableLen(table) > int(table.maxPoints) {
		t.Fatalf("%d points over the bound %d", tableLen(table), int(table.maxPoints))
	}
	points := table.samples()
	if len(points) != table.len() {
		t.Fatalf("%d points decoded from a table of %d", len(points), table.len())
	}
	ats := make(map[int64]bool, len(points))
	for i, p := range points {
		ats[p.At] = true
		if i == 0 {
			continue
		}
		prev := points[i-1]
		if p.At <= prev.At || p.Offset < prev.Offset {
			t.Fatalf("points %d %+v and %d %+v are not strictly increasing in time and non-decreasing in offset", i-1, prev, i, p)
		}
	}
	for at := range table.gaps {
		if !ats[at] {
			t.Fatalf("gap end at %d is not a point of the table %+v", at, table.samples())
		}
	}
	if newest, ok := newestPoint(table); ok && table.lastRead < newest.At {
		t.Fatalf("lastRead %d is older than the newest point %+v", table.lastRead, newest)
	}
	fuzzCheckRate(t, table)
}

// fuzzCheckAppendTime checks one estimate: it exists only between the
// oldest point and the upper bracket (never extrapolated), lies within the
// times of its brackets, and never goes down as the offset goes up.
func fuzzCheckAppendTime(t *testing.T, table *Table, c int64, upper Sample) {
	t.Helper()
	at, ok, gap := table.Estimate(c, upper)
	if gap && !ok {
		t.Fatalf("offset %d has no estimate but is said to be in a gap", c)
	}
	if table.suspected {
		if ok {
			t.Fatalf("estimate %d for offset %d while a reset is suspected", at, c)
		}
		return
	}
	oldest, has := oldestPoint(table)
	if !has {
		if ok {
			t.Fatalf("estimate %d for offset %d from an empty table", at, c)
		}
		return
	}
	newest, _ := newestPoint(table)
	if c < oldest.Offset {
		if ok {
			t.Fatalf("offset %d below the oldest point %+v was estimated at %d: extrapolation", c, oldest, at)
		}
		return
	}
	if c >= newest.Offset && (upper.Offset <= c || upper.At <= newest.At) {
		if ok {
			t.Fatalf("offset %d at or above the newest point %+v with upper %+v was estimated at %d: extrapolation", c, newest, upper, at)
		}
		return
	}
	if !ok {
		t.Fatalf("offset %d is bracketed (oldest %+v, newest %+v, upper %+v) but has no estimate", c, oldest, newest, upper)
	}
	hi := newest.At
	if c >= newest.Offset {
		hi = upper.At
	}
	if at < oldest.At || at > hi {
		t.Fatalf("estimate %d for offset %d is outside [%d, %d]", at, c, oldest.At, hi)
	}
	if c > oldest.Offset {
		if before, ok := appendTime(table, c-1, upper); ok && before > at {
			t.Fatalf("estimates go down: offset %d at %d, offset %d at %d", c-1, before, c, at)
		}
	}
}

// FuzzOffsetTable drives one table with reads as the sampler and scraper
// make them: mostly growing offsets at growing times, with reads that finish
// out of order, flat runs, truncations, long gaps and estimates in between.
// At the end the table must survive the stored-state round trip.
func FuzzOffsetTable(f *testing.F) {
	f.Add(uint8(16), uint16(30), uint64(1_700_000_000_000_000_000), uint64(0), []byte{
		0, 10, 0, 10, 1, 0, 10, 0, 10, 1, 0, 0, 0, 10, 1, 3, 5, 0, 3, 200, 200,
	})
	f.Add(uint8(2), uint16(0), uint64(0), uint64(1<<40), []byte{0, 1, 1, 1, 0, 0, 1, 1, 1, 0, 2, 0, 0, 3, 0, 3})
	f.Fuzz(fuzzOffsetTable)
}

func fuzzOffsetTable(t *testing.T, maxPoints uint8, maxGapSeconds uint16, baseTime, baseOffset uint64, ops []byte) {
	{
		maxGap := time.Duration(maxGapSeconds) * time.Second
		table := NewTable(int(maxPoints), maxGap)
		// Realistic domains, wide: any time up to year 2116, any offset up
		// to 2^62.
		now := int64(baseTime % (1 << 62))
		offset := int64(baseOffset % (1 << 62))
		r := &fuzzReader{data: ops}
		for r.more() {
			switch op := r.byte(); op % 4 {
			case 0, 1: // a read: offset moves by -16..239, time by 0..65 s
				// The high bits of op scale both steps by up to 2^42: bursts
				// of millions of records, idle weeks or months between reads.
				scale := uint((op >> 4) % 8 * 6)
				offset += (int64(r.byte()) - 16) << scale
				if offset < 0 {
					offset = 0
				}
				offset = min(offset, 1<<62)
				now += int64(r.uint16()) * int64(time.Millisecond) << (scale / 2)
				now = min(now, 1<<62)
				// The request went out 0..255 ms before the answer: reads
				// overlap when that exceeds the time between them.
				sent := now - int64(r.byte())*int64(time.Millisecond)
				before := append([]Sample(nil), table.samples()...)
				res := table.Add(offset, time.Unix(0, sent), time.Unix(0, now))
				newest, _ := newestPoint(table)
				switch res {
				case Ignored, Suspected:
					if len(before) != tableLen(table) || (len(before) > 0 && before[len(before)-1] != newest) {
						t.Fatalf("a read that was %v changed the table: %+v -> %+v", res, before, table.samples())
					}
					if res == Suspected && !table.suspected {
						t.Fatalf("a suspected reset is not pending")
					}
				case Reset:
					// The first read below the old log's end, and this one.
					if n := tableLen(table); n < 1 || n > 2 || newest != (Sample{offset, quantize(now)}) {
						t.Fatalf("a reset left %+v, want at most one point before {%d %d}", table.samples(), offset, now)
					}
				case Appended, Merged:
					if newest.At != quantize(now) || newest.Offset != offset {
						t.Fatalf("read {%d %d} gave %v but the newest point is %+v", offset, now, res, newest)
					}
					if res == Appended && len(before) > 0 && table.samples()[0] != before[0] {
						t.Fatalf("an append dropped the oldest point %+v", before[0])
					}
				}
			case 2: // a read that was answered before the previous one
				back := int64(r.uint16()) * int64(time.Millisecond)
				delta := int64(r.byte()) - 128
				at := now - back
				table.Add(max(offset+delta, 0), time.Unix(0, at-int64(time.Millisecond)), time.Unix(0, at))
			case 3: // an estimate, with the scrape's read as the upper bracket
				c := offset - int64(r.uint16()) + 128
				upper := Sample{Offset: offset + int64(r.byte()), At: now + int64(r.byte())*int64(time.Second)}
				fuzzCheckAppendTime(t, table, c, upper)
			}
			fuzzTableCheck(t, table)
		}

		// What the sampler built, persistence must give back as it was.
		if tableLen(table) == 0 {
			return
		}
		tp := kafka.TopicPartition{Topic: "fuzz", Partition: 0}
		data := encodeState("", []storedTable{{tp: tp, table: table, start: 3, hasStart: true}})
		state, err := decodeState(data, int(table.maxPoints), maxGap, math.MinInt64, math.MaxInt64)
		if err == nil && len(state.skipped) > 0 {
			err = state.skipped[0]
		}
		if err != nil {
			t.Fatalf("a table built by Add does not decode: %v (%+v, lastRead %d)", err, table.samples(), table.lastRead)
		}
		decoded := state.tables
		if len(decoded) != 1 || decoded[0].tp != tp || !decoded[0].hasStart || decoded[0].start != 3 {
			t.Fatalf("decoded %+v", decoded)
		}
		got := decoded[0].table
		if !equalSamples(got.samples(), table.samples()) || got.lastRead != table.lastRead || got.maxGap != table.maxGap || len(got.gaps) != len(table.gaps) {
			t.Fatalf("round trip changed the table:\n%+v lastRead %d gaps %v\n%+v lastRead %d gaps %v",
				table.samples(), table.lastRead, table.gaps, got.samples(), got.lastRead, got.gaps)
		}
		for at := range table.gaps {
			if !got.isGapEnd(Sample{At: at}) {
				t.Fatalf("gap end %d lost in the round trip", at)
			}
		}

		// A store saves what its tables hold, and restores it.
		store := NewStore(int(table.maxPoints), maxGap, nil)
		store.tables[tp] = table
		store.sortTracked()
		store.starts[tp] = 3
		if saved := store.EncodeState(); !bytes.Equal(saved, data) {
			t.Fatalf("the store saved %q, want %q", saved, data)
		}
		restored := NewStore(int(table.maxPoints), maxGap, nil)
		if r, err := restored.RestoreState(data); err != nil || r.Tables != 1 || restored.Points() != tableLen(table) {
			t.Fatalf("restored %d tables with %d points (%v), want 1 with %d", r.Tables, restored.Points(), err, tableLen(table))
		}
	}
}

func equalSamples(a, b []Sample) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzDecodeState feeds stored state that may be corrupt, truncated or
// hostile, as a storage extension could return after a crash or an upgrade,
// restored at a time the fuzzer picks too. decodeState must reject it, or
// return well-formed tables within the bounds and not read after that time
// (skipping the others); RestoreState must install exactly those; and what
// was returned must encode and decode to itself.
func FuzzDecodeState(f *testing.F) {
	f.Add([]byte(stateMagic), 16)
	f.Add([]byte(stateMagic+"\x01\x00"), 16)
	f.Add([]byte(stateMagic+"\x01\x01\x01t\x00\x02\x00\x00\x01\x00\x02\x00"), 2)
	// The same table in version 2, which has no maxGap field.
	f.Add([]byte(stateMagic+"\x02\x00"), 16)
	f.Add([]byte(stateMagic+"\x02\x01\x01t\x00\x02\x00\x01\x00\x02\x00"), 2)
	// Version 3: a cluster id, framed tables with and without a topic id,
	// one of them in the future, one overflowing, one with a bad offset.
	f.Add([]byte(stateMagic+"\x03\x00\x00"), 16)
	for _, seed := range fuzzStateSeeds() {
		f.Add(seed, 1<<40)
	}
	f.Fuzz(func(t *testing.T, data []byte, knobs int) {
		// The receiver's own bound is at least 2 (Validate) and the
		// allocation behind it must stay sane; the high bits of the same
		// knob say when the state is restored.
		maxPoints := 2 + abs32(knobs)%2048
		notAfter := int64(uint64(knobs) >> 1)
		notBefore := kafka.MinRecordTime.UnixNano()
		decoded, err := decodeState(data, maxPoints, 0, notBefore, notAfter)
		// Restoring is decoding then installing what decoded.
		now := time.Unix(0, notAfter).Add(-restoreClockTolerance)
		store := NewStore(maxPoints, 0, func() time.Time { return now })
		restored, restoreErr := store.RestoreState(data)
		if (restoreErr == nil) != (err == nil) || restored.Tables != len(decoded.tables) || len(restored.Skipped) != len(decoded.skipped) {
			t.Fatalf("RestoreState gave %d tables, %d skipped (%v); decodeState %d, %d (%v)",
				restored.Tables, len(restored.Skipped), restoreErr, len(decoded.tables), len(decoded.skipped), err)
		}
		if err != nil {
			if decoded.tables != nil || decoded.skipped != nil {
				t.Fatalf("tables returned with error %v", err)
			}
			if len(store.Partitions()) != 0 {
				t.Fatalf("a failed restore installed %v", store.Partitions())
			}
			if !errors.Is(err, ErrStateCorrupt) && !bytes.HasPrefix(data, []byte(stateMagic)) {
				t.Fatalf("unexpected kind of error: %v", err)
			}
			return
		}
		if len(decoded.clusterID) > maxClusterIDLen {
			t.Fatalf("cluster id of %d bytes decoded", len(decoded.clusterID))
		}
		if len(store.Partitions()) != len(decoded.tables) {
			t.Fatalf("restored %v, decoded %d tables", store.Partitions(), len(decoded.tables))
		}
		seen := map[kafka.TopicPartition]bool{}
		for _, st := range decoded.tables {
			fuzzCheckStoredTable(t, st, maxPoints, notBefore, notAfter)
			if seen[st.tp] {
				t.Fatalf("partition %+v decoded twice", st.tp)
			}
			seen[st.tp] = true
		}
		again, err := decodeState(encodeState(decoded.clusterID, decoded.tables), maxPoints, 0, notBefore, notAfter)
		if err != nil || len(again.skipped) > 0 {
			t.Fatalf("decoded state does not decode after encoding: %v %v", err, again.skipped)
		}
		if again.clusterID != decoded.clusterID ||
			!bytes.Equal(encodeState(again.clusterID, again.tables), encodeState(decoded.clusterID, decoded.tables)) {
			t.Fatal("decode(encode(state)) differs from state")
		}
	})
}

// fuzzCheckStoredTable fails when a decoded table breaks an invariant.
func fuzzCheckStoredTable(t *testing.T, st storedTable, maxPoints int, notBefore, notAfter int64) {
	t.Helper()
	if st.table == nil {
		t.Fatalf("nil table for %+v", st.tp)
	}
	if st.tp.Topic == "" || len(st.tp.Topic) > maxTopicLen || st.tp.Partition < 0 {
		t.Fatalf("invalid partition %+v decoded", st.tp)
	}
	if int(st.table.maxPoints) != maxPoints {
		t.Fatalf("table bound %d, want %d", int(st.table.maxPoints), maxPoints)
	}
	if st.table.lastRead > notAfter {
		t.Fatalf("table read at %d, after %d, was restored", st.table.lastRead, notAfter)
	}
	if points := st.table.samples(); len(points) > 0 && points[0].At < notBefore {
		t.Fatalf("table with a point at %d, before %d, was restored", points[0].At, notBefore)
	}
	if st.hasStart && st.start < 0 {
		t.Fatalf("negative log start %d decoded", st.start)
	}
	for _, p := range st.table.samples() {
		if p.Offset < 0 {
			t.Fatalf("negative offset decoded: %+v", p)
		}
	}
	fuzzTableCheck(t, st.table)
	// A restored table must take new reads like any other.
	if newest, ok := newestPoint(st.table); ok {
		c := st.table.samples()[0].Offset
		fuzzCheckAppendTime(t, st.table, c, Sample{Offset: newest.Offset + 1, At: newest.At + 1})
	}
}

// fuzzStateSeeds are version 3 states as EncodeState writes them, good and
// bad tables side by side.
func fuzzStateSeeds() [][]byte {
	const base = int64(1_700_000_000) * int64(time.Second)
	table := func(points ...Sample) *Table {
		t := NewTable(16, 0)
		t.setPoints(points)
		if len(points) > 0 {
			t.lastRead = points[len(points)-1].At
		}
		return t
	}
	good := table(Sample{10, base}, Sample{20, base + int64(time.Second)}, Sample{40, base + 3*int64(time.Second)})
	good.markGapEnd(base + 3*int64(time.Second))
	id := kafka.TopicID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	future := table(Sample{5, 1 << 62})
	overflow := table(Sample{0, math.MaxInt64 - 10}, Sample{1, math.MinInt64 + 9})
	negative := table(Sample{-5, base})
	return [][]byte{
		encodeState("MkU3OEVBNTcwNTJENDM2Qk", []storedTable{
			{tp: kafka.TopicPartition{Topic: "orders", Partition: 3}, topicID: id, table: good, start: 7, hasStart: true},
			{tp: kafka.TopicPartition{Topic: "orders", Partition: 4}, topicID: id, table: table(Sample{3, base})},
		}),
		encodeState("", []storedTable{
			{tp: kafka.TopicPartition{Topic: "a", Partition: 0}, table: good},
			{tp: kafka.TopicPartition{Topic: "b", Partition: 0}, table: future},
			{tp: kafka.TopicPartition{Topic: "c", Partition: 0}, table: overflow},
			{tp: kafka.TopicPartition{Topic: "d", Partition: 0}, table: negative},
		}),
	}
}

func abs32(n int) int {
	n %= 1 << 31
	if n < 0 {
		return -n
	}
	return n
}
