package kafkatimelagreceiver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceTransaction writes records with the given timestamps to one
// partition in one transaction, committed or aborted, and returns the
// partition's end offset after its marker.
func (k *testKafka) produceTransaction(topic string, partition int32, commit bool, timestamps ...time.Time) int64 {
	k.TB.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Addrs...), kgo.ProducerLinger(0),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID("txn-"+topic))
	require.NoError(k.TB, err)
	defer cl.Close()
	require.NoError(k.TB, cl.BeginTransaction())
	records := make([]*kgo.Record, len(timestamps))
	for i, ts := range timestamps {
		records[i] = &kgo.Record{Topic: topic, Partition: partition, Timestamp: ts, Value: []byte("x")}
	}
	require.NoError(k.TB, cl.ProduceSync(ctx, records...).FirstErr())
	end := kgo.TryAbort
	if commit {
		end = kgo.TryCommit
	}
	require.NoError(k.TB, cl.EndTransaction(ctx, end))
	offsets, err := k.Admin.ListEndOffsets(ctx, topic)
	require.NoError(k.TB, err)
	o, ok := offsets.Lookup(topic, partition)
	require.True(k.TB, ok)
	return o.Offset
}

// A record whose timestamp no clock could have written (-1 from an old
// message format, 0, ten years ahead) gives no time lag, on the first scrape
// and on later ones, rather than 272 years, 56 years or a false 0.
func TestImpossibleRecordTimestampsGiveNoTimeLag(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("clockless", 3)
	k.Produce("clockless", 0, time.UnixMilli(-1))
	k.Produce("clockless", 1, time.UnixMilli(0))
	k.Produce("clockless", 2, time.Now().AddDate(10, 0, 0))
	k.Commit("reader", "clockless", map[int32]int64{0: 0, 1: 0, 2: 0})

	s := startScraper(t, k.testConfig())
	for scrape := range 2 {
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		lags := pointsOf(md, "kafka.consumer_group.lag")
		timeLags := pointsOf(md, "kafka.consumer_group.time_lag")
		for p := range int64(3) {
			key := pointKey{"reader", "clockless", p}
			require.Equal(t, int64(1), lags[key].intValue)
			tl, ok := timeLags[key]
			require.False(t, ok, "scrape %d partition %d: time lag %v s from an impossible timestamp", scrape, p, tl.doubleValue)
		}
		_, ok := pointsOf(md, "kafka.consumer_group.time_lag_max")[pointKey{"reader", "clockless", -1}]
		require.False(t, ok, "no estimate, no maximum")
	}
}

// An application that commits last offset + 1 on a transactional topic sits
// on the commit marker: lag stays 1, but nothing is left to consume. Once
// the partition is idle the receiver reads past the marker, finds no data
// record before the end, and reports the group caught up: time lag 0 and
// status OK, however long it stays there.
func TestCommitOnTransactionMarkerIsCaughtUp(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("txn", 1)
	now := time.Now()
	end := k.produceTransaction("txn", 0, true, now, now, now)
	k.Commit("exactly-once", "txn", map[int32]int64{0: end - 1})

	const window = 3
	s := startScraper(t, k.healthConfig(window))
	key := pointKey{"exactly-once", "txn", 0}
	_ = scrapeGroup(t, s, "exactly-once") // a table point below the next transaction

	end = k.produceTransaction("txn", 0, true, time.Now(), time.Now())
	k.Commit("exactly-once", "txn", map[int32]int64{0: end - 1})
	for scrape := range 2 * window {
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		require.Equal(t, int64(1), pointsOf(md, "kafka.consumer_group.lag")[key].intValue, "lag counts the marker's offset")
		if scrape == 0 {
			continue // the end offset was just seen moving: not idle yet
		}
		tl, ok := pointsOf(md, "kafka.consumer_group.time_lag")[key]
		require.True(t, ok, "scrape %d", scrape)
		require.Equal(t, 0.0, tl.doubleValue, "scrape %d: only a marker is left", scrape)
		v := viewGroup(t, md, "exactly-once")
		require.Equal(t, "OK", v.status, "scrape %d", scrape)
		require.Equal(t, map[int64]string{0: "OK"}, v.partitionStatus, "scrape %d", scrape)
		time.Sleep(10 * time.Millisecond) // distinct table points
	}
}

// The same group seen first by a receiver that has no history: the record
// read finds only the marker before the end, which is an answer (caught up),
// read once and then cached, not an estimate dropped every scrape.
func TestCommitOnTransactionMarkerOlderThanTableIsCaughtUp(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("txn", 1)
	hourAgo := time.Now().Add(-time.Hour)
	end := k.produceTransaction("txn", 0, true, hourAgo, hourAgo)
	k.Commit("exactly-once", "txn", map[int32]int64{0: end - 1})

	s := startScraper(t, k.testConfig())
	key := pointKey{"exactly-once", "txn", 0}
	for scrape := range 3 {
		fetches := k.Requests(int16(kmsg.Fetch))
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		tl, ok := pointsOf(md, "kafka.consumer_group.time_lag")[key]
		require.True(t, ok, "scrape %d: caught up is an estimate", scrape)
		require.Equal(t, 0.0, tl.doubleValue, "scrape %d", scrape)
		if scrape > 0 {
			require.Equal(t, fetches, k.Requests(int16(kmsg.Fetch)), "scrape %d: the answer is cached", scrape)
		}
	}
}

