//go:build !unit

package saramatimes

import (
	"context"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/saramatest"
)

// coldStartPartitions is how many partitions the cold-start fixture has.
const coldStartPartitions = 12

// coldStart is a cluster with two hours of history per partition and a
// group committed at spread-out positions in it, and a connected client.
type coldStart struct {
	k         *kfaketest.Kafka
	cl        *testReads
	start     time.Time
	stamps    []time.Time
	committed map[int32]int64
}

func newColdStart(tb testing.TB) *coldStart {
	const partitions = coldStartPartitions
	k := kfaketest.New(tb, 3, nil)
	k.CreateTopic("history", partitions)
	// Two hours of history per partition: for the first hour a rate that
	// swings between a record every 2 s and every 28 s, then a 20-minute
	// silence, then a record every 2 min.
	start := time.Now().Add(-2 * time.Hour).Truncate(time.Millisecond)
	var stamps []time.Time
	for ts, i := start, 0; ts.Before(start.Add(time.Hour)); i++ {
		stamps = append(stamps, ts)
		ts = ts.Add(time.Duration(15+13*math.Sin(float64(i)/7)) * time.Second)
	}
	for ts := start.Add(80 * time.Minute); ts.Before(start.Add(119 * time.Minute)); ts = ts.Add(2 * time.Minute) {
		stamps = append(stamps, ts)
	}
	committed := map[int32]int64{}
	for p := range int32(partitions) {
		k.Produce("history", p, stamps...)
		// Spread the groups' positions over the history.
		committed[p] = int64((int(p)*len(stamps))/partitions + 3)
	}
	k.Commit("cold", "history", committed)

	cl, err := open(saramatest.Settings(k.Addrs))
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, cl.Close()) })
	ctx := context.Background()
	_, err = cl.EndOffsets(ctx, []kafka.TopicPartition{{Topic: "history", Partition: 0}}) // connect and learn leaders first
	require.NoError(tb, err)
	return &coldStart{k: k, cl: cl, start: start, stamps: stamps, committed: committed}
}

// recordRead reads the record at every committed offset, returning the
// Fetch requests it took and each record time's error in seconds.
func (c *coldStart) recordRead(tb testing.TB) (fetches int64, errs []float64) {
	ctx := context.Background()
	var wanted []saramatest.RecordAt
	for p := range int32(coldStartPartitions) {
		wanted = append(wanted, saramatest.RecordAt{TopicPartition: kafka.TopicPartition{Topic: "history", Partition: p}, Offset: c.committed[p]})
	}
	before := c.k.Requests(int16(kmsg.Fetch))
	found, err := saramatest.RecordTimestamps(ctx, c.cl, wanted)
	require.NoError(tb, err)
	fetches = c.k.Requests(int16(kmsg.Fetch)) - before
	for _, at := range wanted {
		ts, ok := found[at]
		require.True(tb, ok, "record %v found (got %d of %d)", at, len(found), len(wanted))
		errs = append(errs, math.Abs(float64(ts.Timestamp-c.stamps[at.Offset].UnixNano()))/1e9)
	}
	return fetches, errs
}

// TestColdStartRecordReadIsExact: what the receiver's choice of method for
// a committed offset older than every table point rests on: reading the
// record at it is exact to the millisecond and costs one Fetch per broker.
// BenchmarkColdStartMethodComparison compares it with the alternative.
func TestColdStartRecordReadIsExact(t *testing.T) {
	c := newColdStart(t)
	fetches, errs := c.recordRead(t)
	require.LessOrEqual(t, fetches, int64(3))
	require.Less(t, maxOf(errs), 0.001)
}

