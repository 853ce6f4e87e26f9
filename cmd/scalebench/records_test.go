//go:build !unit

package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/scaleload"
)

func gzipRatio(t *testing.T, b []byte) float64 {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	_, err := w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return float64(out.Len()) / float64(len(b))
}

// Random values do not compress, text values do, both of the size asked.
func TestBusyValues(t *testing.T) {
	random := values{size: 1000, rng: rand.New(rand.NewPCG(1, 1))}
	text := values{size: 1000, text: true, rng: rand.New(rand.NewPCG(1, 1))}
	var r, x []byte
	for range 16 {
		v := random.next()
		require.Len(t, v, 1000)
		r = append(r, v...)
		v = text.next()
		require.Len(t, v, 1000)
		x = append(x, v...)
	}
	require.Greater(t, gzipRatio(t, r), 0.99, "incompressible")
	require.Less(t, gzipRatio(t, x), 0.5, "compressible")
	require.Equal(t, []byte("x"), (&values{}).next(), "no size: one byte")
}

// With -busy-batch-records each partition's records go in batches of that
// many, compressed as asked.
func TestBusyWriterBatches(t *testing.T) {
	k, err := scaleload.Start(1)
	require.NoError(t, err)
	defer k.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := scaleload.Workload{Groups: 1, Topics: 1, PartitionsPerTopic: 2}
	require.NoError(t, k.Load(ctx, w))

	writer, err := newBusyWriter(k, recordOptions{size: 1024, text: true, batch: 4, compression: "zstd"})
	require.NoError(t, err)
	defer writer.close()
	// A first send loads the topic's metadata and the producer's ID: a
	// record produced while those are still on their way can leave in a
	// request of its own.
	warmUp := []*kgo.Record{{Topic: w.Topic(0), Partition: 0, Value: []byte("w")}, {Topic: w.Topic(0), Partition: 1, Value: []byte("w")}}
	require.NoError(t, writer.send(ctx, warmUp).FirstErr())
	var mu sync.Mutex
	batches := map[int32][]int32{} // partition -> records of each batch
	codecs := map[int16]bool{}
	k.Kafka.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		k.Kafka.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		for _, topic := range req.(*kmsg.ProduceRequest).Topics {
			for _, p := range topic.Partitions {
				var b kmsg.RecordBatch
				require.NoError(t, b.ReadFrom(p.Records))
				batches[p.Partition] = append(batches[p.Partition], b.NumRecords)
				codecs[b.Attributes&7] = true
			}
		}
		return nil, nil, false
	})
	var records []*kgo.Record
	for p := range int32(2) {
		for range 10 {
			records = append(records, &kgo.Record{Topic: w.Topic(0), Partition: p, Value: writer.values.next()})
		}
	}
	results := writer.send(ctx, records)
	require.NoError(t, results.FirstErr())
	require.Len(t, results, 20)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, map[int32][]int32{0: {4, 4, 2}, 1: {4, 4, 2}}, batches)
	require.Equal(t, map[int16]bool{4: true}, codecs, "zstd (franz-go sends a batch uncompressed when compression does not shrink it)")
	require.Positive(t, k.Wire.RequestBytes(writerClientID).Of(kmsg.Produce))
}
