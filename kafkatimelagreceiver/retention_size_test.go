//go:build !unit

package kafkatimelagreceiver

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/emit"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// virtualClock is the time of a test that runs a cluster through minutes
// in a few seconds: every offset read the receiver makes is stamped with
// it, so that its tables, production rates and margins are in its time and
// not in how fast two shared cores happen to run the test.
type virtualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (v *virtualClock) Now() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.now
}

func (v *virtualClock) advance(d time.Duration) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.now = v.now.Add(d)
}

// virtualCluster stamps the offset reads of the cluster with the clock.
type virtualCluster struct {
	kafka.Cluster
	clock *virtualClock
}

func (c virtualCluster) stamp(read kafka.OffsetRead, err error) (kafka.OffsetRead, error) {
	now := c.clock.Now()
	read.Sent, read.Received = now, now
	for i := range read.Retries {
		read.Retries[i].Sent, read.Retries[i].Received = now, now
	}
	return read, err
}

func (c virtualCluster) EndOffsets(ctx context.Context, tps []kafka.TopicPartition) (kafka.OffsetRead, error) {
	return c.stamp(c.Cluster.EndOffsets(ctx, tps))
}

func (c virtualCluster) StartOffsets(ctx context.Context, tps []kafka.TopicPartition) (kafka.OffsetRead, error) {
	return c.stamp(c.Cluster.StartOffsets(ctx, tps))
}

func (c virtualCluster) StableOffsets(ctx context.Context, tps []kafka.TopicPartition) (kafka.OffsetRead, error) {
	return c.stamp(c.Cluster.StableOffsets(ctx, tps))
}

// startVirtualScraper starts a scraper of k whose reads are stamped with
// clock, with a 10 s rate window, that the test samples (Sample) and
// scrapes, and scrapes once: the receiver then tracks the partitions
// committed on. Their production rates are known once their tables span a
// quarter of the rate window; until then no size margin is.
func startVirtualScraper(t *testing.T, k *testKafka, clock *virtualClock) *timeLagScraper {
	cfg := k.testConfig()
	cfg.RateWindow = 10 * time.Second
	s := startScraperWith(t, cfg, zap.NewNop(), func(c kafka.Cluster) kafka.Cluster { return virtualCluster{c, clock} })
	s.reader.Now = clock.Now
	_, err := s.scrape(context.Background())
	require.NoError(t, err)
	return s
}

// marginPoint is a retention margin the receiver reported: its value, the
// retention attribute, and its timestamp (the scrape's).
type marginPoint struct {
	seconds float64
	basis   string
	at      time.Time
}

// marginsOf returns the points of kafka.consumer_group.retention_margin by
// (group, topic).
func marginsOf(md pmetric.Metrics) map[[2]string]marginPoint {
	out := map[[2]string]marginPoint{}
	emit.EachMetric(md, func(m pmetric.Metric) {
		if m.Name() != "kafka.consumer_group.retention_margin" {
			return
		}
		for i := range m.Gauge().DataPoints().Len() {
			dp := m.Gauge().DataPoints().At(i)
			group, _ := dp.Attributes().Get("group")
			topic, _ := dp.Attributes().Get("topic")
			basis, _ := dp.Attributes().Get("retention")
			out[[2]string{group.Str(), topic.Str()}] = marginPoint{seconds: dp.DoubleValue(), basis: basis.Str(), at: dp.Timestamp().AsTime()}
		}
	})
	return out
}

// brokerSegments deletes a partition's records as a Kafka broker's
// retention check does, which kfake does not: kfake's retention.bytes
// drops the oldest batches one by one until the partition holds at most
// retention.bytes, active segment or not, where a broker rolls segments
// at segment.bytes and deletes the oldest whole segment while what remains
// without it still holds retention.bytes (so it keeps at least that), and
// never the active one. The test keeps the segments from the batches it
// writes (their sizes as kfake counts them) and deletes with
// DeleteRecords at a segment's end.
type brokerSegments struct {
	segmentBytes, retentionBytes int64
	segments                     []segment // oldest first; the last is the active one
}

type segment struct{ end, bytes int64 }

// appended adds the batch ending before end, of size bytes, rolling a new
// segment when it would not fit in the active one.
func (b *brokerSegments) appended(end, size int64) {
	if n := len(b.segments); n == 0 || b.segments[n-1].bytes+size > b.segmentBytes {
		b.segments = append(b.segments, segment{})
	}
	active := &b.segments[len(b.segments)-1]
	active.end, active.bytes = end, active.bytes+size
}

// check is a retention check: the new log start when segments go.
func (b *brokerSegments) check() (int64, bool) {
	var total int64
	for _, s := range b.segments {
		total += s.bytes
	}
	deleted := false
	var start int64
	for len(b.segments) > 1 && total-b.segments[0].bytes >= b.retentionBytes {
		total -= b.segments[0].bytes
		start, deleted = b.segments[0].end, true
		b.segments = b.segments[1:]
	}
	return start, deleted
}

