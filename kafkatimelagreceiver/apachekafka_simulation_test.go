//go:build kafka

package kafkatimelagreceiver

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/accuracy"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/apachekafka"
)

// TestApacheKafkaSimulationAgrees is the simulated cluster of
// docs/accuracy.md checked against Apache Kafka: a steady partition
// written a record every 100 ms and read 1.5 s behind, and a bursty one
// written 200 records every 4 to 6 s and read part way, both
// LogAppendTime (the broker's stamps are the append times, the truth), 15
// s, each receiver row scraped every second. Afterwards the records are
// read back and the simulation's log built from their stamps: the time
// index Kafka answers and the one the simulation answers (Timeline) are
// the same record at every millisecond of the run; and the simulation,
// replaying the scrapes the receivers made, gives every scrape the time
// lag the receiver gave it, within 2 ms (as TestSimulationAgreesWithReceiver
// does on the in-process Kafka).
func TestApacheKafkaSimulationAgrees(t *testing.T) {
	const interval = time.Second
	k := newRealKafka(t, apachekafka.Options{})
	topics := []string{"steady", "bursty"}
	for _, topic := range topics {
		k.createTopic(topic, 1, map[string]string{"message.timestamp.type": "LogAppendTime"})
	}
	produce := func(topic string, n int) (first int64) {
		records := make([]*kgo.Record, n)
		for i := range records {
			records[i] = &kgo.Record{Topic: topic, Partition: 0, Value: make([]byte, accuracy.RecordSize)}
		}
		k.produceSync(k.client, records...)
		return records[0].Offset
	}
	commit := func(group, topic string, offset int64) {
		resp, err := k.admin.CommitOffsets(context.Background(), group, kadm.Offsets{topic: {0: {Topic: topic, At: offset, LeaderEpoch: -1}}})
		require.NoError(t, err)
		require.NoError(t, resp.Error())
	}
	for _, topic := range topics {
		// Committed before the first scrape, so that it tracks both.
		commit(topic+"-reader", topic, produce(topic, 1))
	}

	rows := receiverRows()
	receivers := make([]*replayedScraper, len(rows))
	for i, row := range rows {
		// Sampling every hour: the scrapes' reads are the tables' points.
		receivers[i] = startReplayedScraper(t, row.configure(k.config()))
	}
	runs := newScrapedRuns()
	rng := rand.New(rand.NewPCG(36, 1))
	var steadyTimes []time.Time
	steadyTimes = append(steadyTimes, time.Now())
	nextBurst, nextScrape, burstFirst := time.Now(), time.Now(), int64(1)
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		now := time.Now()
		produce("steady", 1)
		steadyTimes = append(steadyTimes, now)
		committed := int64(0)
		for committed < int64(len(steadyTimes)) && steadyTimes[committed].Before(now.Add(-1500*time.Millisecond)) {
			committed++
		}
		commit("steady-reader", "steady", committed)
		if !now.Before(nextBurst) {
			burstFirst = produce("bursty", 200)
			nextBurst = now.Add(4*time.Second + time.Duration(rng.Int64N(int64(2*time.Second))))
		}
		commit("bursty-reader", "bursty", burstFirst+rng.Int64N(200))
		if now.Before(nextScrape) {
			continue
		}
		nextScrape = now.Add(interval)
		for i, r := range receivers {
			runs.scrape(t, r, rows[i].method.Key)
		}
	}

	for _, topic := range topics {
		log := k.readBackLog(topic)
		k.requireSameTimeIndex(topic, log)
		for _, row := range rows {
			runs.requireAgreement(t, partitionRun{row.method.Key, topic, 0}, log, row.method, interval)
		}
	}
}

// readBackLog reads a LogAppendTime topic's partition 0 back and builds the
// simulation's log of it: each run of records appended in the same
// millisecond one batch, appended and stamped then, as the broker stamped
// them, on a topic the simulated cluster says is LogAppendTime.
func (k *realKafka) readBackLog(topic string) *accuracy.Timeline {
	k.t.Helper()
	ends, err := k.admin.ListEndOffsets(context.Background(), topic)
	require.NoError(k.t, err)
	end, ok := ends.Lookup(topic, 0)
	require.True(k.t, ok)
	cl, err := k.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	require.NoError(k.t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stamps []int64 // unix nanoseconds, by offset
	for int64(len(stamps)) < end.Offset {
		fetches := cl.PollFetches(ctx)
		require.NoError(k.t, ctx.Err(), "%s: read %d of %d records back", topic, len(stamps), end.Offset)
		for _, r := range fetches.Records() {
			require.Equal(k.t, int64(len(stamps)), r.Offset, "%s: offsets in order, none missing", topic)
			stamps = append(stamps, r.Timestamp.UnixMilli()*int64(time.Millisecond))
		}
	}
	log := &accuracy.Timeline{LogAppendTime: true}
	for from := 0; from < len(stamps); {
		to := from
		for to < len(stamps) && stamps[to] == stamps[from] {
			to++
		}
		log.AppendStamped(0, stamps[from], stamps[from], int64(to-from))
		from = to
	}
	return log
}

// requireSameTimeIndex asks Kafka's time index of the topic's partition 0
// and the simulation's log (Timeline.FirstStampedFrom) the same times:
// the millisecond of every record's stamp and those either side of it,
// and every tenth millisecond from before the first record to after the
// last. Both must answer the same offset with the same timestamp, or,
// past the last record, none (Kafka: the end offset).
func (k *realKafka) requireSameTimeIndex(topic string, log *accuracy.Timeline) {
	k.t.Helper()
	end := log.EndOffset()
	ms := int64(time.Millisecond)
	first, _ := log.AppendTime(0)
	last, _ := log.AppendTime(end - 1)
	times := map[int64]bool{}
	for at := first/ms - 5; at <= last/ms+5; at += 10 {
		times[at] = true
	}
	for o := range end {
		stamp, _ := log.Stamp(o)
		times[stamp/ms-1], times[stamp/ms], times[stamp/ms+1] = true, true, true
	}
	asked := 0
	for at := range times {
		listed, err := k.admin.ListOffsetsAfterMilli(context.Background(), at, topic)
		require.NoError(k.t, err)
		got, ok := listed.Lookup(topic, 0)
		require.True(k.t, ok)
		require.NoError(k.t, got.Err)
		offset, stamp, found := log.FirstStampedFrom(at*ms, end)
		if !found {
			require.Equal(k.t, end, got.Offset, "%s at %d ms: past the last record, Kafka answers the end offset", topic, at)
			continue
		}
		require.Equal(k.t, offset, got.Offset, "%s at %d ms: the record the time index answers", topic, at)
		require.Equal(k.t, stamp/ms, got.Timestamp, "%s at %d ms: its timestamp", topic, at)
		asked++
	}
	require.Positive(k.t, asked)
	k.t.Logf("%s: Kafka's time index and the simulation's answer the same record at all %d of %d times asked (the others past the last record)", topic, asked, len(times))
}
