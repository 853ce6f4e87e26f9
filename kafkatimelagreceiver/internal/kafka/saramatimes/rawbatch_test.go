package saramatimes

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record batch attributes (Kafka's v2 record format).
const (
	codecGzip         int16 = 1
	codecZstd         int16 = 4
	attrLogAppendTime int16 = 0x08
	attrTransactional int16 = 0x10
	attrControl       int16 = 0x20
)

// rawBatch is one v2 record batch as it travels on the wire, written by hand
// so that tests can send what no well-behaved producer would.
type rawBatch struct {
	firstOffset     int64
	attributes      int16
	lastOffsetDelta int32
	firstTimestamp  int64 // milliseconds
	maxTimestamp    int64
	producerID      int64
	numRecords      int32
	records         []byte // encoded (and compressed) records
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encode returns the batch with its length and CRC filled in.
func (b rawBatch) encode() []byte {
	kb := kmsg.RecordBatch{
		FirstOffset:          b.firstOffset,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           b.attributes,
		LastOffsetDelta:      b.lastOffsetDelta,
		FirstTimestamp:       b.firstTimestamp,
		MaxTimestamp:         b.maxTimestamp,
		ProducerID:           b.producerID,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           b.numRecords,
		Records:              b.records,
	}
	if b.producerID >= 0 {
		kb.ProducerEpoch = 0
		kb.FirstSequence = 0
	}
	raw := kb.AppendTo(nil)
	fixBatchHeader(raw)
	return raw
}

// fixBatchHeader rewrites the length and CRC of the batch at the start of
// raw to match its bytes, as a broker would have checked them on produce.
func fixBatchHeader(raw []byte) {
	binary.BigEndian.PutUint32(raw[8:12], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:21], crc32.Checksum(raw[21:], castagnoli))
}

// record encodes one record of a v2 batch.
func record(offsetDelta int32, timestampDelta int64, key, value []byte) []byte {
	var body []byte
	body = append(body, 0) // attributes
	body = binary.AppendVarint(body, timestampDelta)
	body = binary.AppendVarint(body, int64(offsetDelta))
	body = appendVarintBytes(body, key)
	body = appendVarintBytes(body, value)
	body = binary.AppendVarint(body, 0) // headers
	return append(binary.AppendVarint(nil, int64(len(body))), body...)
}

func appendVarintBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	return append(binary.AppendVarint(dst, int64(len(b))), b...)
}

// dataBatch is a batch of n one-byte records stamped at ts (milliseconds).
func dataBatch(firstOffset int64, n int32, ts int64) rawBatch {
	var records []byte
	for i := range n {
		records = append(records, record(i, 0, nil, []byte("x"))...)
	}
	return rawBatch{firstOffset: firstOffset, lastOffsetDelta: n - 1, firstTimestamp: ts, maxTimestamp: ts, producerID: -1, numRecords: n, records: records}
}

// markerBatch is the control batch that ends a transaction of producerID:
// a commit marker, or an abort marker.
func markerBatch(offset, producerID int64, commit bool, ts int64) rawBatch {
	key := []byte{0, 0, 0, 0} // version 0, type 0: abort
	if commit {
		key[3] = 1
	}
	value := []byte{0, 0, 0, 0, 0, 0} // version 0, coordinator epoch 0
	return rawBatch{firstOffset: offset, attributes: attrControl | attrTransactional, firstTimestamp: ts, maxTimestamp: ts,
		producerID: producerID, numRecords: 1, records: record(0, 0, key, value)}
}

// bombBatch is a batch of one record whose value is size zero bytes,
// compressed with codec as it is written, so that the test never holds the
// inflated record.
func bombBatch(t testing.TB, codec int16, size int64, ts int64) rawBatch {
	t.Helper()
	var head []byte
	head = append(head, 0)
	head = binary.AppendVarint(head, 0)
	head = binary.AppendVarint(head, 0)
	head = binary.AppendVarint(head, -1)
	head = binary.AppendVarint(head, size)
	tail := binary.AppendVarint(nil, 0)
	length := int64(len(head)) + size + int64(len(tail))

	var compressed bytes.Buffer
	var w io.WriteCloser
	switch codec {
	case codecGzip:
		w = gzip.NewWriter(&compressed)
	case codecZstd:
		zw, err := zstd.NewWriter(&compressed)
		require.NoError(t, err)
		w = zw
	default:
		t.Fatalf("no bomb for codec %d", codec)
	}
	_, err := w.Write(append(binary.AppendVarint(nil, length), head...))
	require.NoError(t, err)
	zeros := make([]byte, 1<<20)
	for left := size; left > 0; left -= int64(len(zeros)) {
		_, err = w.Write(zeros[:min(left, int64(len(zeros)))])
		require.NoError(t, err)
	}
	_, err = w.Write(tail)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return rawBatch{attributes: codec, firstTimestamp: ts, maxTimestamp: ts, producerID: -1, numRecords: 1, records: compressed.Bytes()}
}
