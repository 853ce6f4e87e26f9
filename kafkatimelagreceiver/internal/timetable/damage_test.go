package timetable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// damageBase is when the small states of these tests were sampled.
var damageBase = time.Date(2026, 11, 3, 7, 0, 0, 0, time.UTC)

// damageClock is when they are restored: ten minutes later.
func damageClock() time.Time { return damageBase.Add(10 * time.Minute) }

// smallState samples three partitions for a few points each (one busy,
// one with an outage and a log start, one standing still with a topic
// id) and saves them as EncodeState does.
func smallState(t *testing.T) (*Store, []byte) {
	t.Helper()
	busy := kafka.TopicPartition{Topic: "orders", Partition: 0}
	outage := kafka.TopicPartition{Topic: "orders", Partition: 1}
	still := kafka.TopicPartition{Topic: "payments", Partition: 2}
	s := NewStore(16, 30*time.Second, nil)
	s.Track(map[kafka.TopicPartition]struct{}{busy: {}, outage: {}, still: {}}, damageBase, 0)
	for i := range 6 {
		at := damageBase.Add(time.Duration(i) * 1300 * time.Millisecond)
		offsets := map[kafka.TopicPartition]int64{busy: int64(1000 + 97*i), still: 40}
		if i != 3 && i != 4 {
			offsets[outage] = int64(10 * i)
		}
		if i == 5 {
			at = at.Add(2 * time.Minute) // outage's gap, and the still run's length
		}
		s.Record(kafka.OffsetRead{Offsets: offsets, Sent: at, Received: at})
	}
	s.RecordStart(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{outage: 3}})
	s.Identify(kafka.Identity{ClusterID: "MkU3OEVBNTcwNTJENDM2Qk", Topics: map[string]kafka.TopicID{"payments": {7, 1, 2, 3}}})
	return s, s.EncodeState()
}

// savedTables is what each table of a store saves, by partition: the
// bytes of its frame's body hold everything a restore installs of it.
func savedTables(s *Store) map[kafka.TopicPartition][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[kafka.TopicPartition][]byte{}
	for tp, t := range s.tables {
		if t.n == 0 {
			continue
		}
		start, hasStart := s.starts[tp]
		out[tp] = encodeTable(nil, storedTable{tp: tp, topicID: s.topicIDs[tp.Topic], table: t, start: start, hasStart: hasStart})
	}
	return out
}

// frameSpans are where each table's frame of a state with checksums
// begins, where its body begins, and where its checksum begins and ends.
type frameSpan struct{ start, body, sum, end int }

func frameSpans(t *testing.T, data []byte, clusterID string, tables int) []frameSpan {
	t.Helper()
	pos := len(appendStateHeader(clusterID, tables, 0, nil))
	var spans []frameSpan
	for range tables {
		size, n := binary.Uvarint(data[pos:])
		span := frameSpan{start: pos, body: pos + n, sum: pos + n + int(size)}
		span.end = span.sum + 4
		spans = append(spans, span)
		pos = span.end
	}
	require.Equal(t, len(data), pos)
	return spans
}

// TestEveryBitFlipRestoresTheSavedTablesOrNone flips, one at a time, every
// bit of a small saved state and restores it: each table is restored
// exactly as saved, or not at all and with a reason given; a flip in the
// header refuses the whole state, one in a table's frame (its length, body
// or checksum) loses that table alone. No flip restores a table that dates
// a record otherwise.
func TestEveryBitFlipRestoresTheSavedTablesOrNone(t *testing.T) {
	saved, data := smallState(t)
	want := savedTables(saved)
	require.Len(t, want, 3)
	order := saved.Partitions()
	spans := frameSpans(t, data, "MkU3OEVBNTcwNTJENDM2Qk", len(order))
	t.Logf("state of %d bytes, %d bits; frames at %+v", len(data), 8*len(data), spans)

	outcomes := map[string]int{}
	for bit := range 8 * len(data) {
		damaged := slices.Clone(data)
		damaged[bit/8] ^= 1 << (bit % 8)
		s := NewStore(16, 30*time.Second, damageClock)
		restored, err := s.RestoreState(damaged)
		got := savedTables(s)
		for tp, b := range got {
			require.Contains(t, want, tp, "bit %d restored a partition never saved", bit)
			require.True(t, bytes.Equal(want[tp], b), "bit %d restored %s/%d otherwise than saved", bit, tp.Topic, tp.Partition)
		}
		if len(got) < len(want) {
			require.True(t, err != nil || len(restored.Skipped) == len(want)-len(got),
				"bit %d left out %d tables with %d reasons (%v)", bit, len(want)-len(got), len(restored.Skipped), err)
		}
		if len(got) > 0 {
			require.Equal(t, "MkU3OEVBNTcwNTJENDM2Qk", s.clusterID, "bit %d", bit)
		}

		byte_ := bit / 8
		frame := slices.IndexFunc(spans, func(f frameSpan) bool { return f.start <= byte_ && byte_ < f.end })
		switch {
		case frame < 0:
			require.Error(t, err, "bit %d of the header", bit)
			require.Empty(t, got, "bit %d of the header", bit)
			outcomes["header: state refused"]++
		default:
			require.NoError(t, err, "bit %d", bit)
			require.Len(t, got, len(want)-1, "bit %d, in table %d's frame", bit, frame)
			require.NotContains(t, got, order[frame], "bit %d", bit)
			require.Len(t, restored.Skipped, 1)
			require.ErrorIs(t, restored.Skipped[0], ErrDamaged, "bit %d", bit)
			part := "body"
			switch {
			case byte_ < spans[frame].body:
				part = "length"
			case byte_ >= spans[frame].sum:
				part = "checksum"
			}
			outcomes[part+": that table left out"]++
		}
	}
	t.Logf("outcomes: %v", outcomes)
}

