package saramatimes

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"runtime"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/batchguard"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/saramatest"
)

// legacyEntry is one entry of a v1 message set: offset, size and a magic 1
// message with the codec (0: none, 1: gzip), timestamp and value.
func legacyEntry(offset int64, codec byte, ts int64, value []byte) []byte {
	msg := []byte{1, codec}
	msg = binary.BigEndian.AppendUint64(msg, uint64(ts))
	msg = binary.BigEndian.AppendUint32(msg, 0xffffffff) // null key
	msg = binary.BigEndian.AppendUint32(msg, uint32(len(value)))
	msg = append(msg, value...)
	entry := binary.BigEndian.AppendUint64(nil, uint64(offset))
	entry = binary.BigEndian.AppendUint32(entry, uint32(4+len(msg)))
	entry = binary.BigEndian.AppendUint32(entry, crc32.ChecksumIEEE(msg))
	return append(entry, msg...)
}

func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	_, err := w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return out.Bytes()
}

// allocatedBy is what fn allocates, in bytes.
func allocatedBy(fn func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// responseBound is what one record read's response may make the receiver
// allocate, as docs/security.md states it: the response's decompressed
// bytes are bounded in all (batchguard.MaxDecompressedResponse), plus decoding.
const responseBound = batchguard.MaxDecompressedResponse + 16<<20

// TestNestedLegacyWrappersCountAgainstOneBound: an old-format (v1) gzip
// wrapper whose set holds further gzip wrappers, each inflating to 8 MiB
// (under the per-batch bound), would be decompressed level by level, each
// wrapper on its own bound: 24 inner wrappers are 192 MiB from one record
// read of a few kilobytes. Kafka never writes nested compressed wrappers
// (brokers refuse them), so the read refuses them: that partition gets no
// timestamp, the error says why, and what is allocated stays below the
// response's bound.
func TestNestedLegacyWrappersCountAgainstOneBound(t *testing.T) {
	const inner, innerSize = 24, 8 << 20
	ms := time.Now().UnixMilli()
	innerSet := legacyEntry(0, 0, ms, make([]byte, innerSize)) // one plain message of 8 MiB of zeros
	innerWrapper := gzipped(t, innerSet)
	var outerSet []byte
	for i := range inner {
		outerSet = append(outerSet, legacyEntry(int64(i), 1, ms, innerWrapper)...)
	}
	records := legacyEntry(inner-1, 1, ms, gzipped(t, outerSet))
	t.Logf("%d bytes of records inflating to %d MiB", len(records), inner*innerSize>>20)

	requireRefusedWithinTheBound(t, records, inner, "nested")
}

// TestManyBatchesCountAgainstOneBound: a partition whose fetched bytes hold
// many small compressed batches, each inflating to 8 MiB (under the
// per-batch bound; anyone who can produce to the topic can write them),
// would inflate them all at once: 24 batches are 192 MiB from one response.
// The response's decompressed bytes count against one bound: past it, that
// partition gets no timestamp and the error says why.
func TestManyBatchesCountAgainstOneBound(t *testing.T) {
	const batches, batchSize = 24, 8 << 20
	ms := time.Now().UnixMilli()
	var records []byte
	for i := range batches {
		b := bombBatch(t, codecZstd, batchSize, ms)
		b.firstOffset = int64(i)
		records = append(records, b.encode()...)
	}
	t.Logf("%d bytes of records inflating to %d MiB", len(records), batches*batchSize>>20)

	requireRefusedWithinTheBound(t, records, batches, "decompress")
}

// TestCompressedBatchesUnderTheBoundAreRead: what Kafka writes, compressed,
// is read as before the check: an old-format gzip wrapper of plain
// messages, and several compressed v2 batches that inflate to less than
// the response's bound in all.
func TestCompressedBatchesUnderTheBoundAreRead(t *testing.T) {
	now := time.Now().Truncate(time.Millisecond)
	ms := now.UnixMilli()
	var inner []byte
	for i := range 3 {
		inner = append(inner, legacyEntry(int64(i), 0, ms, []byte("x"))...)
	}
	var batches []byte
	for i := range 3 {
		b := bombBatch(t, codecZstd, 4<<20, ms)
		b.firstOffset = int64(i)
		batches = append(batches, b.encode()...)
	}
	r := newScriptedRead(t)
	for name, records := range map[string][]byte{
		"v1 gzip wrapper":    legacyEntry(2, 1, ms, gzipped(t, inner)),
		"v2 batches, 12 MiB": batches,
	} {
		answers, err := r.read(t, 0, fetchResponseV11(records, 3, 3, -1, 0))
		require.NoError(t, err, name)
		require.Equal(t, kafka.RecordTimestamp{Offset: 0, Timestamp: now.UnixNano()}, answers[saramatest.RecordAt{TopicPartition: kafka.TopicPartition{Topic: "t"}}], name)
	}
}

// requireRefusedWithinTheBound reads records (count of them, partition t/0)
// from a scripted Fetch and asserts that the read allocated less than the
// response's bound and gave t/0 no timestamp, with an error naming it and
// saying why.
func requireRefusedWithinTheBound(t *testing.T, records []byte, count int64, why string) {
	t.Helper()
	r := newScriptedRead(t)
	var answers map[saramatest.RecordAt]kafka.RecordTimestamp
	var err error
	allocated := allocatedBy(func() {
		answers, err = r.read(t, 0, fetchResponseV11(records, count, count, -1, 0))
	})
	t.Logf("record read allocated %d MiB", allocated>>20)
	require.Less(t, allocated, uint64(responseBound), "one bound for the whole response")
	require.Equal(t, kafka.RecordTimestamp{Offset: 0, Found: kafka.RecordUntimed}, answers[saramatest.RecordAt{TopicPartition: kafka.TopicPartition{Topic: "t"}}])
	require.ErrorContains(t, err, "t/0")
	require.ErrorContains(t, err, why)
}
