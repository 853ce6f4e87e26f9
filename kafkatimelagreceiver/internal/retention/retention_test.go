package retention

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
)

// fakeReader answers from configs and records what it was asked.
type fakeReader struct {
	configs map[string]kafka.TopicRetention
	asked   [][]string
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

	require.NoError(t, c.Refresh(ctx, []string{"orders", "users", "forever", "both", "orders"}, now))
	require.Equal(t, [][]string{{"both", "forever", "orders", "users"}}, f.asked, "one call, each topic once")
	limit, ok := c.Limit("orders")
	require.True(t, ok)
	require.Equal(t, 24*time.Hour, limit)
	_, ok = c.Limit("users")
	require.False(t, ok, "compacted only: nothing is deleted by time")
	_, ok = c.Limit("forever")
	require.False(t, ok, "retention.ms -1")
	limit, ok = c.Limit("both")
	require.True(t, ok)
	require.Equal(t, time.Hour, limit)

	require.NoError(t, c.Refresh(ctx, []string{"orders", "users", "forever", "both"}, now.Add(time.Minute)))
	require.Len(t, f.asked, 1, "cached")
	require.NoError(t, c.Refresh(ctx, []string{"orders", "late-born"}, now.Add(2*time.Minute)))
	require.Equal(t, []string{"late-born"}, f.asked[1], "a new topic is read at once")
	_, ok = c.Limit("users")
	require.False(t, ok)
	require.NoError(t, c.Refresh(ctx, []string{"orders", "late-born"}, now.Add(RefreshInterval)))
	require.Equal(t, []string{"orders"}, f.asked[2], "re-read after RefreshInterval")

	require.Error(t, c.Refresh(ctx, []string{"denied"}, now.Add(RefreshInterval)))
	require.NoError(t, c.Refresh(ctx, []string{"denied"}, now.Add(RefreshInterval+time.Minute)))
	require.Len(t, f.asked, 4, "a topic that cannot be read is not asked again every scrape")
	_, ok = c.Limit("denied")
	require.False(t, ok)
}

func TestMargins(t *testing.T) {
	f := &fakeReader{configs: map[string]kafka.TopicRetention{
		"orders":  {Delete: true, RetentionMs: 60_000, RetentionBytes: -1},
		"users":   {Delete: false, RetentionMs: 60_000, RetentionBytes: -1},
		"billing": {Delete: true, RetentionMs: 10_000, RetentionBytes: -1},
	}}
	c := NewCache(f)
	require.NoError(t, c.Refresh(context.Background(), []string{"orders", "users", "billing"}, time.Now()))
	pl := func(group, topic string, p int32, lagged int64, timeLag float64) lag.PartitionLag {
		return lag.PartitionLag{Group: group, TopicPartition: kafka.TopicPartition{Topic: topic, Partition: p},
			HasEnd: true, Lag: lagged, HasTimeLag: true, TimeLag: timeLag, CaughtUp: lagged == 0}
	}
	lags := []lag.PartitionLag{
		pl("a", "billing", 0, 5, 12), // overdue: -2
		pl("a", "orders", 0, 5, 10),
		pl("a", "orders", 1, 5, 40),
		pl("a", "orders", 2, 0, 0), // caught up
		pl("a", "users", 0, 5, 30), // compacted
		pl("b", "orders", 0, 0, 0), // caught up
	}
	require.Equal(t, []TopicMargin{
		{Group: "a", Topic: "billing", Seconds: -2},
		{Group: "a", Topic: "orders", Seconds: 20},
	}, c.TopicMargins(nil, lags))

	_, ok := Margin(&lags[3], time.Minute)
	require.False(t, ok, "caught up")
	noTimeLag := pl("a", "orders", 0, 5, 0)
	noTimeLag.HasTimeLag = false
	_, ok = Margin(&noTimeLag, time.Minute)
	require.False(t, ok, "no time lag, no margin")

	// A pair whose end offset or time lag is unknown may be the one nearest
	// deletion: the topic gets no margin rather than the others' smallest.
	unread := pl("c", "orders", 1, 0, 0)
	unread.HasEnd, unread.CaughtUp = false, false
	undated := pl("d", "orders", 1, 5, 0)
	undated.HasTimeLag = false
	partial := []lag.PartitionLag{
		pl("c", "orders", 0, 5, 10), unread,
		pl("d", "orders", 0, 5, 10), undated,
		pl("e", "orders", 0, 5, 10), pl("e", "orders", 1, 0, 0),
	}
	require.Equal(t, []TopicMargin{{Group: "e", Topic: "orders", Seconds: 50}}, c.TopicMargins(nil, partial))
}
