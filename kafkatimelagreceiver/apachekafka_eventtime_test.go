//go:build kafka

package kafkatimelagreceiver

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/apachekafka"
)

// TestApacheKafkaEventTimeFromAMirror: a topic replicated from one
// single-node cluster to another with its records' stamps kept, as
// MirrorMaker 2 does (Kafka's connect-mirror 4.4.0 is not on Maven Central,
// so a copier that keeps the source stamps stands in for it). The source
// stamps are 10 minutes old; the target appends the records in rounds a
// second apart, and its group sits a few rounds behind, seconds behind the
// target's appends. Two receivers watch the target, one sampling it while
// the copy runs and one started after: each reports the group's time lag
// from the target's appends (within the accuracy target), or withholds it;
// never the source stamps' age.
func TestApacheKafkaEventTimeFromAMirror(t *testing.T) {
	requireNoLeakedGoroutines(t)
	source := newRealKafka(t, apachekafka.Options{})
	target := newRealKafka(t, apachekafka.Options{})
	const topic, rounds, perRound = "events", 8, 20
	source.createTopic(topic, 1, nil)
	target.createTopic(topic, 1, nil)

	eventTime := time.Now().Add(-10 * time.Minute).Truncate(time.Millisecond)
	var events []*kgo.Record
	for i := range rounds * perRound {
		events = append(events, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("event %d", i)), Timestamp: eventTime.Add(time.Duration(i) * time.Second)})
	}
	source.produceSync(source.client, events...)

	warm := startScraper(t, target.config())
	copier, err := source.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	require.NoError(t, err)
	defer copier.Close()
	// appended[i] is when the target acknowledged round i: its records were
	// appended between the round's start and that.
	var appended []time.Time
	var copied []*kgo.Record
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for round := range rounds {
		if round > 0 {
			time.Sleep(time.Second) // the target's appends a round apart
		}
		for len(copied) < (round+1)*perRound {
			fetches := copier.PollRecords(ctx, (round+1)*perRound-len(copied))
			require.NoError(t, ctx.Err())
			for _, r := range fetches.Records() {
				copied = append(copied, &kgo.Record{Topic: topic, Value: r.Value, Timestamp: r.Timestamp})
			}
		}
		target.produceSync(target.client, copied[round*perRound:]...)
		appended = append(appended, time.Now())
		require.NoError(t, warm.sampler.Sample(context.Background(), true))
	}

	// The group read up to round 5: the records it reads next were appended
	// about 2 s before the last round, their stamps 10 minutes before that.
	const at = 5
	next := int64(at * perRound)
	resp, err := target.admin.CommitOffsets(context.Background(), "mirrored", kadm.Offsets{topic: {0: {Topic: topic, At: next, LeaderEpoch: -1}}})
	require.NoError(t, err)
	require.NoError(t, resp.Error())
	stamp := target.recordAt(topic, 0, next).Timestamp
	require.Equal(t, events[next].Timestamp, stamp, "the copy keeps the source stamp")

	cold := startScraper(t, target.config())
	key := pointKey{"mirrored", topic, 0}
	for name, s := range map[string]*timeLagScraper{"sampled during the copy": warm, "started after the copy": cold} {
		reported := 0
		for scrape := range 3 {
			md, err := s.scrape(context.Background())
			require.NoError(t, err)
			require.Equal(t, int64((rounds-at)*perRound), pointsOf(md, "kafka.consumer_group.lag")[key].intValue)
			tl, ok := pointsOf(md, "kafka.consumer_group.time_lag")[key]
			if !ok {
				continue // withheld: allowed
			}
			reported++
			stampAge := tl.timestamp.Sub(stamp).Seconds()
			// Appended after round at-1 was acknowledged, by round at's.
			earliest, latest := tl.timestamp.Sub(appended[at]).Seconds(), tl.timestamp.Sub(appended[at-1]).Seconds()
			require.Less(t, tl.doubleValue, stampAge/2, "%s, scrape %d: time lag %.1fs is the source stamp's age (%.1fs), not the target's append", name, scrape, tl.doubleValue, stampAge)
			require.GreaterOrEqual(t, tl.doubleValue, earliest-timeLagBound(earliest), "%s, scrape %d: time lag %.3fs, the record was appended %.3f-%.3fs before", name, scrape, tl.doubleValue, earliest, latest)
			require.LessOrEqual(t, tl.doubleValue, latest+timeLagBound(latest), "%s, scrape %d: time lag %.3fs, the record was appended %.3f-%.3fs before", name, scrape, tl.doubleValue, earliest, latest)
		}
		t.Logf("%s: time lag reported on %d of 3 scrapes, withheld on the others", name, reported)
	}
}