// BenchmarkColdStartMethodComparison measures the two ways Kafka can tell
// the age of a committed offset older than every table point, on the same
// data:
//
//   - record: Fetch the record at the committed offset and take its
//     timestamp (what the receiver does);
//   - backfill: ListOffsets by timestamp at K past instants, giving table
//     points (offset, instant), then interpolate.
//
// It logs requests and error for each; BENCHMARKS.md quotes the figures.
func BenchmarkColdStartMethodComparison(b *testing.B) {
	c := newColdStart(b)
	k, cl, start, stamps, committed := c.k, c.cl, c.start, c.stamps, c.committed
	const partitions = coldStartPartitions
	ctx := context.Background()
	for b.Loop() {
		fetches, recordErrs := c.recordRead(b)
		b.Logf("record read: %d Fetch requests for %d partitions on 3 brokers; error max %.3f s", fetches, partitions, maxOf(recordErrs))

		// Method 2: ListOffsets by timestamp at K instants, for K in 4, 8, 16.
		client, err := cl.Connected(ctx)
		require.NoError(b, err)
		for _, probes := range []int{4, 8, 16} {
			before := k.Requests(int16(kmsg.ListOffsets))
			tables := map[int32]*timetable.Table{}
			for p := range int32(partitions) {
				tables[p] = timetable.NewTable(64, 0)
			}
			// Probe instants spaced evenly over the two hours, oldest first.
			for i := range probes {
				instant := start.Add(time.Duration(i) * 2 * time.Hour / time.Duration(probes))
				byLeader := map[*sarama.Broker]*sarama.OffsetRequest{}
				for p := range int32(partitions) {
					leader, err := client.Leader("history", p)
					require.NoError(b, err)
					if byLeader[leader] == nil {
						byLeader[leader] = sarama.NewOffsetRequest(cl.Config().Version)
					}
					byLeader[leader].AddBlock("history", p, instant.UnixMilli(), 1)
				}
				for broker, req := range byLeader {
					resp, err := broker.GetAvailableOffsets(req)
					require.NoError(b, err)
					for p := range int32(partitions) {
						if block := resp.GetBlock("history", p); block != nil && block.Err == sarama.ErrNoError && block.Offset >= 0 {
							// The first record at or after instant: by instant the end
							// offset was at least that offset.
							tables[p].Add(block.Offset, instant, instant)
						}
					}
				}
			}
			requests := k.Requests(int16(kmsg.ListOffsets)) - before
			var errs []float64
			missing := 0
			now := time.Now()
			for p := range int32(partitions) {
				offset := committed[p]
				at, ok, _ := tables[p].Estimate(offset, timetable.Sample{Offset: int64(len(stamps)), At: now.UnixNano()})
				if !ok {
					missing++
					continue
				}
				errs = append(errs, math.Abs(float64(at-stamps[offset].UnixNano()))/1e9)
			}
			sort.Float64s(errs)
			b.Logf("ListOffsets backfill with %2d probes: %d ListOffsets requests; %d/%d partitions estimated; error median %.1f s, max %.1f s",
				probes, requests, len(errs), partitions, errs[len(errs)/2], maxOf(errs))
		}
	}
}

func maxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// TestRecordReadOfManyOffsetsPerPartitionIsOneFetchPerBroker: the groups of
// a partition sit at many offsets after a cold start; one read of the
// partition from the lowest of them returns the batches that hold the
// others, so every one is answered, exactly, by one Fetch per broker, not
// one round of Fetches per offset.
func TestRecordReadOfManyOffsetsPerPartitionIsOneFetchPerBroker(t *testing.T) {
	c := newColdStart(t)
	const perPartition = 10
	var wanted []saramatest.RecordAt
	for p := range int32(coldStartPartitions) {
		for i := range int64(perPartition) {
			offset := (c.committed[p] + i*int64(len(c.stamps))/perPartition) % int64(len(c.stamps))
			wanted = append(wanted, saramatest.RecordAt{TopicPartition: kafka.TopicPartition{Topic: "history", Partition: p}, Offset: offset})
		}
	}
	before := c.k.Requests(int16(kmsg.Fetch))
	found, err := saramatest.RecordTimestamps(context.Background(), c.cl, wanted)
	require.NoError(t, err)
	require.LessOrEqual(t, c.k.Requests(int16(kmsg.Fetch))-before, int64(3), "Fetch requests for %d offsets on %d partitions", len(wanted), coldStartPartitions)
	require.Len(t, found, len(wanted))
	for _, at := range wanted {
		ts := found[at]
		require.Equal(t, kafka.RecordTimed, ts.Found, "%v", at)
		require.Equal(t, at.Offset, ts.Offset, "%v", at)
		require.Equal(t, c.stamps[at.Offset].UnixMilli(), time.Unix(0, ts.Timestamp).UnixMilli(), "%v", at)
	}
}

