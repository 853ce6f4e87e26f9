//go:build kafka

package kafkatimelagreceiver

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/collector/component/componenttest"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/apachekafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kafkacount"
)

// segmentedTopics is a cluster whose topics have real segments of every
// kind the time index meets, written in rounds about a second apart: the
// appends a group sits on are told apart by more than the accuracy target.
type segmentedTopics struct {
	*realKafka
	plain, compressed, txn *kgo.Client
	// rounds[i] are the offsets each partition's round i starts at.
	rounds []map[pointKey]int64
}

const (
	topicCreateTime = "create-time" // CreateTime, 64 KiB segments, uncompressed
	topicAppendTime = "append-time" // LogAppendTime, zstd
	topicTxn        = "transactions"
	topicCompacted  = "compacted"
)

func newSegmentedTopics(t *testing.T, wire *kafkacount.Wire) *segmentedTopics {
	k := newRealKafka(t, apachekafka.Options{Wire: wire})
	k.createTopic(topicCreateTime, 2, map[string]string{"internal.segment.bytes": "65536"})
	k.createTopic(topicAppendTime, 2, map[string]string{"message.timestamp.type": "LogAppendTime", "internal.segment.bytes": "65536"})
	k.createTopic(topicTxn, 1, map[string]string{"internal.segment.bytes": "65536"})
	k.createTopic(topicCompacted, 1, map[string]string{"cleanup.policy": "compact", "internal.segment.bytes": "16384",
		"min.cleanable.dirty.ratio": "0.01", "segment.ms": "100"})
	s := &segmentedTopics{realKafka: k}
	var err error
	common := []kgo.Opt{kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0)}
	s.plain, err = k.Client(append(common, kgo.ProducerBatchCompression(kgo.NoCompression()))...)
	require.NoError(t, err)
	t.Cleanup(s.plain.Close)
	s.compressed, err = k.Client(append(common, kgo.ProducerBatchCompression(kgo.ZstdCompression()))...)
	require.NoError(t, err)
	t.Cleanup(s.compressed.Close)
	s.txn, err = k.Client(append(common, kgo.TransactionalID("segmented-txn"))...)
	require.NoError(t, err)
	t.Cleanup(s.txn.Close)
	return s
}

// writeRound writes one round: 40 records of 1 KiB to each partition of
// the CreateTime and LogAppendTime topics, a committed transaction of 20
// (and, on odd rounds, an aborted one of 20 after it), and 40 keyed
// records over 8 keys to the compacted topic.
func (s *segmentedTopics) writeRound() {
	t := s.t
	round := len(s.rounds)
	starts := map[pointKey]int64{}
	ends, err := s.admin.ListEndOffsets(context.Background(), topicCreateTime, topicAppendTime, topicTxn, topicCompacted)
	require.NoError(t, err)
	ends.Each(func(o kadm.ListedOffset) { starts[pointKey{"", o.Topic, int64(o.Partition)}] = o.Offset })
	s.rounds = append(s.rounds, starts)

	value := make([]byte, 1024)
	var plain, compressed, keyed []*kgo.Record
	for p := range int32(2) {
		for i := range 40 {
			value[0], value[1] = byte(i), byte(round)
			plain = append(plain, &kgo.Record{Topic: topicCreateTime, Partition: p, Value: append([]byte(nil), value...)})
			compressed = append(compressed, &kgo.Record{Topic: topicAppendTime, Partition: p, Value: []byte(fmt.Sprintf("round %d record %d", round, i))})
		}
	}
	for i := range 40 {
		keyed = append(keyed, &kgo.Record{Topic: topicCompacted, Key: []byte(fmt.Sprintf("key-%d", i%8)), Value: value[:200]})
	}
	s.produceSync(s.plain, append(plain, keyed...)...)
	s.produceSync(s.compressed, compressed...)
	s.transaction(true, 20)
	if round%2 == 1 {
		s.transaction(false, 20)
	}
}

func (s *segmentedTopics) transaction(commit bool, n int) {
	t := s.t
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, s.txn.BeginTransaction())
	var records []*kgo.Record
	for i := range n {
		records = append(records, &kgo.Record{Topic: topicTxn, Value: []byte(fmt.Sprintf("txn %v %d", commit, i))})
	}
	require.NoError(t, s.txn.ProduceSync(ctx, records...).FirstErr())
	require.NoError(t, s.txn.EndTransaction(ctx, kgo.TransactionEndTry(commit)))
}

// nextAppend is when the record a read_committed group at offset reads
// next was appended (its stamp: CreateTime written with no linger, or
// LogAppendTime), or false when none is left before the end.
func (s *segmentedTopics) nextAppend(topic string, partition int32, offset int64) (time.Time, bool) {
	t := s.t
	end, err := s.admin.ListEndOffsets(context.Background(), topic)
	require.NoError(t, err)
	last, _ := end.Lookup(topic, partition)
	cl, err := s.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(offset)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return time.Time{}, false
		}
		for _, r := range fetches.Records() {
			if r.Offset >= offset {
				return r.Timestamp, true
			}
		}
		if pos := fetches.Records(); len(pos) == 0 && last.Offset <= offset {
			return time.Time{}, false
		}
	}
}

