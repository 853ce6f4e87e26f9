package batchguard

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"iter"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// records is a batch's records, one per offset from first, stamped at ts.
func records(first, last int64, ts time.Time) iter.Seq2[int64, time.Time] {
	return func(yield func(int64, time.Time) bool) {
		for o := first; o <= last; o++ {
			if !yield(o, ts) {
				return
			}
		}
	}
}

// TestFirstRecordSkipsWhatIsNotData: markers, aborted transactions and
// records below the offset are no data; a cut-off batch ends the scan.
func TestFirstRecordSkipsWhatIsNotData(t *testing.T) {
	now := time.Now()
	ts := now.Add(-time.Minute)
	data := func(first, last int64) Batch { return Batch{LastOffset: last, Records: records(first, last, ts)} }
	found := func(offset int64) Scan {
		return Scan{Record: kafka.RecordTimestamp{Offset: offset, Timestamp: ts.UnixNano()}, Found: true}
	}
	// inTransactions is found(offset) past a transaction's batch or marker.
	inTransactions := func(offset int64) Scan {
		s := found(offset)
		s.Record.Transactional = true
		return s
	}
	for _, tc := range []struct {
		name    string
		batches []Batch
		aborted []AbortedTransaction
		want    int64
		scan    Scan
	}{
		{"the record at the offset", []Batch{data(0, 4)}, nil, 2, found(2)},
		{"batches below the offset are passed", []Batch{data(0, 1), data(2, 3)}, nil, 2, found(2)},
		{"nothing at or after the offset", []Batch{data(0, 1)}, nil, 2, Scan{Next: 2}},
		{"a marker is no data", []Batch{{LastOffset: 2, Control: true}, data(3, 3)}, nil, 2, inTransactions(3)},
		{"an aborted transaction's batch is no data", []Batch{
			{LastOffset: 2, Transactional: true, ProducerID: 7, Records: records(2, 2, ts)},
			{LastOffset: 3, Control: true, AbortMarker: true, ProducerID: 7},
			data(4, 4),
		}, []AbortedTransaction{{ProducerID: 7, FirstOffset: 2}}, 2, inTransactions(4)},
		{"another producer's transaction is data", []Batch{
			{LastOffset: 2, Transactional: true, ProducerID: 8, Records: records(2, 2, ts)},
		}, []AbortedTransaction{{ProducerID: 7, FirstOffset: 2}}, 2, inTransactions(2)},
		{"a cut-off batch ends the scan", []Batch{{LastOffset: 1, Control: true}, {Partial: true}, data(3, 3)}, nil, 0, Scan{Next: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.scan, FirstRecord(slices.Values(tc.batches), tc.aborted, tc.want, now))
		})
	}
	require.True(t, IsAbortMarker([]byte{0, 0, 0, 0}))
	require.False(t, IsAbortMarker([]byte{0, 0, 0, 1}), "a commit marker")
}

// TestFirstRecordsAnswerEachOffsetAsAlone: one pass over a partition's
// batches answers every wanted offset as a scan for that offset alone
// would, over random logs of data, markers, aborted transactions and a
// cut-off tail.
func TestFirstRecordsAnswerEachOffsetAsAlone(t *testing.T) {
	now := time.Now()
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 2000 {
		var batches []Batch
		var aborted []AbortedTransaction
		offset := int64(rng.IntN(5))
		for range rng.IntN(8) {
			last := offset + int64(rng.IntN(4))
			ts := now.Add(-time.Duration(rng.IntN(1000)) * time.Millisecond)
			switch rng.IntN(6) {
			case 0:
				batches = append(batches, Batch{LastOffset: last, Control: true, AbortMarker: rng.IntN(2) == 0, ProducerID: int64(rng.IntN(2))})
			case 1:
				producer := int64(rng.IntN(2))
				if rng.IntN(2) == 0 {
					aborted = append(aborted, AbortedTransaction{ProducerID: producer, FirstOffset: offset})
				}
				batches = append(batches, Batch{LastOffset: last, Transactional: true, ProducerID: producer, Records: records(offset, last, ts)})
			default:
				batches = append(batches, Batch{LastOffset: last, Records: records(offset, last, ts)})
			}
			offset = last + 1 + int64(rng.IntN(2))
		}
		if rng.IntN(4) == 0 {
			batches = append(batches, Batch{Partial: true})
		}
		wants := make([]int64, 1+rng.IntN(5))
		for i := range wants {
			wants[i] = int64(rng.IntN(int(offset) + 3))
		}
		slices.Sort(wants)
		scans := FirstRecords(slices.Values(batches), aborted, wants, now)
		require.Len(t, scans, len(wants))
		for i, want := range wants {
			alone := FirstRecords(slices.Values(batches), aborted, []int64{want}, now)[0]
			require.Equal(t, alone, scans[i], "round %d: offset %d of %v", round, want, wants)
		}
	}
}

