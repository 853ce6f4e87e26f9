//go:build !unit

package kfaketest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kafkacount"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/scaleload"
)

// TestMain: whatever New and NewScale start is closed at cleanup.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestKafka(t *testing.T) {
	k := New(t, 2, nil)
	require.Len(t, k.Addrs, 2)
	k.CreateTopic("orders", 3)

	at := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	require.Equal(t, int64(0), k.Produce("orders", 1, at, at.Add(time.Second)))
	require.Equal(t, int64(2), k.Produce("orders", 1, at.Add(2*time.Second)), "offsets follow on")
	require.Equal(t, int64(0), k.Produce("orders", 2, at), "records stay on the partition they name")

	k.Commit("billing", "orders", map[int32]int64{1: 1, 2: 0})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	committed, err := k.Admin.FetchOffsets(ctx, "billing")
	require.NoError(t, err)
	require.NoError(t, committed.Error())
	require.Equal(t, int64(1), committed["orders"][1].At)
	require.Equal(t, int64(0), committed["orders"][2].At)
	require.NotContains(t, committed["orders"], int32(0))

	before := k.Requests(int16(kmsg.ListOffsets))
	ends, err := k.Admin.ListEndOffsets(ctx, "orders")
	require.NoError(t, err)
	require.NoError(t, ends.Error())
	end, _ := ends.Lookup("orders", 1)
	require.Equal(t, int64(3), end.Offset)
	require.Positive(t, k.Requests(int16(kmsg.ListOffsets))-before, "the counter sees the test's own client")
}

// TestProducerWithoutID: the test's client writes batches with a producer
// ID; a producer made without idempotence writes them with none, and both
// keep the timestamps given.
func TestProducerWithoutID(t *testing.T) {
	k := New(t, 1, nil)
	k.CreateTopic("orders", 1)
	at := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	require.Equal(t, int64(0), k.Produce("orders", 0, at))
	noID := k.NewProducer(kgo.DisableIdempotentWrite())
	require.Equal(t, int64(1), noID.Produce("orders", 0, at.Add(time.Second), at.Add(2*time.Second)))

	consumer, err := kgo.NewClient(kgo.SeedBrokers(k.Addrs...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"orders": {0: kgo.NewOffset().AtStart()}}))
	require.NoError(t, err)
	defer consumer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var records []*kgo.Record
	for len(records) < 3 {
		fetches := consumer.PollFetches(ctx)
		require.NoError(t, fetches.Err())
		records = append(records, fetches.Records()...)
	}
	require.GreaterOrEqual(t, records[0].ProducerID, int64(0), "the test's client is idempotent")
	for i, r := range records {
		require.Equal(t, at.Add(time.Duration(i)*time.Second), r.Timestamp, "record %d", i)
	}
	require.Equal(t, int64(-1), records[1].ProducerID)
	require.Equal(t, int64(-1), records[2].ProducerID)
}

// TestKafkaClientOpts: clientOpts reach the test's client, after the
// defaults.
func TestKafkaClientOpts(t *testing.T) {
	k := New(t, 1, []kgo.Opt{kgo.ClientID("kfaketest"), kgo.ProducerLinger(time.Second)})
	require.Equal(t, "kfaketest", k.Client.OptValue(kgo.ClientID))
	require.Equal(t, time.Second, k.Client.OptValue(kgo.ProducerLinger), "clientOpts come after the defaults")
	require.Equal(t, []string(k.Addrs), k.Client.OptValue(kgo.SeedBrokers))
}

func TestScale(t *testing.T) {
	k := NewScale(t)
	require.Len(t, k.Addrs, ScaleBrokers)
	w := scaleload.Workload{Groups: 3, Topics: 2, PartitionsPerTopic: 4}
	before := k.Requests()
	k.LoadWorkload(t, w)
	require.Positive(t, k.Requests().Since(before).Of(kmsg.OffsetCommit))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for g := range w.Groups {
		committed, err := k.Admin.FetchOffsets(ctx, w.Group(g))
		require.NoError(t, err)
		require.NoError(t, committed.Error())
		require.Len(t, committed.Sorted(), w.Partitions(), "group %d commits on every partition", g)
	}
}

func TestScrapeWorkloads(t *testing.T) {
	var names []string
	for _, w := range ScrapeWorkloads {
		names = append(names, w.Name)
		require.Equal(t, 1, w.Topics)
	}
	require.Equal(t, []string{"1k", "10k", "100k"}, names, "BENCHMARKS.md quotes the names")
	require.Equal(t, 1_000, ScrapeWorkloads[0].Pairs())
	require.Equal(t, 10_000, ScrapeWorkloads[1].Pairs())
	require.Equal(t, 100_000, ScrapeWorkloads[2].Pairs())
}

// TestReport: the metric names BENCHMARKS.md quotes, per operation.
func TestReport(t *testing.T) {
	var counts kafkacount.Counts
	counts[kmsg.ListOffsets] = 6
	counts[kmsg.OffsetFetch] = 3
	var n int
	res := testing.Benchmark(func(b *testing.B) {
		n = b.N
		start := CPUTime(b)
		for range b.N {
			_ = CPUTime(b)
		}
		require.GreaterOrEqual(b, CPUTime(b), start, "CPU time only grows")
		ReportRequests(b, counts)
		ReportCPU(b, 2*time.Millisecond*time.Duration(b.N))
	})
	require.Equal(t, n, res.N)
	require.Equal(t, map[string]float64{
		"ListOffsets/op": 6 / float64(n),
		"OffsetFetch/op": 3 / float64(n),
		"requests/op":    9 / float64(n),
		"cpu-ms/op":      2,
	}, res.Extra)
}
