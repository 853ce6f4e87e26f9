//go:build !unit

package main

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/scaleload"
)

func TestChurnNeedsBusyAndSaneSettings(t *testing.T) {
	require.NoError(t, churnOptions{}.check(false), "off: nothing to check")
	require.ErrorContains(t, churnOptions{on: true, every: time.Second}.check(false), "-churn needs -busy")
	require.ErrorContains(t, churnOptions{on: true}.check(true), "-churn-every 0s")
	require.ErrorContains(t, churnOptions{on: true, every: time.Second, behind: -1}.check(true), "-churn-behind -1")
	require.ErrorContains(t, churnOptions{on: true, every: time.Second, behind: 5, behindMin: 6, warmup: 1}.check(true), "-churn-behind-min 6")
	require.ErrorContains(t, churnOptions{on: true, every: time.Second}.check(true), "-churn-warmup 0")
	require.NoError(t, churnOptions{on: true, every: time.Second, behind: 5, warmup: 4}.check(true))
}

// Busy runs measure from the first scrape that read no record; churn runs,
// whose every scrape reads records, after a fixed warm-up.
func TestChurnSettlesAfterItsWarmup(t *testing.T) {
	busy := churnOptions{}
	require.False(t, busy.settled(9, 3))
	require.True(t, busy.settled(2, 0))
	churn := churnOptions{on: true, warmup: 4}
	require.False(t, churn.settled(4, 0), "three scrapes after the first")
	require.True(t, churn.settled(5, 3))
}

// A churn round commits every group on every partition, each at most
// behind records behind the end, and a churn run keeps doing so until its
// context ends. At a small size: the mode's figures at 1,000,000 pairs
// come from scalebench itself (BENCHMARKS.md).
func TestChurnCommitsEveryGroupBehindTheEnd(t *testing.T) {
	k, err := scaleload.Start(1)
	require.NoError(t, err)
	defer k.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := scaleload.Workload{Groups: 3, Topics: 2, PartitionsPerTopic: 4}
	require.NoError(t, k.Load(ctx, w))
	write := func(n int) {
		var records []*kgo.Record
		for topic := range w.Topics {
			for p := range w.PartitionsPerTopic {
				for range n {
					records = append(records, &kgo.Record{Topic: w.Topic(topic), Partition: p, Value: []byte("x")})
				}
			}
		}
		require.NoError(t, k.Client.ProduceSync(ctx, records...).FirstErr())
	}
	// committed is every group's committed offset on every partition, and
	// the end offsets.
	committed := func() (map[string]map[string]map[int32]int64, map[string]map[int32]int64) {
		out := map[string]map[string]map[int32]int64{}
		for g := range w.Groups {
			fetched, err := k.Admin.FetchOffsets(ctx, w.Group(g))
			require.NoError(t, err)
			out[w.Group(g)] = map[string]map[int32]int64{}
			fetched.Each(func(o kadm.OffsetResponse) {
				if out[w.Group(g)][o.Topic] == nil {
					out[w.Group(g)][o.Topic] = map[int32]int64{}
				}
				out[w.Group(g)][o.Topic][o.Partition] = o.At
			})
		}
		ends := map[string]map[int32]int64{}
		for topic := range w.Topics {
			listed, err := k.Admin.ListEndOffsets(ctx, w.Topic(topic))
			require.NoError(t, err)
			listed.Each(func(o kadm.ListedOffset) {
				if ends[o.Topic] == nil {
					ends[o.Topic] = map[int32]int64{}
				}
				ends[o.Topic][o.Partition] = o.Offset
			})
		}
		return out, ends
	}

	write(30)
	const behind = 10
	require.NoError(t, commitChurnOnce(ctx, k, w, 0, behind, rand.New(rand.NewPCG(1, 1))))
	offsets, ends := committed()
	distinct := map[int64]bool{}
	for g := range w.Groups {
		for topic := range w.Topics {
			for p := range w.PartitionsPerTopic {
				at, end := offsets[w.Group(g)][w.Topic(topic)][p], ends[w.Topic(topic)][p]
				require.Equal(t, int64(scaleload.RecordsPerPartition+30), end)
				require.GreaterOrEqual(t, at, end-behind, "%s %s/%d", w.Group(g), w.Topic(topic), p)
				require.LessOrEqual(t, at, end, "%s %s/%d", w.Group(g), w.Topic(topic), p)
				distinct[at] = true
			}
		}
	}
	require.Greater(t, len(distinct), 1, "groups sit at different offsets")

	// Far behind: from behindMin on.
	require.NoError(t, commitChurnOnce(ctx, k, w, 6, behind, rand.New(rand.NewPCG(1, 1))))
	offsets, ends = committed()
	for g := range w.Groups {
		for p := range w.PartitionsPerTopic {
			at, end := offsets[w.Group(g)][w.Topic(0)][p], ends[w.Topic(0)][p]
			require.GreaterOrEqual(t, at, end-behind)
			require.LessOrEqual(t, at, end-6, "at least -churn-behind-min behind")
		}
	}

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- commitChurn(runCtx, k, w, churnOptions{on: true, every: 20 * time.Millisecond, behind: 0}, 0)
	}()
	write(5)
	require.Eventually(t, func() bool {
		offsets, ends := committed()
		for g := range w.Groups {
			for topic := range w.Topics {
				for p := range w.PartitionsPerTopic {
					if offsets[w.Group(g)][w.Topic(topic)][p] != ends[w.Topic(topic)][p] {
						return false
					}
				}
			}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond, "with -churn-behind 0 every group catches up with the new end")
	stop()
	require.NoError(t, <-done, "a run ends cleanly with its context")
}
