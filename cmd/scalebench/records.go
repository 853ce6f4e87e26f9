package main

// What busy mode writes: by default one-byte records through the loading
// client (linger 0, snappy), as many as -busy-rate says. The -busy-record-*
// flags write records of a real size instead, through a producer of their
// own that sends each partition's records in batches of -busy-batch-records
// (a manual flush per batch), compressed as -busy-compression says: the
// shape of a production topic, whose batches are what record reads fetch.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/scaleload"
)

type recordOptions struct {
	// size is each record's value in bytes; 0 writes the one-byte "x".
	size int
	// text makes values compressible (words of a small vocabulary, as
	// logs and JSON are); otherwise they are random bytes, incompressible.
	text bool
	// perWrite, when set, is how many records each write gives every
	// partition, in place of -busy-rate's average.
	perWrite int
	// batch is how many records of a partition one batch holds; 0 leaves
	// batching to the loading client.
	batch       int
	compression string
	// prefill is how many writes are made before the collector starts,
	// back to back, stamped -busy-every apart in the past: history for
	// groups far behind to sit on.
	prefill int
}

// writerClientID names the busy writer's producer on the brokers.
const writerClientID = "scalebench-writer"

func (r *recordOptions) register(fs *flag.FlagSet) {
	fs.IntVar(&r.size, "busy-record-bytes", 0, "busy mode: each record's value in bytes (0: one byte)")
	fs.IntVar(&r.perWrite, "busy-write-records", 0, "busy mode: records every partition gets per write, in place of -busy-rate's average (0: -busy-rate)")
	fs.IntVar(&r.batch, "busy-batch-records", 0, "busy mode: records of a partition per batch, sent by a producer of their own (0: as the loading client batches them)")
	fs.StringVar(&r.compression, "busy-compression", "none", "busy mode with -busy-batch-records: none, gzip, snappy, lz4 or zstd")
	fs.IntVar(&r.prefill, "busy-prefill", 0, "busy mode: writes made before the collector starts, stamped -busy-every apart in the past (history for -churn-behind-min)")
	fs.Func("busy-record-values", "busy mode: random (incompressible, the default) or text (compressible) values", func(v string) error {
		switch v {
		case "random":
			r.text = false
		case "text":
			r.text = true
		default:
			return fmt.Errorf("%q: want random or text", v)
		}
		return nil
	})
}

func (r recordOptions) check() error {
	switch {
	case r.size < 0:
		return fmt.Errorf("-busy-record-bytes %d: must not be negative", r.size)
	case r.perWrite < 0:
		return fmt.Errorf("-busy-write-records %d: must not be negative", r.perWrite)
	case r.batch < 0:
		return fmt.Errorf("-busy-batch-records %d: must not be negative", r.batch)
	case r.prefill < 0:
		return fmt.Errorf("-busy-prefill %d: must not be negative", r.prefill)
	case r.batch*max(r.size, 1) > 900<<10:
		return fmt.Errorf("-busy-batch-records %d of -busy-record-bytes %d: a batch must fit Kafka's 1 MiB message.max.bytes", r.batch, r.size)
	}
	_, err := codec(r.compression)
	return err
}

func codec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("-busy-compression %q: want none, gzip, snappy, lz4 or zstd", name)
}

// describe says what a write is, for the report.
func (r recordOptions) describe(b busyOptions) string {
	size := "1-byte records"
	if r.size > 0 {
		kind := "random (incompressible)"
		if r.text {
			kind = "text (compressible)"
		}
		size = fmt.Sprintf("%d-byte %s records", r.size, kind)
	}
	count := fmt.Sprintf("%.1f records/s on average (+-%.0f%%)", b.rate, 100*b.noise)
	if r.perWrite > 0 {
		count = fmt.Sprintf("%d records", r.perWrite)
	}
	batching := "batched by the loading client (linger 0, snappy)"
	if r.batch > 0 {
		batching = fmt.Sprintf("in batches of %d records, compression %s", r.batch, r.compression)
	}
	out := fmt.Sprintf("%s to every partition every %s, %s, %s", count, b.every, size, batching)
	if r.prefill > 0 {
		out += fmt.Sprintf("; %d such writes before the collector started, stamped %s apart in the past", r.prefill, b.every)
	}
	if b.phase > 0 {
		out += fmt.Sprintf("; the first write %s after the collector's start", b.phase)
	}
	return out
}

// values makes record values of the configured size and kind.
type values struct {
	size int
	text bool
	rng  *rand.Rand
}

