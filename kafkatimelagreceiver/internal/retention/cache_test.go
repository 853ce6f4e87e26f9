package retention

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// fakeReader answers from configs, sizes and starts, and records what it
// was asked.
type fakeReader struct {
	configs      map[string]kafka.TopicRetention
	sizes        map[kafka.TopicPartition]int64
	starts       map[kafka.TopicPartition]int64
	asked        [][]string
	askedSizes   [][]kafka.TopicPartition
	askedStarts  int
	failingSizes bool
}

func (f *fakeReader) TopicRetention(_ context.Context, topics []string) (map[string]kafka.TopicRetention, error) {
	f.asked = append(f.asked, topics)
	out := map[string]kafka.TopicRetention{}
	var err error
	for _, t := range topics {
		if r, ok := f.configs[t]; ok {
			out[t] = r
		} else {
			err = errors.Join(err, errors.New("denied: "+t))
		}
	}
	return out, err
}

func (f *fakeReader) PartitionSizes(_ context.Context, tps []kafka.TopicPartition) (map[kafka.TopicPartition]int64, error) {
	f.askedSizes = append(f.askedSizes, tps)
	out := map[kafka.TopicPartition]int64{}
	if f.failingSizes {
		return out, errors.New("describe log dirs: cluster authorization failed")
	}
	for _, tp := range tps {
		if s, ok := f.sizes[tp]; ok {
			out[tp] = s
		}
	}
	return out, nil
}

func (f *fakeReader) StartOffsets(_ context.Context, tps []kafka.TopicPartition) (kafka.OffsetRead, error) {
	f.askedStarts++
	read := kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{}}
	for _, tp := range tps {
		read.Offsets[tp] = f.starts[tp]
	}
	return read, nil
}

func tp(topic string, p int32) kafka.TopicPartition {
	return kafka.TopicPartition{Topic: topic, Partition: p}
}

// endsOf is end offsets of 100 for each partition.
func endsOf(tps ...kafka.TopicPartition) map[kafka.TopicPartition]int64 {
	out := map[kafka.TopicPartition]int64{}
	for _, tp := range tps {
		out[tp] = 100
	}
	return out
}

func TestCacheReadsNewTopicsAtOnceAndOthersEveryFewMinutes(t *testing.T) {
	day := kafka.TopicRetention{Delete: true, RetentionMs: 86_400_000, RetentionBytes: -1}
	f := &fakeReader{configs: map[string]kafka.TopicRetention{
		"orders":    day,
		"users":     {Delete: false, RetentionMs: 86_400_000, RetentionBytes: -1}, // compact only
		"forever":   {Delete: true, RetentionMs: -1, RetentionBytes: -1},
		"both":      {Delete: true, RetentionMs: 3_600_000, RetentionBytes: -1}, // compact,delete
		"late-born": day,
	}}
	c := NewCache(f)
	now := time.Unix(1_700_000_000, 0)
	ctx := context.Background()

	require.NoError(t, c.Refresh(ctx, endsOf(tp("orders", 0), tp("users", 0), tp("forever", 0), tp("both", 0), tp("orders", 1)), now))
	require.Equal(t, [][]string{{"both", "forever", "orders", "users"}}, f.asked, "one call, each topic once")
	limits := c.Limits()
	require.Equal(t, day, limits.Topics["orders"])
	require.Len(t, limits.Topics, 4)
	require.Empty(t, f.askedSizes, "no topic deletes by size: no size is read")

	require.NoError(t, c.Refresh(ctx, endsOf(tp("orders", 0), tp("users", 0), tp("forever", 0), tp("both", 0)), now.Add(time.Minute)))
	require.Len(t, f.asked, 1, "cached")
	require.NoError(t, c.Refresh(ctx, endsOf(tp("orders", 0), tp("late-born", 0)), now.Add(2*time.Minute)))
	require.Equal(t, []string{"late-born"}, f.asked[1], "a new topic is read at once")
	require.NotContains(t, c.Limits().Topics, "users", "no longer read")
	require.Contains(t, limits.Topics, "users", "Limits given out are left alone")
	require.NoError(t, c.Refresh(ctx, endsOf(tp("orders", 0), tp("late-born", 0)), now.Add(RefreshInterval)))
	require.Equal(t, []string{"orders"}, f.asked[2], "re-read after RefreshInterval")

	require.Error(t, c.Refresh(ctx, endsOf(tp("denied", 0)), now.Add(RefreshInterval)))
	require.NoError(t, c.Refresh(ctx, endsOf(tp("denied", 0)), now.Add(RefreshInterval+time.Minute)))
	require.Len(t, f.asked, 4, "a topic that cannot be read is not asked again every scrape")
	require.NotContains(t, c.Limits().Topics, "denied")
}

