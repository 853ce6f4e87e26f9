package saramatimes

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/saramatest"
)

// fetchResponseV11 is a Fetch v11 response body for partition 0 of topic
// "t", carrying records as they are.
func fetchResponseV11(records []byte, highWatermark, lastStable, abortedProducer, abortedFirst int64) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0) // throttle time
	b = binary.BigEndian.AppendUint16(b, 0)    // error code
	b = binary.BigEndian.AppendUint32(b, 0)    // session id
	b = binary.BigEndian.AppendUint32(b, 1)    // topics
	b = binary.BigEndian.AppendUint16(b, 1)
	b = append(b, 't')
	b = binary.BigEndian.AppendUint32(b, 1) // partitions
	b = binary.BigEndian.AppendUint32(b, 0) // partition 0
	b = binary.BigEndian.AppendUint16(b, 0) // no error
	b = binary.BigEndian.AppendUint64(b, uint64(highWatermark))
	b = binary.BigEndian.AppendUint64(b, uint64(lastStable))
	b = binary.BigEndian.AppendUint64(b, 0) // log start
	if abortedProducer < 0 {
		b = binary.BigEndian.AppendUint32(b, 0)
	} else {
		b = binary.BigEndian.AppendUint32(b, 1)
		b = binary.BigEndian.AppendUint64(b, uint64(abortedProducer))
		b = binary.BigEndian.AppendUint64(b, uint64(abortedFirst))
	}
	b = binary.BigEndian.AppendUint32(b, 0xffffffff) // preferred read replica -1
	b = binary.BigEndian.AppendUint32(b, uint32(len(records)))
	return append(b, records...)
}

// fixBatchHeaders rewrites the length and CRC of every v2 batch it can walk
// in records, so that the fuzzer's changes reach what lies behind the CRC
// check, as bytes a broker accepted would.
func fixBatchHeaders(records []byte) {
	for len(records) >= 61 {
		length := int(binary.BigEndian.Uint32(records[8:12]))
		if records[16] != 2 || length < 49 || 12+length > len(records) {
			return
		}
		fixBatchHeader(records[:12+length])
		records = records[12+length:]
	}
}

// scriptedRead is one broker's record read against a scripted broker.
type scriptedRead struct {
	broker *saramatest.ScriptedBroker
	c      *testReads
	conf   sarama.Config
	b      *sarama.Broker
}

func newScriptedRead(t testing.TB) *scriptedRead {
	t.Helper()
	broker := saramatest.NewScriptedBroker(t)
	c, err := open(clientsettings.Settings{Brokers: []string{broker.Addr()}, ProtocolVersion: "3.0.0", RequestTimeout: 5 * time.Second, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := &scriptedRead{broker: broker, c: c, conf: *c.Config(), b: sarama.NewBroker(broker.Addr())}
	r.conf.ApiVersionsRequest = false // the scripted broker answers only Fetch
	t.Cleanup(func() { _ = r.b.Close() })
	return r
}

// read asks for the record at want of partition t/0, which the broker
// answers with body, and returns the answers given.
func (r *scriptedRead) read(t testing.TB, want int64, body []byte) (map[saramatest.RecordAt]kafka.RecordTimestamp, error) {
	t.Helper()
	r.broker.Answer(body)
	if connected, _ := r.b.Connected(); !connected {
		// sarama drops the connection after some decoding errors.
		_ = r.b.Close()
		if err := r.b.Open(&r.conf); err != nil && !errors.Is(err, sarama.ErrAlreadyConnected) {
			t.Fatal(err)
		}
	}
	tp := kafka.TopicPartition{Topic: "t"}
	answers := map[saramatest.RecordAt]kafka.RecordTimestamp{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// One broker's read: a partition it sends to another replica
	// (rack_id) gets no answer here, which the checks allow.
	found := kafka.RecordReads{}
	read := newLeaderRead(r.c.Times, r.b, []kafka.TopicPartition{tp}, wantedOffsets{offsets: map[kafka.TopicPartition][]int64{tp: {want}}}, found)
	err := read.rounds(ctx, []kafka.TopicPartition{tp})
	if ctx.Err() != nil {
		t.Fatal("the read did not end")
	}
	for got, reads := range found {
		for _, rr := range reads {
			at := saramatest.RecordAt{TopicPartition: got, Offset: rr.Wanted}
			if _, twice := answers[at]; twice {
				t.Fatalf("%+v answered twice", at)
			}
			answers[at] = rr.RecordTimestamp
		}
	}
	return answers, err
}

// FuzzRecordRead feeds the record read's Fetch path (sarama's decoding,
// then one broker's read and firstRecordAtOrAfter) record batches as hostile as the
// fuzzer makes them: impossible timestamps, control batches, aborted
// transactions, truncated, corrupt and compressed batches, bombs. The read
// must end, and whatever it answers must be something the lag layer can
// take at its word.
func FuzzRecordRead(f *testing.F) {
	r := newScriptedRead(f)
	f.Fuzz(func(t *testing.T, records []byte, want, highWatermark, lastStable, abortedProducer, abortedFirst int64) {
		if len(records) > 1<<20 {
			return // a record read asks for at most fetchBytesPerPartition
		}
		want &= 1<<62 - 1
		records = append([]byte(nil), records...)
		fixBatchHeaders(records)
		answers, _ := r.read(t, want, fetchResponseV11(records, highWatermark, lastStable, abortedProducer, abortedFirst))
		at := saramatest.RecordAt{TopicPartition: kafka.TopicPartition{Topic: "t"}, Offset: want}
		for got, ts := range answers {
			if got != at {
				t.Fatalf("answered %+v, asked %+v", got, at)
			}
			switch ts.Found {
			case kafka.RecordTimed:
				if ts.Timestamp <= 0 || ts.Timestamp > time.Now().Add(kafka.MaxClockLead).UnixNano() {
					t.Fatalf("timestamp %d passed as written by a clock", ts.Timestamp)
				}
				if ts.Offset < want {
					t.Fatalf("record %d before the offset asked, %d", ts.Offset, want)
				}
			case kafka.RecordUntimed:
				if ts.Timestamp != 0 || ts.Offset < want {
					t.Fatalf("untimed answer %+v for offset %d", ts, want)
				}
			case kafka.RecordNone:
				if ts.Offset <= want || ts.Offset > highWatermark {
					t.Fatalf("no data up to %d claimed for offset %d, high watermark %d", ts.Offset, want, highWatermark)
				}
			default:
				t.Fatalf("unknown answer %+v", ts)
			}
		}
	})
}