// TestApacheKafkaTimeIndexOnRealSegments dates groups on real segments from
// the brokers' time index: a CreateTime topic and a LogAppendTime topic
// with zstd batches, both in 64 KiB segments, a transactional topic with
// aborted transactions, and a compacted topic whose cleaner left gaps.
// Rounds 0-2 are appended before the receivers start (older than their
// tables), rounds 3-5 while they sample (just before and after each). Group "new", in round 4, and as
// new rounds come and its commits move on, gets a time lag within the
// target of the append of the record it reads next on every partition;
// group "old", in round 1, on the LogAppendTime topic too, and elsewhere a
// right one or none (a CreateTime stamp older than the tables is not shown
// to be an append time). A receiver of the plain topics then sends no
// Fetch (the transactional topic's records are read for their markers,
// and a commit on a record the cleaner removed is not an offset the index
// answers: both are read), and the requests and bytes each receiver
// reports are those the broker sent it (counted on its side of the
// sockets).
func TestApacheKafkaTimeIndexOnRealSegments(t *testing.T) {
	requireNoLeakedGoroutines(t)
	wire := kafkacount.NewWire()
	s := newSegmentedTopics(t, wire)
	for round := range 3 {
		if round > 0 {
			time.Sleep(1200 * time.Millisecond) // appends a round apart are told apart
		}
		s.writeRound()
	}
	s.commit("new", s.commitsAt(0, 0)) // tracked from the first scrape, moved on later

	const allID, plainID = "time-index", "time-index-plain"
	cfg := s.config()
	cfg.ClientID = allID
	cfg.TimestampSource = TimestampSourceTimeIndex
	all, allTelemetry := startTelemetryScraper(t, cfg)
	// A receiver of the two topics without transactions or compaction,
	// whose records the index alone dates once they are known.
	plainCfg := s.config()
	plainCfg.ClientID = plainID
	plainCfg.TimestampSource = TimestampSourceTimeIndex
	plainCfg.Topics.Include = []string{"^" + topicCreateTime + "$", "^" + topicAppendTime + "$"}
	plain, plainTelemetry := startTelemetryScraper(t, plainCfg)
	scrapeBoth := func() (allTimeLags, plainTimeLags map[pointKey]point) {
		t.Helper()
		md, err := all.scrape(context.Background())
		require.NoError(t, err)
		pmd, err := plain.scrape(context.Background())
		require.NoError(t, err)
		return pointsOf(md, "kafka.consumer_group.time_lag"), pointsOf(pmd, "kafka.consumer_group.time_lag")
	}
	sampleBoth := func() {
		t.Helper()
		require.NoError(t, all.sampler.Sample(context.Background(), true))
		require.NoError(t, plain.sampler.Sample(context.Background(), true))
	}
	scrapeBoth()
	// Sampled just before and after each round: the tables bracket every
	// append closely, whatever the records' stamps.
	for range 3 {
		time.Sleep(1200 * time.Millisecond)
		sampleBoth()
		s.writeRound()
		sampleBoth()
	}

	old := s.commitsAt(1, 5)
	old[topicCompacted][0] = s.waitForCompaction(s.rounds[1][pointKey{"", topicCompacted, 0}], s.rounds[3][pointKey{"", topicCompacted, 0}])
	s.commit("old", old)
	commits := s.commitsAt(4, 5)
	commits[topicCompacted][0] = s.waitForCompaction(s.rounds[4][pointKey{"", topicCompacted, 0}], s.rounds[5][pointKey{"", topicCompacted, 0}])
	s.commit("new", commits)

	// requireDated checks a group's time lags against the append of the
	// record it reads next: on every partition, or (all false) on those
	// that have one.
	requireDated := func(timeLags map[pointKey]point, group string, offsets map[string]map[int32]int64, all bool, what string) (dated int) {
		t.Helper()
		for topic, partitions := range offsets {
			for partition, offset := range partitions {
				key := topicPartitionKey(group, topic, partition)
				tl, ok := timeLags[key]
				if !ok && !all {
					continue
				}
				require.True(t, ok, "%s %s: no time lag", what, describeKey(key))
				appended, found := s.nextAppend(topic, partition, offset)
				require.True(t, found, "%s %s: a record after %d", what, describeKey(key), offset)
				requireTimeLag(t, tl, appended, what+" "+describeKey(key))
				dated++
			}
		}
		return dated
	}
	withTimeLag := func(timeLags map[pointKey]point, group string, topics ...string) int {
		n := 0
		for key := range timeLags {
			if key.group == group && (len(topics) == 0 || slices.Contains(topics, key.topic)) {
				n++
			}
		}
		return n
	}
	for scrape := 0; ; scrape++ {
		timeLags, plainTimeLags := scrapeBoth()
		if withTimeLag(timeLags, "new") == 6 && withTimeLag(timeLags, "old", topicAppendTime) == 2 && withTimeLag(plainTimeLags, "new") == 4 {
			requireDated(timeLags, "new", commits, true, "appended while sampled:")
			oldDated := requireDated(timeLags, "old", old, false, "appended before the receiver started:")
			t.Logf("group old: %d of 6 partitions dated (the LogAppendTime topic's 2 at least)", oldDated)
			break
		}
		require.Less(t, scrape, 5, "after %d scrapes, time lag of %d of new's 6 partitions, %d of old's 2 LogAppendTime ones, %d of new's 4 plain ones",
			scrape+1, withTimeLag(timeLags, "new"), withTimeLag(timeLags, "old", topicAppendTime), withTimeLag(plainTimeLags, "new"))
	}

	// Steady state: a new round each step, commits moving into it. The
	// first step reads each partition's records once (the new region's
	// transaction markers, which the index cannot tell); from then on the
	// index alone dates the plain topics: no Fetch.
	const warmup, steady = 1, 3
	for step := range warmup + steady {
		time.Sleep(1200 * time.Millisecond)
		sampleBoth()
		s.writeRound()
		sampleBoth()
		commits = s.commitsAt(len(s.rounds)-1, 3)
		// Compaction may remove it: the record after it is read next.
		commits[topicCompacted][0] = s.rounds[len(s.rounds)-1][pointKey{"", topicCompacted, 0}]
		s.commit("new", commits)

		md, err := all.scrape(context.Background())
		require.NoError(t, err)
		requireDated(pointsOf(md, "kafka.consumer_group.time_lag"), "new", commits, true, fmt.Sprintf("steady state %d:", step))
		before := wire.Requests(plainID)
		md, err = plain.scrape(context.Background())
		require.NoError(t, err)
		sent := wire.Requests(plainID).Since(before)
		require.Equal(t, 4, withTimeLag(pointsOf(md, "kafka.consumer_group.time_lag"), "new"), "steady state %d", step)
		if step >= warmup {
			require.Zero(t, sent.Of(kmsg.Fetch), "steady state %d: Fetch requests (%v)", step, sent)
		}
	}

	// What the receivers tell of themselves is what the broker counted.
	for id, tt := range map[string]*componenttest.Telemetry{allID: allTelemetry, plainID: plainTelemetry} {
		requests, bytes := telemetryByAPI(t, tt, "otelcol_kafka_time_lag_requests"), telemetryByAPI(t, tt, "otelcol_kafka_time_lag_response_bytes")
		sentRequests, sentBytes := wire.Requests(id), wire.Bytes(id)
		for _, key := range []kmsg.Key{kmsg.ListOffsets, kmsg.Fetch, kmsg.OffsetFetch} {
			require.Equal(t, sentRequests.Of(key), requests[key.Name()], "%s: %s requests", id, key.Name())
		}
		for key, n := range sentBytes {
			require.Equal(t, n, bytes[kmsg.NameForKey(int16(key))], "%s: %s response bytes", id, kmsg.NameForKey(int16(key)))
		}
		t.Logf("%s: the receiver's traffic, counted by the broker: requests %v, response bytes %v", id, sentRequests, sentBytes)
	}
}