// TestCacheReadsSizesOfTopicsDeletingBySize: the partitions of topics with
// retention.bytes (tiered ones aside) have their size and log start read
// in one call each, and their bytes per offset is the size over the
// offsets from that start to the end the scrape read; a new partition has
// them all read again at once, and they are read again after
// RefreshInterval; a failed read keeps what was known and is not retried
// before RefreshInterval; a partition no longer read is dropped.
func TestCacheReadsSizesOfTopicsDeletingBySize(t *testing.T) {
	f := &fakeReader{
		configs: map[string]kafka.TopicRetention{
			"sized":  {Delete: true, RetentionMs: 604_800_000, RetentionBytes: 300 << 10},
			"timed":  {Delete: true, RetentionMs: 600_000, RetentionBytes: -1},
			"tiered": {Delete: true, RetentionMs: 604_800_000, RetentionBytes: 1 << 40, RemoteStorage: true},
		},
		sizes:  map[kafka.TopicPartition]int64{tp("sized", 0): 80_000, tp("sized", 1): 1_000, tp("sized", 2): 500, tp("tiered", 0): 1 << 30},
		starts: map[kafka.TopicPartition]int64{tp("sized", 0): 20, tp("sized", 1): 90, tp("sized", 2): 50},
	}
	c := NewCache(f)
	now := time.Unix(1_700_000_000, 0)
	ctx := context.Background()
	ends := endsOf(tp("sized", 0), tp("sized", 1), tp("timed", 0), tp("tiered", 0))

	require.NoError(t, c.Refresh(ctx, ends, now))
	require.Equal(t, [][]kafka.TopicPartition{{tp("sized", 0), tp("sized", 1)}}, f.askedSizes, "one call, for the partitions deleting by size only")
	require.Equal(t, 1, f.askedStarts)
	require.Equal(t, map[kafka.TopicPartition]float64{tp("sized", 0): 80_000.0 / 80, tp("sized", 1): 1_000.0 / 10}, c.Limits().BytesPerOffset)

	require.NoError(t, c.Refresh(ctx, ends, now.Add(time.Minute)))
	require.Len(t, f.askedSizes, 1, "cached")
	ends[tp("sized", 2)] = 100
	require.NoError(t, c.Refresh(ctx, ends, now.Add(2*time.Minute)))
	require.Equal(t, []kafka.TopicPartition{tp("sized", 0), tp("sized", 1), tp("sized", 2)}, f.askedSizes[1], "a new partition has them all read at once")
	require.InDelta(t, 10, c.Limits().BytesPerOffset[tp("sized", 2)], 1e-9)

	f.failingSizes = true
	require.Error(t, c.Refresh(ctx, ends, now.Add(2*time.Minute+RefreshInterval)))
	require.InDelta(t, 1000, c.Limits().BytesPerOffset[tp("sized", 0)], 1e-9, "a failed read keeps what was read before")
	require.NoError(t, c.Refresh(ctx, ends, now.Add(3*time.Minute+RefreshInterval)))
	require.Len(t, f.askedSizes, 3, "and is not retried every scrape")

	delete(ends, tp("sized", 1))
	require.NoError(t, c.Refresh(ctx, ends, now.Add(4*time.Minute+RefreshInterval)))
	require.NotContains(t, c.Limits().BytesPerOffset, tp("sized", 1), "no longer read")

	fresh := NewCache(f)
	require.Error(t, fresh.Refresh(ctx, ends, now))
	require.Empty(t, fresh.Limits().BytesPerOffset, "never read: not known")
	require.Contains(t, fresh.Limits().Topics, "sized")
}