// sizeRetentionRun is a kfake cluster with three topics of one partition,
// each with 10 records of 1,000 random bytes and a group that read those
// and stopped: "sized" keeps at most retention.bytes 30,000 (segment.bytes
// 8,000, retention.ms its 7-day default); "timed" keeps 2 minutes or 10 MB;
// "kept" keeps everything. Each step of its virtual clock is one second in
// which a record is written to each, the brokers' retention check runs
// (kfake's own, or brokerSegments), and the receiver samples; every third
// it scrapes. It runs until the log start of "sized" passes the group's
// offset.
type sizeRunResult struct {
	scrapes []marginPoint // the (stuck, sized) margins, in order
	others  []map[[2]string]marginPoint
	deleted time.Time // when the log start passed the group's offset
	// bytesPerSecond is how fast "sized" was written.
	bytesPerSecond float64
}

const (
	runRetentionBytes = 30_000
	runSegmentBytes   = 8_000
	runCommitted      = 10
)

func runSizeRetention(t *testing.T, brokerLike bool) sizeRunResult {
	k := newTestKafka(t, 1)
	ctx := context.Background()
	str := func(v int) *string { s := strconv.Itoa(v); return &s }
	for topic, configs := range map[string]map[string]*string{
		"sized": {"retention.bytes": str(runRetentionBytes), "segment.bytes": str(runSegmentBytes)},
		"timed": {"retention.ms": str(120_000), "retention.bytes": str(10_000_000)},
		"kept":  {"retention.ms": str(-1)},
	} {
		resp, err := k.Admin.CreateTopic(ctx, 1, 1, configs, topic)
		require.NoError(t, err)
		require.NoError(t, resp.Err)
	}
	clock := &virtualClock{now: time.Now().Truncate(time.Second)}
	sizeOf := func() int64 {
		dirs, err := k.Admin.DescribeAllLogDirs(ctx, kadm.TopicsSet{"sized": {0: {}}})
		require.NoError(t, err)
		var size int64
		dirs.Each(func(d kadm.DescribedLogDir) {
			if p, ok := d.Topics.Lookup("sized", 0); ok {
				size = p.Size
			}
		})
		return size
	}
	segments := &brokerSegments{segmentBytes: runSegmentBytes, retentionBytes: runRetentionBytes}
	var written int64
	produce := func() {
		before := sizeOf()
		for _, topic := range []string{"sized", "timed", "kept"} {
			value := make([]byte, 1000)
			_, _ = rand.Read(value)
			r, err := k.Client.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: value, Timestamp: clock.Now()}).First()
			require.NoError(t, err)
			if topic == "sized" {
				size := sizeOf() - before
				written += size
				segments.appended(r.Offset+1, size)
			}
		}
	}
	for range runCommitted {
		produce()
	}
	for _, topic := range []string{"sized", "timed", "kept"} {
		k.Commit("stuck", topic, map[int32]int64{0: runCommitted})
	}

	s := startVirtualScraper(t, k, clock)

	var res sizeRunResult
	writtenBefore := written
	for step := 1; ; step++ {
		require.Less(t, step, 200, "the log start never passed the group's offset")
		clock.advance(time.Second)
		produce()
		if brokerLike {
			if start, ok := segments.check(); ok {
				deleted, err := k.Admin.DeleteRecords(ctx, kadm.Offsets{"sized": {0: {Topic: "sized", At: start}}})
				require.NoError(t, err)
				require.NoError(t, deleted.Error())
			}
		} else {
			k.Cluster.ApplyRetention()
		}
		require.NoError(t, s.sampler.Sample(ctx, true))
		starts, err := k.Admin.ListStartOffsets(ctx, "sized")
		require.NoError(t, err)
		if start, _ := starts.Lookup("sized", 0); start.Offset > runCommitted {
			res.deleted = clock.Now()
			res.bytesPerSecond = float64(written-writtenBefore) / float64(step)
			return res
		}
		if step%3 != 0 {
			continue
		}
		md, err := s.scrape(ctx)
		require.NoError(t, err)
		margins := marginsOf(md)
		if m, ok := margins[[2]string{"stuck", "sized"}]; ok {
			res.scrapes = append(res.scrapes, m)
		}
		res.others = append(res.others, margins)
	}
}

// checkSizeRun: the margin reported a few scrapes before the log start
// passed the group's offset predicts when it did to within 10 % of the
// time left or one segment's worth of time, whichever is larger; and "timed"
// (both limits, time the sooner) reports its time margin, "kept" none.
func checkSizeRun(t *testing.T, res sizeRunResult, wantBasis ...string) (errs []time.Duration) {
	require.GreaterOrEqual(t, len(res.scrapes), 4, "margins reported before the deletion")
	segmentTime := time.Duration(runSegmentBytes / res.bytesPerSecond * float64(time.Second))
	for i, m := range res.scrapes[len(res.scrapes)-4:] {
		require.Contains(t, wantBasis, m.basis)
		left := res.deleted.Sub(m.at)
		predicted := m.at.Add(time.Duration(m.seconds * float64(time.Second)))
		errs = append(errs, predicted.Sub(res.deleted))
		tolerance := max(left/10, segmentTime)
		require.InDelta(t, 0, predicted.Sub(res.deleted).Seconds(), tolerance.Seconds(),
			"scrape %d of the last 4, %v before the deletion: margin %.2f s (%s), deleted %v after", i, left, m.seconds, m.basis, left)
	}
	for _, margins := range res.others {
		timed, ok := margins[[2]string{"stuck", "timed"}]
		require.True(t, ok)
		require.Equal(t, "time", timed.basis, "retention.ms is the sooner")
		require.Less(t, timed.seconds, 120.0)
		require.NotContains(t, margins, [2]string{"stuck", "kept"}, "nothing deletes its records")
	}
	return errs
}

