package progress

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
)

func TestDrainTime(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	tests := []struct {
		name             string
		lag              int64
		consume, produce float64
		want             float64
		ok               bool
	}{
		{"catching up", 6000, 300, 100, 30, true},
		{"nothing produced", 500, 50, 0, 10, true},
		{"no lag", 0, 0, 0, 0, true},
		{"no lag, falling behind", 0, 10, 500, 0, true},
		{"negative lag is none", -5, 1, 2, 0, true},
		{"equal rates: never drains", 6000, 100, 100, 0, false},
		{"keeping pace: within 5 % of production, the rates' noise", 200, 100.1, 100, 0, false},
		{"just over 5 % faster drains", 600, 106, 100, 100, true},
		{"falling behind", 6000, 50, 100, 0, false},
		{"stopped", 6000, 0, 100, 0, false},
		{"idle with lag", 6000, 0, 0, 0, false},
		{"NaN consumption", 6000, nan, 100, 0, false},
		{"NaN production", 6000, 100, nan, 0, false},
		{"infinite consumption", 6000, inf, 100, 0, true},
		{"infinite production", 6000, 100, inf, 0, false},
		{"a net rate so small the time overflows", math.MaxInt64, 5e-324, 0, 0, false},
		{"a huge lag drains in finite time", math.MaxInt64, 1e6, 0, math.MaxInt64 / 1e6, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := DrainTime(tt.lag, tt.consume, tt.produce)
			require.Equal(t, tt.ok, ok)
			require.False(t, math.IsNaN(got) || math.IsInf(got, 0) || got < 0, "got %v", got)
			require.InDelta(t, tt.want, got, 1e-9*max(1, tt.want))
		})
	}
}

func TestSummarize(t *testing.T) {
	type partition struct {
		lag        int64 // -1: end offset not read
		produce    float64
		hasProduce bool
		consume    float64
		hasConsume bool
		stuck      float64
	}
	build := func(group, topic string, ps ...partition) ([]lag.PartitionLag, []Partition) {
		var lags []lag.PartitionLag
		var parts []Partition
		for i, p := range ps {
			pl := lag.PartitionLag{Group: group}
			pl.Topic, pl.Partition = topic, int32(i)
			if p.lag >= 0 {
				pl.HasEnd, pl.Lag = true, p.lag
				pl.ProduceRate, pl.HasProduceRate = p.produce, p.hasProduce
			}
			lags = append(lags, pl)
			parts = append(parts, Partition{ConsumeRate: p.consume, HasConsumeRate: p.hasConsume, Stuck: p.stuck, HasStuck: p.lag >= 0})
		}
		return lags, parts
	}
	concat := func(a, b []lag.PartitionLag, pa, pb []Partition) ([]lag.PartitionLag, []Partition) {
		return append(a, b...), append(pa, pb...)
	}

	// g/catching-up: 3,000 behind in all, 250/s consumed against 100/s
	// produced: 20 s. g/behind: 50/s short. h/idle: caught up, nothing
	// moves. h/warming-up: a partition without a consumption rate yet.
	lags, parts := build("g", "catching-up",
		partition{lag: 1000, produce: 40, hasProduce: true, consume: 100, hasConsume: true},
		partition{lag: 2000, produce: 60, hasProduce: true, consume: 150, hasConsume: true, stuck: 0})
	l2, p2 := build("g", "behind",
		partition{lag: 500, produce: 100, hasProduce: true, consume: 50, hasConsume: true, stuck: 30},
		partition{lag: 0, produce: 0, hasProduce: true, consume: 0, hasConsume: true})
	lags, parts = concat(lags, l2, parts, p2)
	l3, p3 := build("h", "idle", partition{lag: 0, hasProduce: true, hasConsume: true})
	lags, parts = concat(lags, l3, parts, p3)
	l4, p4 := build("h", "warming-up",
		partition{lag: 0, produce: 10, hasProduce: true},
		partition{lag: 80, produce: 10, hasProduce: true, consume: 20, hasConsume: true, stuck: 12})
	lags, parts = concat(lags, l4, parts, p4)
	l5, p5 := build("h", "unread", partition{lag: -1, consume: 5, hasConsume: true})
	lags, parts = concat(lags, l5, parts, p5)
	l7, p7 := build("h", "partly-read",
		partition{lag: 3, produce: 1, hasProduce: true, consume: 2, hasConsume: true, stuck: 4},
		partition{lag: -1, consume: 2, hasConsume: true, stuck: 600})
	lags, parts = concat(lags, l7, parts, p7)

	got := Summarize(nil, lags, parts)
	require.Equal(t, []Topic{
		{Group: "g", Topic: "catching-up", ConsumeRate: 250, HasConsumeRate: true, Trend: -150, HasTrend: true, Drain: 20, HasDrain: true, HasStuck: true},
		{Group: "g", Topic: "behind", ConsumeRate: 50, HasConsumeRate: true, Trend: 50, HasTrend: true, Stuck: 30, HasStuck: true},
		{Group: "h", Topic: "idle", HasConsumeRate: true, HasTrend: true, HasDrain: true, HasStuck: true},
		// Without every partition's consumption rate, no sum is told; the
		// lag is not 0, so neither is a drain time.
		{Group: "h", Topic: "warming-up", Stuck: 12, HasStuck: true},
		// No end offset: nothing known of the lag.
		{Group: "h", Topic: "unread", ConsumeRate: 5, HasConsumeRate: true},
		// One partition unread: the longest stuck time of the other would
		// understate the topic's, and its lag is unknown, so no drain.
		{Group: "h", Topic: "partly-read", ConsumeRate: 4, HasConsumeRate: true},
	}, got)

	// A caught-up group gets 0 at once, before any rate is known.
	l6, p6 := build("h", "new", partition{lag: 0}, partition{lag: 0})
	require.Equal(t, []Topic{{Group: "h", Topic: "new", HasDrain: true, HasStuck: true}}, Summarize(nil, l6, p6))
	require.Empty(t, Summarize(nil, nil, nil))
}

// TestDrainOfLagsAtTheInt64Limit: a topic whose partitions' lags add up
// past the int64 limit (a hostile broker's offsets) has a long time to
// drain, not a sum wrapped to a negative lag that reads as drained.
func TestDrainOfLagsAtTheInt64Limit(t *testing.T) {
	tp := func(p int32) kafka.TopicPartition { return kafka.TopicPartition{Topic: "t", Partition: p} }
	lags := []lag.PartitionLag{
		{Group: "g", TopicPartition: tp(0), HasEnd: true, Lag: math.MaxInt64 - 1, ProduceRate: 1, HasProduceRate: true},
		{Group: "g", TopicPartition: tp(1), HasEnd: true, Lag: math.MaxInt64 - 1, ProduceRate: 1, HasProduceRate: true},
	}
	parts := []Partition{{ConsumeRate: 3, HasConsumeRate: true}, {ConsumeRate: 3, HasConsumeRate: true}}
	topics := Summarize(nil, lags, parts)
	require.Len(t, topics, 1)
	require.True(t, topics[0].HasDrain)
	require.InDelta(t, float64(math.MaxInt64)/4, topics[0].Drain, 1e6, "the saturated sum over the net rate")
}