// commitsAt are offsets in round round, after records into it, of every
// partition.
func (s *segmentedTopics) commitsAt(round int, after int64) map[string]map[int32]int64 {
	out := map[string]map[int32]int64{}
	for key, start := range s.rounds[round] {
		if out[key.topic] == nil {
			out[key.topic] = map[int32]int64{}
		}
		out[key.topic][int32(key.partition)] = start + after
	}
	return out
}

// commit commits a group's offsets.
func (s *segmentedTopics) commit(group string, offsets map[string]map[int32]int64) {
	t := s.t
	os := make(kadm.Offsets)
	for topic, partitions := range offsets {
		for p, o := range partitions {
			os.Add(kadm.Offset{Topic: topic, Partition: p, At: o, LeaderEpoch: -1})
		}
	}
	resp, err := s.admin.CommitOffsets(context.Background(), group, os)
	require.NoError(t, err)
	require.NoError(t, resp.Error())
}

// waitForCompaction waits until the cleaner has removed a record of the
// compacted topic from offset from on, below end, and returns the first it
// removed.
func (s *segmentedTopics) waitForCompaction(from, end int64) int64 {
	t := s.t
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		cl, err := s.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topicCompacted: {0: kgo.NewOffset().At(from)}}))
		require.NoError(t, err)
		want := from
		var gap int64 = -1
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		for gap < 0 && want < end && ctx.Err() == nil {
			for _, r := range cl.PollFetches(ctx).Records() {
				if r.Offset < from {
					continue
				}
				if r.Offset != want && gap < 0 {
					gap = want
				}
				want = r.Offset + 1
			}
		}
		cancel()
		cl.Close()
		if gap >= 0 {
			return gap
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("the cleaner left no gap in %s from %d below %d within 2 minutes", topicCompacted, from, end)
	return 0
}