// TestSizeRetentionMarginAgainstBrokerSegments: a partition capped by
// retention.bytes, written at a known byte rate and its records deleted as
// a broker deletes (whole segments, never the active one, keeping at least
// retention.bytes): the size margin comes before the deletion by at most
// the rest of the group's segment, and within the tolerance.
func TestSizeRetentionMarginAgainstBrokerSegments(t *testing.T) {
	res := runSizeRetention(t, true)
	errs := checkSizeRun(t, res, "size")
	for i, m := range res.scrapes {
		predicted := m.at.Add(time.Duration(m.seconds * float64(time.Second)))
		require.False(t, predicted.After(res.deleted), "scrape %d: a broker never deletes before the bytes after the record reach retention.bytes", i)
	}
	t.Logf("written at %.0f B/s; deleted %v after the first scrape that reported a margin; predicted - deleted, the last 4 scrapes: %v", res.bytesPerSecond, res.deleted.Sub(res.scrapes[0].at), fmt.Sprint(errs))
}

// TestSizeRetentionMarginAgainstKfakeRetention: the same with kfake's own
// retention.bytes enforcement (kfake.Cluster.ApplyRetention at every step,
// as a broker's retention check would run), which drops batches one by one
// until the partition holds at most retention.bytes: it takes the record a
// batch sooner than a broker would, and the log start's advance may then
// say so.
func TestSizeRetentionMarginAgainstKfakeRetention(t *testing.T) {
	res := runSizeRetention(t, false)
	errs := checkSizeRun(t, res, "size", "log_start")
	t.Logf("written at %.0f B/s; predicted - deleted, the last 4 scrapes: %v", res.bytesPerSecond, fmt.Sprint(errs))
}

// TestDeleteRecordsMarginFromTheLogStart: a topic that keeps records for
// ever, whose log start a job moves with DeleteRecords (3 records every 2
// s) while a group stands still: once the log start has moved twice, the
// margin is its advance's (retention log_start), and it predicts when the
// log start passed the group's offset to within 10 % of the time left, or
// one of the job's steps (2 s) and the time between two reads of the log
// start (1 s), which the prediction counts from the earlier; never later.
func TestDeleteRecordsMarginFromTheLogStart(t *testing.T) {
	const committed = 30
	k := newTestKafka(t, 1)
	ctx := context.Background()
	forever := "-1"
	resp, err := k.Admin.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": &forever}, "purged")
	require.NoError(t, err)
	require.NoError(t, resp.Err)
	clock := &virtualClock{now: time.Now().Truncate(time.Second)}
	produce := func() { k.Produce("purged", 0, clock.Now()) }
	for range committed + 10 {
		produce()
	}
	k.Commit("stuck", "purged", map[int32]int64{0: committed})
	s := startVirtualScraper(t, k, clock)

	var (
		reported []marginPoint
		start    int64
	)
	for step := 1; ; step++ {
		require.Less(t, step, 100, "the log start never passed the group's offset")
		clock.advance(time.Second)
		produce()
		if step%2 == 0 {
			start += 3
			deleted, err := k.Admin.DeleteRecords(ctx, kadm.Offsets{"purged": {0: {Topic: "purged", At: start}}})
			require.NoError(t, err)
			require.NoError(t, deleted.Error())
		}
		require.NoError(t, s.sampler.Sample(ctx, true))
		if start > committed {
			break
		}
		if step%3 != 0 {
			continue
		}
		md, err := s.scrape(ctx)
		require.NoError(t, err)
		m, ok := marginsOf(md)[[2]string{"stuck", "purged"}]
		require.Equal(t, step > 4, ok, "step %d: a margin once the log start moved twice, none before", step)
		if ok {
			require.Equal(t, "log_start", m.basis)
			reported = append(reported, m)
		}
	}
	deleted := clock.Now()
	var errs []time.Duration
	for _, m := range reported[len(reported)-4:] {
		predicted := m.at.Add(time.Duration(m.seconds * float64(time.Second)))
		errs = append(errs, predicted.Sub(deleted))
		require.InDelta(t, 0, predicted.Sub(deleted).Seconds(), max(deleted.Sub(m.at).Seconds()/10, 3), "margin %.2f s at %v", m.seconds, m.at)
		require.False(t, predicted.After(deleted), "margin %.2f s at %v", m.seconds, m.at)
	}
	t.Logf("predicted - deleted, the last 4 scrapes: %v", errs)
}