// TestRecordReadGoesOnPastWhatOneFetchReturned: offsets of one partition
// further apart than one read returns (1 MiB a partition) are answered
// too: the first from the first Fetch, the other from a second one that
// starts at it.
func TestRecordReadGoesOnPastWhatOneFetchReturned(t *testing.T) {
	k := kfaketest.New(t, 1, nil)
	k.CreateTopic("large", 1)
	start := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	value := make([]byte, 600<<10)
	_, _ = rand.NewChaCha8([32]byte{}).Read(value) // incompressible
	for i := range 3 {
		// One record of 600 KiB a batch: two batches do not fit one read.
		record := &kgo.Record{Topic: "large", Partition: 0, Timestamp: start.Add(time.Duration(i) * time.Minute), Value: value}
		require.NoError(t, k.Client.ProduceSync(context.Background(), record).FirstErr())
	}
	cl, err := open(saramatest.Settings(k.Addrs))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cl.Close()) })
	tp := kafka.TopicPartition{Topic: "large", Partition: 0}
	wanted := []saramatest.RecordAt{{TopicPartition: tp, Offset: 0}, {TopicPartition: tp, Offset: 2}}
	_, err = cl.EndOffsets(context.Background(), []kafka.TopicPartition{tp}) // connect first
	require.NoError(t, err)
	before := k.Requests(int16(kmsg.Fetch))
	found, err := saramatest.RecordTimestamps(context.Background(), cl, wanted)
	require.NoError(t, err)
	require.Equal(t, int64(2), k.Requests(int16(kmsg.Fetch))-before, "one Fetch from offset 0, one more from offset 2")
	for _, at := range wanted {
		ts, ok := found[at]
		require.True(t, ok, "%v answered", at)
		require.Equal(t, kafka.RecordTimed, ts.Found)
		require.Equal(t, at.Offset, ts.Offset)
		require.Equal(t, start.Add(time.Duration(at.Offset)*time.Minute).UnixNano(), ts.Timestamp)
	}
}

// TestRecordReadAsksAgainForABatchLargerThanTheFirstRead: a record read
// first asks each partition for 64 KiB; a partition whose batch is larger
// comes back without it unless it is the response's first (KIP-74), and is
// asked again with 1 MiB, in one more Fetch, and answered exactly. Of two
// such partitions one at least is not first.
func TestRecordReadAsksAgainForABatchLargerThanTheFirstRead(t *testing.T) {
	k := kfaketest.New(t, 1, nil)
	k.CreateTopic("mixed", 3)
	start := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	k.Produce("mixed", 0, start, start.Add(time.Second))
	value := make([]byte, 300<<10)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(value) // incompressible
	for p := int32(1); p <= 2; p++ {
		large := &kgo.Record{Topic: "mixed", Partition: p, Timestamp: start.Add(time.Duration(p) * time.Minute), Value: value}
		require.NoError(t, k.Client.ProduceSync(context.Background(), large).FirstErr())
	}
	cl, err := open(saramatest.Settings(k.Addrs))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cl.Close()) })
	tp := func(p int32) kafka.TopicPartition { return kafka.TopicPartition{Topic: "mixed", Partition: p} }
	_, err = cl.EndOffsets(context.Background(), []kafka.TopicPartition{tp(0), tp(1), tp(2)}) // connect first
	require.NoError(t, err)
	wanted := []saramatest.RecordAt{{TopicPartition: tp(0), Offset: 1}, {TopicPartition: tp(1), Offset: 0}, {TopicPartition: tp(2), Offset: 0}}
	before := k.Requests(int16(kmsg.Fetch))
	found, err := saramatest.RecordTimestamps(context.Background(), cl, wanted)
	require.NoError(t, err)
	require.Equal(t, int64(2), k.Requests(int16(kmsg.Fetch))-before, "64 KiB a partition, then 1 MiB for a large batch")
	// One producer (the test cluster's client) wrote them all.
	producer := found[wanted[0]].Producer
	require.Equal(t, kafka.RecordTimestamp{Offset: 1, Timestamp: start.Add(time.Second).UnixNano(), ByProducer: true, Producer: producer}, found[wanted[0]])
	for p := int32(1); p <= 2; p++ {
		require.Equal(t, kafka.RecordTimestamp{Offset: 0, Timestamp: start.Add(time.Duration(p) * time.Minute).UnixNano(), ByProducer: true, Producer: producer}, found[wanted[p]])
	}
}