// Records of an aborted transaction are never delivered to a read_committed
// consumer: a group committed before them, with only the aborted records and
// markers left, is caught up, not an hour behind.
func TestAbortedTransactionIsNotLag(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("txn", 1)
	hourAgo := time.Now().Add(-time.Hour)
	committedEnd := k.produceTransaction("txn", 0, true, hourAgo)
	end := k.produceTransaction("txn", 0, false, hourAgo, hourAgo, hourAgo)
	require.Greater(t, end, committedEnd+3)
	k.Commit("exactly-once", "txn", map[int32]int64{0: committedEnd - 1})

	s := startScraper(t, k.testConfig())
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	key := pointKey{"exactly-once", "txn", 0}
	require.Equal(t, end-(committedEnd-1), pointsOf(md, "kafka.consumer_group.lag")[key].intValue)
	tl, ok := pointsOf(md, "kafka.consumer_group.time_lag")[key]
	require.True(t, ok)
	require.Equal(t, 0.0, tl.doubleValue, "the aborted records are not lag")

	// A committed record after the aborted ones is lag: it is what the
	// group reads next. It was appended between the two scrapes, whatever
	// its producer stamped on it.
	k.produceTransaction("txn", 0, true, hourAgo.Add(time.Minute))
	md, err = s.scrape(context.Background())
	require.NoError(t, err)
	next, ok := pointsOf(md, "kafka.consumer_group.time_lag")[key]
	require.True(t, ok)
	require.Greater(t, next.doubleValue, 0.0)
	require.LessOrEqual(t, next.doubleValue, next.timestamp.Sub(tl.timestamp).Seconds())
}

// kafka.consumer_group.stable_lag is the lag a read_committed consumer has:
// records of a transaction still open are not counted, nor markers and
// aborted records left at the end.
func TestStableLagOfReadCommittedGroup(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("txn", 1)
	now := time.Now()
	end := k.produceTransaction("txn", 0, true, now, now)
	k.Commit("behind", "txn", map[int32]int64{0: 0})
	k.Commit("on-marker", "txn", map[int32]int64{0: end - 1})

	cfg := k.testConfig()
	cfg.Metrics.KafkaConsumerGroupStableLag.Enabled = true
	s := startScraper(t, cfg)
	scrape := func() (lags, stable map[pointKey]point, timeLags map[pointKey]point) {
		t.Helper()
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		return pointsOf(md, "kafka.consumer_group.lag"), pointsOf(md, "kafka.consumer_group.stable_lag"), pointsOf(md, "kafka.consumer_group.time_lag")
	}
	behind, onMarker := pointKey{"behind", "txn", 0}, pointKey{"on-marker", "txn", 0}
	lags, stable, _ := scrape()
	require.Equal(t, int64(3), lags[behind].intValue)
	require.Equal(t, int64(3), stable[behind].intValue)
	require.Equal(t, int64(1), lags[onMarker].intValue)
	require.Equal(t, int64(0), stable[onMarker].intValue, "only the commit marker is left")

	// A transaction opens: its records are in the log, not yet readable.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	open, err := kgo.NewClient(kgo.SeedBrokers(k.Addrs...), kgo.ProducerLinger(0),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID("open-txn"))
	require.NoError(t, err)
	defer open.Close()
	require.NoError(t, open.BeginTransaction())
	require.NoError(t, open.ProduceSync(ctx, &kgo.Record{Topic: "txn", Value: []byte("x")}, &kgo.Record{Topic: "txn", Value: []byte("x")}).FirstErr())
	lags, stable, _ = scrape()
	require.Equal(t, int64(5), lags[behind].intValue, "lag counts the open transaction")
	require.Equal(t, int64(3), stable[behind].intValue, "stable lag does not")

	// It aborts: nothing after the commit marker will ever be given to a
	// read_committed consumer.
	require.NoError(t, open.EndTransaction(ctx, kgo.TryAbort))
	lags, stable, timeLags := scrape()
	require.Equal(t, int64(6), lags[behind].intValue)
	require.Equal(t, int64(6), stable[behind].intValue)
	require.Equal(t, int64(4), lags[onMarker].intValue)
	require.Equal(t, int64(0), stable[onMarker].intValue, "a marker, aborted records and their abort marker are left")
	require.Equal(t, 0.0, timeLags[onMarker].doubleValue)
}
