package saramatimes

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramaconn"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/saramatest"
)

// What the record read answers for batches no well-behaved producer
// writes, or that are not data: the Kafka layer's half of the validation
// (impossible timestamps give no time) and of transaction handling
// (markers and aborted records are skipped, a read that finds only them
// says so).
func TestRecordReadOfHostileBatches(t *testing.T) {
	r := newScriptedRead(t)
	now := time.Now().Truncate(time.Millisecond)
	ms := now.UnixMilli()
	txData := func(first int64, n int32, producerID int64) rawBatch {
		b := dataBatch(first, n, ms)
		b.attributes |= attrTransactional
		b.producerID = producerID
		return b
	}
	logAppend := dataBatch(0, 1, ms)
	logAppend.attributes |= attrLogAppendTime
	logAppend.producerID = 7 // the broker's clock: not the producer's
	idempotent := dataBatch(0, 1, ms)
	idempotent.producerID = 7
	cat := func(bs ...rawBatch) []byte {
		var out []byte
		for _, b := range bs {
			out = append(out, b.encode()...)
		}
		return out
	}
	timed := kafka.RecordTimestamp{Offset: 0, Timestamp: now.UnixNano()}
	for _, tt := range []struct {
		name              string
		records           []byte
		want, hw, lso     int64
		aborted, abortsAt int64 // producer id (-1: none) and first offset of an aborted transaction
		answer            kafka.RecordTimestamp
		answered          bool
	}{
		{name: "a plain record", records: cat(dataBatch(0, 1, ms)), hw: 1, lso: 1, aborted: -1, answer: timed, answered: true},
		{name: "under LogAppendTime", records: cat(logAppend), hw: 1, lso: 1, aborted: -1, answer: timed, answered: true},
		{name: "an idempotent producer's record carries its clock", records: cat(idempotent), hw: 1, lso: 1, aborted: -1,
			answer: kafka.RecordTimestamp{Offset: 0, Timestamp: now.UnixNano(), ByProducer: true, Producer: 7}, answered: true},
		{name: "timestamp -1 (no timestamp)", records: cat(dataBatch(0, 1, -1)), hw: 1, lso: 1, aborted: -1,
			answer: kafka.RecordTimestamp{Offset: 0, Found: kafka.RecordUntimed}, answered: true},
		{name: "timestamp 0", records: cat(dataBatch(0, 1, 0)), hw: 1, lso: 1, aborted: -1,
			answer: kafka.RecordTimestamp{Offset: 0, Found: kafka.RecordUntimed}, answered: true},
		{name: "ten years ahead", records: cat(dataBatch(0, 1, now.AddDate(10, 0, 0).UnixMilli())), hw: 1, lso: 1, aborted: -1,
			answer: kafka.RecordTimestamp{Offset: 0, Found: kafka.RecordUntimed}, answered: true},
		{name: "an hour ahead is the lag layer's to clamp", records: cat(dataBatch(0, 1, now.Add(time.Hour).UnixMilli())), hw: 1, lso: 1, aborted: -1,
			answer: kafka.RecordTimestamp{Offset: 0, Timestamp: now.Add(time.Hour).UnixNano()}, answered: true},
		{name: "only a commit marker", records: cat(txData(0, 2, 7), markerBatch(2, 7, true, ms)), want: 2, hw: 3, lso: 3, aborted: -1,
			answer: kafka.RecordTimestamp{Offset: 3, Found: kafka.RecordNone}, answered: true},
		{name: "markers, then data", records: cat(markerBatch(2, 7, true, ms), markerBatch(3, 8, true, ms), dataBatch(4, 1, ms)), want: 2, hw: 5, lso: 5, aborted: -1,
			answer: kafka.RecordTimestamp{Offset: 4, Timestamp: now.UnixNano(), Transactional: true}, answered: true},
		{name: "an aborted transaction", records: cat(txData(0, 2, 7), markerBatch(2, 7, false, ms)), hw: 3, lso: 3, aborted: 7, abortsAt: 0,
			answer: kafka.RecordTimestamp{Offset: 3, Found: kafka.RecordNone}, answered: true},
		{name: "aborted, then committed", records: cat(txData(0, 2, 7), markerBatch(2, 7, false, ms), txData(3, 1, 7), markerBatch(4, 7, true, ms)), hw: 5, lso: 5, aborted: 7, abortsAt: 0,
			answer: kafka.RecordTimestamp{Offset: 3, Timestamp: now.UnixNano(), ByProducer: true, Producer: 7, Transactional: true}, answered: true},
		{name: "a transaction still open", records: nil, want: 1, hw: 3, lso: 1, aborted: -1},
		{name: "a batch too large once decompressed", records: cat(bombBatch(t, codecZstd, 2*saramaconn.MaxDecompressedBatch, ms)), hw: 1, lso: 1, aborted: -1,
			answer: kafka.RecordTimestamp{Offset: 0, Found: kafka.RecordUntimed}, answered: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			answers, err := r.read(t, tt.want, fetchResponseV11(tt.records, tt.hw, tt.lso, tt.aborted, tt.abortsAt))
			got, ok := answers[saramatest.RecordAt{TopicPartition: kafka.TopicPartition{Topic: "t"}, Offset: tt.want}]
			require.Equal(t, tt.answered, ok, "answers %v, error %v", answers, err)
			require.Equal(t, tt.answer, got)
		})
	}
}