// legacyEntry is one entry of a v1 message set: offset, size and a magic 1
// message with the codec (0: none, 1: gzip) and value.
func legacyEntry(offset int64, codec byte, value []byte) []byte {
	msg := []byte{1, codec}
	msg = binary.BigEndian.AppendUint64(msg, uint64(time.Now().UnixMilli()))
	msg = binary.BigEndian.AppendUint32(msg, 0xffffffff) // null key
	msg = binary.BigEndian.AppendUint32(msg, uint32(len(value)))
	msg = append(msg, value...)
	entry := binary.BigEndian.AppendUint64(nil, uint64(offset))
	entry = binary.BigEndian.AppendUint32(entry, uint32(4+len(msg)))
	entry = binary.BigEndian.AppendUint32(entry, crc32.ChecksumIEEE(msg))
	return append(entry, msg...)
}

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	_, err := w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return out.Bytes()
}

// fetchBody is a Fetch v11 response body with the records of t/0.
func fetchBody(records []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0) // throttle time
	b = binary.BigEndian.AppendUint16(b, 0)    // error code
	b = binary.BigEndian.AppendUint32(b, 0)    // session id
	b = binary.BigEndian.AppendUint32(b, 1)    // topics
	b = binary.BigEndian.AppendUint16(b, 1)
	b = append(b, 't')
	b = binary.BigEndian.AppendUint32(b, 1) // partitions
	b = binary.BigEndian.AppendUint32(b, 0) // partition 0
	b = binary.BigEndian.AppendUint16(b, 0) // no error
	b = binary.BigEndian.AppendUint64(b, 1) // high watermark
	b = binary.BigEndian.AppendUint64(b, 1) // last stable offset
	b = binary.BigEndian.AppendUint64(b, 0) // log start
	b = binary.BigEndian.AppendUint32(b, 0) // aborted transactions
	b = binary.BigEndian.AppendUint32(b, 0xffffffff)
	b = binary.BigEndian.AppendUint32(b, uint32(len(records)))
	return append(b, records...)
}

// TestFetchScanBoundsWhatOneResponseInflates: a response whose compressed
// entries inflate past MaxDecompressedResponse in all, or that nests
// compression, is refused for its partition, and its first compressed
// entry marked so that the client stops before inflating it; what Kafka
// writes passes unchanged.
func TestFetchScanBoundsWhatOneResponseInflates(t *testing.T) {
	plain := legacyEntry(0, 0, []byte("x"))
	big := gzipped(t, legacyEntry(0, 0, make([]byte, 8<<20)))
	var many []byte
	for i := range 5 { // 40 MiB in all
		many = append(many, legacyEntry(int64(i), 1, big)...)
	}
	for _, tc := range []struct {
		name    string
		records []byte
		refused string
	}{
		{"plain", plain, ""},
		{"one compressed wrapper", legacyEntry(0, 1, gzipped(t, plain)), ""},
		{"nested compression", legacyEntry(0, 1, gzipped(t, legacyEntry(0, 1, gzipped(t, plain)))), "nested"},
		{"past the bound in all", many, "decompress to more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := fetchBody(tc.records)
			before := slices.Clone(body)
			var refusals Refusals
			fetchScan(body, 11, refusals.refuse)
			reason := refusals.Take(kafka.TopicPartition{Topic: "t"})
			if tc.refused == "" {
				require.NoError(t, reason)
				require.Equal(t, before, body, "passed unchanged")
				return
			}
			require.ErrorContains(t, reason, tc.refused)
			require.NotEqual(t, before, body, "its first compressed entry is marked")
			require.NoError(t, refusals.Take(kafka.TopicPartition{Topic: "t"}), "told once")
		})
	}
}
