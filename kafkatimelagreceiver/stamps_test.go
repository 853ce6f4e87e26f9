//go:build !unit

package kafkatimelagreceiver

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// requireTimeLagsWithin scrapes s scrapes times and requires every time lag
// of group on topic's partition 0, committed at the record appended in w,
// to lie within a second of its true age.
func requireTimeLagsWithin(t *testing.T, s *timeLagScraper, group, topic string, w appendWindow, scrapes int) (dated int) {
	t.Helper()
	for scrape := range scrapes {
		before := time.Now()
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		after := time.Now()
		tl, ok := pointsOf(md, "kafka.consumer_group.time_lag")[pointKey{group, topic, 0}]
		if !ok {
			continue
		}
		dated++
		lo, hi := before.Sub(w.by).Seconds(), after.Sub(w.after).Seconds()
		require.GreaterOrEqual(t, tl.doubleValue, lo-1, "scrape %d: %.3f s for a record appended %.3f to %.3f s before", scrape, tl.doubleValue, lo, hi)
		require.LessOrEqual(t, tl.doubleValue, hi+1, "scrape %d: %.3f s for a record appended %.3f to %.3f s before", scrape, tl.doubleValue, lo, hi)
		time.Sleep(50 * time.Millisecond)
	}
	return dated
}

// TestStampAheadMovesNoOtherRecord: the record after a group's offset
// carries a stamp far ahead (a clock ahead, a year past 2262 that would
// wrap nanoseconds, a producer stamping microseconds), both written before
// the receiver's first scrape (older than its tables). The stamp gives no
// time and measures no clock: every time lag of the group, from the first
// scrape on while the partition keeps being written, is within a second of
// its record's age, or withheld until the records the tables bound show
// the partition's stamps, and then dated; from the time index and from
// record reads alike.
func TestStampAheadMovesNoOtherRecord(t *testing.T) {
	for _, tt := range []struct {
		name  string
		stamp func(now time.Time) time.Time
	}{
		{"10 s ahead", func(now time.Time) time.Time { return now.Add(10 * time.Second) }},
		{"an hour ahead", func(now time.Time) time.Time { return now.Add(time.Hour) }},
		{"23 hours ahead", func(now time.Time) time.Time { return now.Add(23 * time.Hour) }},
		{"30 hours ahead", func(now time.Time) time.Time { return now.Add(30 * time.Hour) }},
		{"year 2200", func(time.Time) time.Time { return time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"past 2262", func(time.Time) time.Time { return time.UnixMilli(87_697_617_913_735_311) }},
		{"microseconds", func(now time.Time) time.Time { return time.UnixMilli(now.UnixMicro()) }},
	} {
		for _, source := range []string{TimestampSourceTimeIndex, TimestampSourceRecordReads} {
			t.Run(fmt.Sprintf("%s, %s", tt.name, source), func(t *testing.T) {
				k := newTestKafka(t, 1)
				k.CreateTopic("ahead", 1)
				k.Produce("ahead", 0, time.Now(), time.Now(), time.Now())
				w := appendWindow{after: time.Now()}
				first := k.Produce("ahead", 0, time.Now())
				w.by = time.Now()
				k.Produce("ahead", 0, tt.stamp(time.Now()))
				k.Commit("reader", "ahead", map[int32]int64{0: first})
				cfg := k.testConfig()
				cfg.TimestampSource = source
				s := startScraper(t, cfg)
				dated := 0
				for range 10 {
					dated += requireTimeLagsWithin(t, s, "reader", "ahead", w, 1)
					k.Produce("ahead", 0, time.Now())
					require.NoError(t, s.sampler.Sample(context.Background(), false))
					time.Sleep(20 * time.Millisecond)
				}
				require.Positive(t, dated, "the record is dated once the partition's stamps are shown")
			})
		}
	}
}

// TestCompactedGapIsDatedByTheNextRecord: on a compacted topic, the log
// cleaner removed the records at a group's committed offset (80 records of
// one key, written seconds ago, overwritten by an 81st just now, another
// key's record after it). The
// group's next record is that 81st: its time lag is the 81st's age, not
// the age the tables give the removed offset, from the time index and
// from record reads alike.
func TestCompactedGapIsDatedByTheNextRecord(t *testing.T) {
	for _, source := range []string{TimestampSourceTimeIndex, TimestampSourceRecordReads} {
		t.Run(source, func(t *testing.T) {
			k := newTestKafka(t, 1)
			compact := "compact"
			k.CreateTopicWith("changelog", 1, map[string]*string{"cleanup.policy": &compact})
			cfg := k.testConfig()
			cfg.TimestampSource = source
			s := startScraper(t, cfg)
			produce := func(key string, n int) int64 {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				var first int64 = -1
				for range n {
					r := &kgo.Record{Topic: "changelog", Partition: 0, Key: []byte(key), Value: []byte("v"), Timestamp: time.Now()}
					require.NoError(t, k.Client.ProduceSync(ctx, r).FirstErr())
					if first < 0 {
						first = r.Offset
					}
				}
				return first
			}
			for i := range 8 {
				at := produce(fmt.Sprintf("warm-%d", i), 1)
				require.NoError(t, s.sampler.Sample(context.Background(), false))
				time.Sleep(20 * time.Millisecond)
				k.Commit("warm", "changelog", map[int32]int64{0: at})
				_, err := s.scrape(context.Background())
				require.NoError(t, err)
			}
			gap := produce("dup", 80)
			require.NoError(t, s.sampler.Sample(context.Background(), false))
			time.Sleep(3 * time.Second)
			require.NoError(t, s.sampler.Sample(context.Background(), false))
			w := appendWindow{after: time.Now()}
			produce("dup", 1)
			w.by = time.Now()
			// The log cleaner leaves the last batch (the active segment's)
			// alone: one more behind it, of another key.
			produce("tail", 1)
			k.Cluster.Compact()
			require.NoError(t, s.sampler.Sample(context.Background(), false))
			k.Commit("reader", "changelog", map[int32]int64{0: gap + 40})
			require.Positive(t, requireTimeLagsWithin(t, s, "reader", "changelog", w, 4), "the next record dates the group")
		})
	}
}