// TestFlippedBitGivesNoOtherTimeLag: a group 1.3 s behind on a partition
// whose table was saved; no single flipped bit of the saved state makes
// the restored table date the group's record otherwise. The table is
// restored as saved, or left out with a reason.
func TestFlippedBitGivesNoOtherTimeLag(t *testing.T) {
	tp := kafka.TopicPartition{Topic: "orders", Partition: 0}
	saved := NewStore(16, 30*time.Second, nil)
	saved.Track(map[kafka.TopicPartition]struct{}{tp: {}}, damageBase, 0)
	for i := range 5 {
		at := damageBase.Add(time.Duration(i) * time.Second)
		saved.Record(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{tp: int64(5000 + 100*i)}, Sent: at, Received: at})
	}
	data := saved.EncodeState()
	scrape := damageBase.Add(4*time.Second + 300*time.Millisecond)
	upper := Sample{Offset: 5430, At: scrape.UnixNano()}
	const committed = 5300 // the first record after the point before the newest
	timeLag := func(s *Store) (float64, bool) {
		at, ok, _ := s.Estimate(s.Refs([]kafka.TopicPartition{tp})[0], committed, upper)
		return float64(upper.At-at) / 1e9, ok
	}
	truth, ok := timeLag(saved)
	require.True(t, ok)
	require.InDelta(t, 1.3, truth, 0.01)

	var (
		wrong  []string
		widest float64
	)
	for bit := range 8 * len(data) {
		damaged := slices.Clone(data)
		damaged[bit/8] ^= 1 << (bit % 8)
		s := NewStore(16, 30*time.Second, damageClock)
		restored, err := s.RestoreState(damaged)
		if !slices.Contains(s.Partitions(), tp) {
			if err == nil && len(restored.Skipped) == 0 {
				wrong = append(wrong, fmt.Sprintf("bit %d: table left out without a reason", bit))
			}
			continue
		}
		if got, ok := timeLag(s); !ok || got != truth {
			wrong = append(wrong, fmt.Sprintf("bit %d: time lag %.2f s", bit, got))
			if ok {
				widest = max(widest, got)
			}
		}
	}
	if len(wrong) > 0 {
		t.Fatalf("%d of %d flipped bits restore the table otherwise, up to a time lag of %.0f s where the truth is %.2f s; the first: %q",
			len(wrong), 8*len(data), widest, truth, wrong[:min(len(wrong), 5)])
	}
}

// A state that holds a point from before Kafka existed comes from a clock
// that was wrong: the table is left out like one read in the future, and
// the others are restored.
func TestRestoredPointsBeforeAnyKafkaRecordAreRefused(t *testing.T) {
	old := kafka.TopicPartition{Topic: "from-1912", Partition: 0}
	today := kafka.TopicPartition{Topic: "today", Partition: 0}
	saved := NewStore(16, 0, nil)
	saved.Track(map[kafka.TopicPartition]struct{}{old: {}, today: {}}, damageBase, 0)
	at1912 := time.Date(1912, 4, 15, 0, 0, 0, 0, time.UTC)
	saved.Record(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{old: 10}, Sent: at1912, Received: at1912})
	for _, at := range []time.Time{damageBase, damageBase.Add(time.Second)} {
		saved.Record(kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{old: 20, today: 10}, Sent: at, Received: at})
	}
	s := NewStore(16, 0, damageClock)
	restored, err := s.RestoreState(saved.EncodeState())
	require.NoError(t, err)
	require.Equal(t, []kafka.TopicPartition{today}, s.Partitions())
	require.Len(t, restored.Skipped, 1)
	require.ErrorContains(t, restored.Skipped[0], "from-1912/0: its oldest point is at 1912-04-15T00:00:00Z, before any Kafka record")
	require.False(t, errors.Is(restored.Skipped[0], ErrDamaged), "saved as it was: not damaged")
}
