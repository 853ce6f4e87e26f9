//go:build kafka

package kafkatimelagreceiver

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/apachekafka"
)

// TestApacheKafkaRetentionByRealSegments: three topics of 8 KB segments
// (internal.segment.bytes; segment.bytes has a 1 MB floor) written with a
// record of 1,000 random bytes every 200 ms, a group stopped at offset 10 on
// each, and the broker's retention checks every second: "sized" is deleted
// by retention.bytes (30,000), "timed" by retention.ms (8 s; LogAppendTime,
// whose stamps date the records however old the receiver's tables are),
// "purged" (kept for ever) by a job's DeleteRecords (a record a second from
// the log start). The receiver, sampled and scraped every second, predicts
// each deletion before it comes: of the margins reported in the last 4 s
// before it, none predicts it later than it came, and each predicts it to
// within the larger of 10 % of the time left and the broker's granularity
// (one segment's worth of time and a retention check, 3 s, or for
// DeleteRecords one job step and one read of the log start, 2 s). Once the
// record at the group's offset is gone, every scrape says so
// (lost_messages): no margin is about the gone record.
func TestApacheKafkaRetentionByRealSegments(t *testing.T) {
	requireNoLeakedGoroutines(t)
	k := newRealKafka(t, apachekafka.Options{})
	const (
		committed = 10
		step      = 200 * time.Millisecond
	)
	topics := map[string]map[string]string{
		"sized":  {"retention.bytes": "30000", "retention.ms": "-1"},
		"timed":  {"retention.ms": "8000", "message.timestamp.type": "LogAppendTime"},
		"purged": {"retention.ms": "-1"},
	}
	granularity := map[string]time.Duration{"sized": 3 * time.Second, "timed": 3 * time.Second, "purged": 2 * time.Second}
	for topic, configs := range topics {
		configs["internal.segment.bytes"] = "8000"
		k.createTopic(topic, 1, configs)
	}
	ctx := context.Background()
	produce := func() {
		var records []*kgo.Record
		for topic := range topics {
			value := make([]byte, 1000)
			_, _ = rand.Read(value)
			records = append(records, &kgo.Record{Topic: topic, Value: value})
		}
		k.produceSync(k.client, records...)
	}
	for range committed {
		produce()
	}
	offsets := kadm.Offsets{}
	for topic := range topics {
		offsets.Add(kadm.Offset{Topic: topic, Partition: 0, At: committed, LeaderEpoch: -1})
	}
	resp, err := k.admin.CommitOffsets(ctx, "stuck", offsets)
	require.NoError(t, err)
	require.NoError(t, resp.Error())

	cfg := k.config()
	cfg.RateWindow = 10 * time.Second
	s := startScraper(t, cfg)
	reported := map[string][]marginPoint{}
	deleted := map[string]time.Time{}
	var purgedStart int64
	ticker := time.NewTicker(step)
	defer ticker.Stop()
	for i := 1; len(deleted) < len(topics); i++ {
		<-ticker.C
		require.Less(t, i, 600, "the log starts did not all pass the group's offset in 2 minutes: %v", deleted)
		produce()
		if i%5 != 0 {
			continue
		}
		{
			purgedStart++
			res, err := k.admin.DeleteRecords(ctx, kadm.Offsets{"purged": {0: {Topic: "purged", At: purgedStart}}})
			require.NoError(t, err)
			require.NoError(t, res.Error())
		}
		// The log starts listed before the receiver's sample reads them:
		// what the test takes for gone, the receiver has seen gone too (a
		// retention check between the two would otherwise delete what the
		// scrape cannot know of yet).
		starts, err := k.admin.ListStartOffsets(ctx, "sized", "timed", "purged")
		require.NoError(t, err)
		require.NoError(t, s.sampler.Sample(ctx, true))
		md, err := s.scrape(ctx)
		require.NoError(t, err)
		margins := marginsOf(md)
		lostMessages := pointsOf(md, "kafka.consumer_group.lost_messages")
		for topic := range topics {
			m, ok := margins[[2]string{"stuck", topic}]
			start, _ := starts.Lookup(topic, 0)
			lost, known := lostMessages[pointKey{"stuck", topic, 0}]
			if known && lost.intValue > 0 && start.Offset <= committed {
				// Deleted between the listing and the receiver's sample:
				// the receiver saw it first.
				start.Offset = committed + lost.intValue
			}
			if _, gone := deleted[topic]; gone || start.Offset > committed {
				if !gone {
					deleted[topic] = time.Now()
				}
				// The record at the group's offset is gone: the scrape
				// says so (lost_messages), and a margin it reports is the
				// next record's, the oldest the group has not consumed.
				require.True(t, known && lost.intValue >= start.Offset-committed,
					"%s: the log start %d passed the group's offset %d, the scrape reports %d lost and a margin of %.2f s (%s, reported %v): the gone record said to go later",
					topic, start.Offset, committed, lost.intValue, m.seconds, m.basis, ok)
				continue
			}
			if ok {
				reported[topic] = append(reported[topic], m)
			}
		}
	}
	for topic, at := range deleted {
		var checked int
		for _, m := range reported[topic] {
			left := at.Sub(m.at)
			if left > 4*time.Second {
				continue
			}
			checked++
			predicted := m.at.Add(time.Duration(m.seconds * float64(time.Second)))
			require.False(t, predicted.After(at), "%s: margin %.2f s (%s) reported %v before the deletion predicts it later", topic, m.seconds, m.basis, left)
			require.InDelta(t, 0, predicted.Sub(at).Seconds(), max(left/10, granularity[topic]).Seconds(),
				"%s: margin %.2f s (%s) reported %v before the deletion", topic, m.seconds, m.basis, left)
		}
		require.GreaterOrEqual(t, checked, 2, "%s: margins reported in the last 4 s before the deletion: %v", topic, reported[topic])
		t.Logf("%s: deleted %v; margins reported %v", topic, at.Format(time.StampMilli), reported[topic])
	}
}