var vocabulary = strings.Fields(`order customer shipped pending amount currency EUR USD status id created updated
	item quantity price warehouse region north south east west true false null payment card`)

func (v *values) next() []byte {
	if v.size == 0 {
		return []byte("x")
	}
	b := make([]byte, 0, v.size)
	if !v.text {
		for len(b) < v.size {
			x := v.rng.Uint64()
			for i := 0; i < 8 && len(b) < v.size; i++ {
				b = append(b, byte(x>>(8*i)))
			}
		}
		return b
	}
	for len(b) < v.size {
		b = append(b, vocabulary[v.rng.IntN(len(vocabulary))]...)
		b = append(b, ' ')
	}
	return b[:v.size]
}

// busyWriter sends busy mode's writes.
type busyWriter struct {
	shared *kgo.Client // the loading client, when the writer has no producer of its own
	own    *kgo.Client
	batch  int
	values values
}

func newBusyWriter(k *scaleload.Cluster, r recordOptions) (*busyWriter, error) {
	w := &busyWriter{shared: k.Client, batch: r.batch, values: values{size: r.size, text: r.text, rng: rand.New(rand.NewPCG(5, 6))}}
	if r.batch == 0 {
		return w, nil
	}
	compression, err := codec(r.compression)
	if err != nil {
		return nil, err
	}
	w.own, err = kgo.NewClient(
		kgo.SeedBrokers(k.Addrs...),
		kgo.ClientID(writerClientID),
		kgo.ManualFlushing(),
		kgo.MaxBufferedRecords(1<<24),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20),
		kgo.ProducerBatchCompression(compression),
		kgo.DisableClientMetrics(),
	)
	if err != nil {
		return nil, fmt.Errorf("busy writer: %w", err)
	}
	return w, nil
}

func (w *busyWriter) close() {
	if w.own != nil {
		w.own.Close()
	}
}

// send writes records, given partition by partition, and returns each
// one's result. With a batch size, each partition's records go in batches
// of that many: a flush after the next batch of every partition.
func (w *busyWriter) send(ctx context.Context, records []*kgo.Record) kgo.ProduceResults {
	if w.own == nil {
		return w.shared.ProduceSync(ctx, records...)
	}
	// Each partition's run of records, in order.
	var runs [][]*kgo.Record
	for i, r := range records {
		if i == 0 || r.Topic != records[i-1].Topic || r.Partition != records[i-1].Partition {
			runs = append(runs, nil)
		}
		runs[len(runs)-1] = append(runs[len(runs)-1], r)
	}
	results := make(kgo.ProduceResults, 0, len(records))
	for from := 0; ; from += w.batch {
		var chunk []*kgo.Record
		for _, run := range runs {
			if from < len(run) {
				chunk = append(chunk, run[from:min(from+w.batch, len(run))]...)
			}
		}
		if len(chunk) == 0 {
			return results
		}
		done := make(chan kgo.ProduceResult, len(chunk))
		for _, r := range chunk {
			w.own.Produce(ctx, r, func(r *kgo.Record, err error) { done <- kgo.ProduceResult{Record: r, Err: err} })
		}
		if err := w.own.Flush(ctx); err != nil {
			return append(results, kgo.ProduceResult{Err: err})
		}
		for range chunk {
			results = append(results, <-done)
		}
	}
}

// prefill makes r.prefill writes of every partition before the collector
// starts, stamped b.every apart up to now.
func prefill(ctx context.Context, k *scaleload.Cluster, w scaleload.Workload, b busyOptions) error {
	if b.records.prefill == 0 {
		return nil
	}
	writer, err := newBusyWriter(k, b.records)
	if err != nil {
		return err
	}
	defer writer.close()
	start := time.Now().Add(-time.Duration(b.records.prefill) * b.every)
	perWrite := b.records.perWrite
	if perWrite == 0 {
		perWrite = max(1, int(b.rate*b.every.Seconds()+0.5))
	}
	for i := range b.records.prefill {
		stamp := start.Add(time.Duration(i) * b.every)
		var records []*kgo.Record
		for t := range w.Topics {
			for p := range w.PartitionsPerTopic {
				for range perWrite {
					records = append(records, &kgo.Record{Topic: w.Topic(t), Partition: p, Value: writer.values.next(), Timestamp: stamp})
				}
			}
		}
		if err := writer.send(ctx, records).FirstErr(); err != nil {
			return fmt.Errorf("prefill write %d: %w", i+1, err)
		}
	}
	return nil
}

var errPrefillAccuracy = errors.New("-busy-prefill with -accuracy: the truth knows only what the run writes")
