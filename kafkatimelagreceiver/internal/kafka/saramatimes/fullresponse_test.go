//go:build !unit

package saramatimes

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/saramatest"
)

// TestPartitionsPastAFullResponseReadNextRound: a read of more partitions
// than one response holds (the request's 8 MiB; here 240 partitions of one
// 48 KiB batch each, under the first read's 64 KiB a partition) answers
// every one, in two Fetches. A broker that stops filling a response at its
// size limit may leave the partitions after it out of the response (kfake
// does), or send them empty (Apache Kafka does; kfake so sends the one where
// it stopped): those are read in the next round, not reported unanswered,
// which dating took for records retention deleted, and asked what they
// were asked first, not taken for partitions whose batch did not fit it.
func TestPartitionsPastAFullResponseReadNextRound(t *testing.T) {
	const partitions, records, size = 240, 48, 1 << 10
	k := kfaketest.New(t, 1, nil)
	k.CreateTopic("full", partitions)
	start := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	random := rand.NewChaCha8([32]byte{3})
	var batch []*kgo.Record
	for p := range int32(partitions) {
		for i := range records {
			value := make([]byte, size)
			_, _ = random.Read(value) // incompressible
			batch = append(batch, &kgo.Record{Topic: "full", Partition: p, Timestamp: start.Add(time.Duration(i) * time.Second), Value: value})
		}
	}
	require.NoError(t, k.Client.ProduceSync(context.Background(), batch...).FirstErr())
	ends, err := k.Admin.ListEndOffsets(context.Background(), "full")
	require.NoError(t, err)
	ends.Each(func(o kadm.ListedOffset) { require.Equal(t, int64(records), o.Offset, "%d", o.Partition) })

	cl, err := open(saramatest.Settings(k.Addrs))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cl.Close()) })
	wanted := make([]kafka.PartitionOffsets, partitions)
	for p := range wanted {
		wanted[p] = kafka.PartitionOffsets{TopicPartition: kafka.TopicPartition{Topic: "full", Partition: int32(p)}, Offsets: []int64{1, records - 1}}
	}
	_, err = cl.EndOffsets(context.Background(), []kafka.TopicPartition{wanted[0].TopicPartition}) // connect first
	require.NoError(t, err)

	var mu sync.Mutex
	var asked []int32 // each partition's max bytes, in every Fetch
	k.Cluster.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		k.Cluster.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		for _, ft := range req.(*kmsg.FetchRequest).Topics {
			for _, fp := range ft.Partitions {
				asked = append(asked, fp.PartitionMaxBytes)
			}
		}
		return nil, nil, false
	})
	before := k.Requests(int16(kmsg.Fetch))
	var found kafka.RecordReads
	found, err = cl.RecordTimestamps(context.Background(), wanted)
	require.NoError(t, err)
	fetches := k.Requests(int16(kmsg.Fetch)) - before
	require.Equal(t, int64(2), fetches, "Fetch requests: 11.25 MiB in responses of 8 MiB")
	mu.Lock()
	require.Greater(t, len(asked), partitions, "partitions asked: every one, then those past the first response")
	for i, n := range asked {
		require.EqualValues(t, firstFetchBytesPerPartition, n, "partition %d asked", i)
	}
	mu.Unlock()
	for _, w := range wanted {
		reads := found[w.TopicPartition]
		require.True(t, w.Answered(reads), "%v: %v", w.TopicPartition, reads)
		for _, r := range reads {
			require.Equal(t, kafka.RecordTimed, r.Found, "%v@%d", w.TopicPartition, r.Wanted)
			require.Equal(t, start.Add(time.Duration(r.Wanted)*time.Second).UnixNano(), r.Timestamp, "%v@%d", w.TopicPartition, r.Wanted)
		}
	}
}
