//go:build !unit

package kafkatimelagreceiver

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/golden"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kafkacount"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"
)

// TestScrapeAgainstKafka checks lag exactly and time lag against the record
// timestamps, on the very first scrape (the records predate any table), on
// a LogAppendTime topic: its stamps are the append times, as its
// configuration tells the receiver.
func TestScrapeAgainstKafka(t *testing.T) {
	k := newTestKafka(t, 3)
	k.CreateAppendTimeTopic("orders", 3)
	k.CreateTopic("__internal", 1)
	base := time.Now().Add(-90 * time.Minute).Truncate(time.Millisecond)
	var stamps []time.Time
	for i := range 20 {
		stamps = append(stamps, base.Add(time.Duration(i)*time.Minute))
	}
	produced := time.Now()
	k.Produce("orders", 0, stamps...)     // offsets 0..19
	k.Produce("orders", 1, stamps[:5]...) // offsets 0..4
	k.Produce("orders", 2, stamps[:3]...) // offsets 0..2
	k.Produce("__internal", 0, stamps[:2]...)

	k.Commit("billing", "orders", map[int32]int64{0: 0, 1: 4, 2: 3}) // p2 caught up
	k.Commit("billing", "__internal", map[int32]int64{0: 0})         // excluded topic
	k.Commit("ignored-batch", "orders", map[int32]int64{0: 1})       // excluded group

	cfg := k.testConfig()
	cfg.Groups.Exclude = []string{"^ignored-"}
	s := startScraper(t, cfg)
	md, err := s.scrape(context.Background())
	require.NoError(t, err)

	lag := pointsOf(md, "kafka.consumer_group.lag")
	timeLag := pointsOf(md, "kafka.consumer_group.time_lag")
	offset := pointsOf(md, "kafka.consumer_group.offset")
	require.Len(t, lag, 3, "only billing on orders: other group and topic are filtered")
	require.Equal(t, int64(20), lag[pointKey{"billing", "orders", 0}].intValue)
	require.Equal(t, int64(1), lag[pointKey{"billing", "orders", 1}].intValue)
	require.Equal(t, int64(0), lag[pointKey{"billing", "orders", 2}].intValue)
	require.Equal(t, int64(4), offset[pointKey{"billing", "orders", 1}].intValue)

	at := lag[pointKey{"billing", "orders", 0}].timestamp
	for key, p := range lag {
		require.Equal(t, at, p.timestamp, "every point of a scrape carries the end-offset read time: %v", key)
	}
	truth := func(recordTime time.Time) float64 { return at.Sub(recordTime).Seconds() }
	require.InDelta(t, truth(produced), timeLag[pointKey{"billing", "orders", 0}].doubleValue, 1.0)
	require.InDelta(t, truth(produced), timeLag[pointKey{"billing", "orders", 1}].doubleValue, 1.0)
	require.Equal(t, 0.0, timeLag[pointKey{"billing", "orders", 2}].doubleValue)

	sum := pointsOf(md, "kafka.consumer_group.lag_sum")
	maxLag := pointsOf(md, "kafka.consumer_group.lag_max")
	maxTime := pointsOf(md, "kafka.consumer_group.time_lag_max")
	require.Equal(t, int64(21), sum[pointKey{"billing", "orders", -1}].intValue)
	require.Equal(t, int64(20), maxLag[pointKey{"billing", "orders", -1}].intValue)
	require.InDelta(t, truth(produced), maxTime[pointKey{"billing", "orders", -1}].doubleValue, 1.0)

	current := pointsOf(md, "kafka.partition.current_offset")
	require.Equal(t, int64(20), current[pointKey{"", "orders", 0}].intValue)
	require.Equal(t, int64(3), current[pointKey{"", "orders", 2}].intValue)
	require.Empty(t, pointsOf(md, "kafka.partition.oldest_offset"), "disabled by default")

	// A second scrape with unchanged commits reuses the record timestamps it
	// read: no Fetch.
	fetches := k.Requests(int16(kmsg.Fetch))
	_, err = s.scrape(context.Background())
	require.NoError(t, err)
	require.Equal(t, fetches, k.Requests(int16(kmsg.Fetch)), "cached record timestamps are not read again")
}

// TestGroupWithoutCommitOnPartition: a partition the group never committed on
// gets no lag point at all.
func TestGroupWithoutCommitOnPartition(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("events", 2)
	now := time.Now()
	k.Produce("events", 0, now, now)
	k.Produce("events", 1, now, now)
	k.Commit("reader", "events", map[int32]int64{0: 1})

	s := startScraper(t, k.testConfig())
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	lag := pointsOf(md, "kafka.consumer_group.lag")
	require.Len(t, lag, 1)
	require.Equal(t, int64(1), lag[pointKey{"reader", "events", 0}].intValue)
}

// TestListOffsetsPerScrapeAtMostBrokers: 3 brokers, 3,000 partitions: one
// ListOffsets request per leader broker, however many partitions.
func TestListOffsetsPerScrapeAtMostBrokers(t *testing.T) {
	k := newTestKafka(t, 3)
	const partitions = 3000
	k.CreateTopic("wide", partitions)
	offsets := make(map[int32]int64, partitions)
	for p := range int32(partitions) {
		offsets[p] = 0
	}
	k.Commit("wide-reader", "wide", offsets)
	k.Commit("wide-reader-2", "wide", offsets)

	s := startScraper(t, k.testConfig())
	before := k.Requests(int16(kmsg.ListOffsets))
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	listOffsets := k.Requests(int16(kmsg.ListOffsets)) - before
	t.Logf("3 brokers, %d partitions, 2 groups: %d ListOffsets requests in one scrape", partitions, listOffsets)
	require.LessOrEqual(t, listOffsets, int64(3))
	require.Len(t, pointsOf(md, "kafka.consumer_group.lag"), 2*partitions)

	// The sampler reads the same partitions with the same bound.
	before = k.Requests(int16(kmsg.ListOffsets))
	require.NoError(t, s.sampler.Sample(context.Background(), false))
	require.LessOrEqual(t, k.Requests(int16(kmsg.ListOffsets))-before, int64(3))
}

// TestKafkaDownThenUp: the receiver starts with no Kafka, scrapes fail with
// an error, and it recovers when Kafka comes up.
func TestKafkaDownThenUp(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())

	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.Brokers = []string{fmt.Sprintf("127.0.0.1:%d", port)}
	cfg.Timeout = 2 * time.Second
	s := startScraper(t, cfg)
	_, err = s.scrape(context.Background())
	require.Error(t, err)
	require.False(t, scrapererror.IsPartialScrapeError(err))

	k := newTestKafka(t, 1, kfake.Ports(port))
	k.CreateTopic("back", 1)
	k.Produce("back", 0, time.Now())
	k.Commit("g", "back", map[int32]int64{0: 0})
	require.Eventually(t, func() bool {
		md, err := s.scrape(context.Background())
		return err == nil && len(pointsOf(md, "kafka.consumer_group.lag")) == 1
	}, 30*time.Second, 200*time.Millisecond)
}

func (l *producedLog) add(offset int64, ts time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.offsets = append(l.offsets, offset)
	l.stamps = append(l.stamps, ts)
}

// TestTimeLagAccuracySteadyProduction is the acceptance check for the
// interpolation: steady production with ±50% jitter in the gap between
// records, a group held 10 s behind, sampling every 1 s and scraping every
// 2 s. The error is |reported time lag - truth|, where truth is the data
// point's time minus the timestamp of the record at the committed offset.
// Only accuracy is asserted, never speed.
func TestTimeLagAccuracySteadyProduction(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for about 55 s")
	}
	k := newTestKafka(t, 1)
	k.CreateTopic("steady", 1)
	var log producedLog

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	wg.Add(2)
	go func() { // producer: about 50 records/s, each gap 10-30 ms
		defer wg.Done()
		rng := rand.New(rand.NewPCG(1, 2))
		for ctx.Err() == nil {
			gap := time.Duration(float64(20*time.Millisecond) * (0.5 + rng.Float64()))
			select {
			case <-ctx.Done():
				return
			case <-time.After(gap):
			}
			ts := time.Now()
			offset := k.Produce("steady", 0, ts)
			log.add(offset, ts)
		}
	}()
	var behind atomic.Bool // the group has committed 10 s behind
	// The consumer, held 10 s behind.
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(250 * time.Millisecond):
			}
			if offset, ok := log.firstAfter(time.Now().Add(-10 * time.Second)); ok {
				k.Commit("held-back", "steady", map[int32]int64{0: offset})
				behind.Store(true)
			}
		}
	}()

	// The receiver starts once the group is 10 s behind: after 10 s of
	// production, its first commit.
	require.Eventually(t, behind.Load, time.Minute, 50*time.Millisecond, "the group committed 10 s behind")
	// Two receivers watch the same workload: the default one, and one that
	// may not read record timestamps, so that the interpolation table alone
	// is measured once it covers the 10 s of lag.
	cfg := k.testConfig()
	cfg.SamplingInterval = time.Second
	withRecords := startScraper(t, cfg)
	tableCfg := k.testConfig()
	tableCfg.SamplingInterval = time.Second
	tableCfg.MaxRecordReadsPerScrape = 0
	tableOnly := startScraper(t, tableCfg)

	key := pointKey{"held-back", "steady", 0}
	measure := func(name string, s *timeLagScraper, scrape int) (float64, bool) {
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		tl, ok := pointsOf(md, "kafka.consumer_group.time_lag")[key]
		if !ok {
			t.Logf("%s scrape %2d: no time lag yet (table points %d)", name, scrape, s.reader.Tables.Points())
			return 0, false
		}
		committed := pointsOf(md, "kafka.consumer_group.offset")[key].intValue
		stamp, ok := log.stampOf(committed)
		require.True(t, ok)
		truth := tl.timestamp.Sub(stamp).Seconds()
		e := math.Abs(tl.doubleValue - truth)
		t.Logf("%s scrape %2d: time lag %.3f s, truth %.3f s, error %.3f s, table points %d",
			name, scrape, tl.doubleValue, truth, e, s.reader.Tables.Points())
		return e, true
	}
	var recordErrs, tableErrs []float64
	for scrape := range 20 {
		e, ok := measure("default   ", withRecords, scrape)
		// The group's record is older than the table: its stamp dates it
		// once the records either side of the first samples have shown the
		// partition's stamps are append times.
		require.True(t, ok || scrape < 2, "the default receiver has a time lag from the third scrape")
		if scrape >= 3 {
			recordErrs = append(recordErrs, e)
		}
		e, ok = measure("table-only", tableOnly, scrape)
		// 10 s of lag at 2 s per scrape: the table covers it from the 6th scrape.
		require.True(t, ok || scrape < 6, "table-only receiver has a time lag from scrape 6 on")
		if ok {
			tableErrs = append(tableErrs, e)
		}
		time.Sleep(2 * time.Second)
	}
	for _, m := range []struct {
		name string
		errs []float64
	}{{"default", recordErrs}, {"table-only", tableErrs}} {
		sort.Float64s(m.errs)
		p95 := m.errs[int(math.Ceil(0.95*float64(len(m.errs))))-1]
		t.Logf("%s: time lag error over %d scrapes: p50 %.3f s, p95 %.3f s, max %.3f s",
			m.name, len(m.errs), m.errs[len(m.errs)/2], p95, m.errs[len(m.errs)-1])
		require.LessOrEqual(t, p95, 1.5, m.name)
		// The bracket placement must not cost steady partitions what it
		// gains sparse ones: the median stays within what a straight line
		// between table points gives them (p50 0.011 s default, 0.012 s
		// table only).
		require.LessOrEqual(t, m.errs[len(m.errs)/2], 0.05, "%s: median error", m.name)
	}
}

func TestCaughtUpGroupOnIdleTopicIsZero(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("idle", 1)
	k.Produce("idle", 0, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour))
	k.Commit("done", "idle", map[int32]int64{0: 2})

	s := startScraper(t, k.testConfig())
	for range 2 {
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		requireCaughtUp(t, md, pointKey{"done", "idle", 0})
	}
}

// A producer that stopped leaves the table flat at the end: the time lag of
// a group behind it keeps growing with the clock, finite and correct.
func TestTimeLagGrowsAfterProducerStops(t *testing.T) {
	k := newTestKafka(t, 1)
	// LogAppendTime: the record's stamp, its append time, dates it from
	// the first scrape.
	k.CreateAppendTimeTopic("stopped", 1)
	produced := time.Now()
	k.Produce("stopped", 0, produced, produced)
	k.Commit("late", "stopped", map[int32]int64{0: 1})

	cfg := k.testConfig()
	cfg.SamplingInterval = 200 * time.Millisecond
	s := startScraper(t, cfg)
	key := pointKey{"late", "stopped", 0}
	var previous float64
	for i := range 4 {
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		tl := pointsOf(md, "kafka.consumer_group.time_lag")[key]
		truth := tl.timestamp.Sub(produced).Seconds()
		require.InDelta(t, truth, tl.doubleValue, 1.0, "scrape %d", i)
		require.Greater(t, tl.doubleValue, previous)
		previous = tl.doubleValue
		time.Sleep(600 * time.Millisecond)
	}
}

// startOnOldTopic creates "phoenix", whose ten records are two hours old,
// commits the group "reader" at offset 2 and starts a scraper, whose first
// scrape reads (and caches) that record's timestamp.
func startOnOldTopic(t *testing.T) (*testKafka, *timeLagScraper) {
	t.Helper()
	k := newTestKafka(t, 1)
	// LogAppendTime (old and new topic): the records' stamps are their
	// append times, and date them from the first scrape.
	k.CreateAppendTimeTopic("phoenix", 1)
	stamps := make([]time.Time, 10)
	k.Produce("phoenix", 0, stamps...)
	k.Commit("reader", "phoenix", map[int32]int64{0: 2})

	s := startScraper(t, k.testConfig())
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	require.Contains(t, pointsOf(md, "kafka.consumer_group.time_lag"), pointKey{"reader", "phoenix", 0}, "the old record at offset 2 is dated")
	// The new topic's records are appended seconds after the old one's,
	// so that a time lag from the old table or records is told apart.
	time.Sleep(3 * time.Second)
	return k, s
}

// recreateOldTopic deletes "phoenix" and creates it again with records
// appended now; the group starts again at offset 2.
func recreateOldTopic(t *testing.T, k *testKafka, records int) (stamps []time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := k.Admin.DeleteTopics(ctx, "phoenix")
	require.NoError(t, err)
	logAppendTime := "LogAppendTime"
	require.Eventually(t, func() bool {
		resp, err := k.Admin.CreateTopic(ctx, 1, 1, map[string]*string{"message.timestamp.type": &logAppendTime}, "phoenix")
		return err == nil && resp.Err == nil
	}, 20*time.Second, 100*time.Millisecond)
	k.Client.PurgeTopicsFromClient("phoenix") // forget the old topic id
	// Appended now: the topic's stamps are its append times.
	for range records {
		stamps = append(stamps, time.Now())
	}
	k.Produce("phoenix", 0, stamps...)
	k.Commit("reader", "phoenix", map[int32]int64{0: 2})
	return stamps
}

// scrapeRecreatedTopic scrapes until the receiver reads the new topic's end
// offset (sarama learns of it when the old leader answers for it) and
// returns the scrape and the group's time lag.
func scrapeRecreatedTopic(t *testing.T, s *timeLagScraper, end int64) (md pmetric.Metrics, timeLag point) {
	t.Helper()
	require.Eventually(t, func() bool {
		var err error
		md, err = s.scrape(context.Background())
		var ok bool
		timeLag, ok = pointsOf(md, "kafka.consumer_group.time_lag")[pointKey{"reader", "phoenix", 0}]
		return err == nil && ok && pointsOf(md, "kafka.partition.current_offset")[pointKey{"", "phoenix", 0}].intValue == end
	}, 20*time.Second, 200*time.Millisecond)
	return md, timeLag
}

// A topic deleted and recreated starts its offsets again: the old table and
// what was read about old records must not leak into the new topic's values.
func TestTopicRecreatedResetsTable(t *testing.T) {
	k, s := startOnOldTopic(t)
	stamps := recreateOldTopic(t, k, 4)
	md, tl := scrapeRecreatedTopic(t, s, 4)
	require.Equal(t, int64(2), pointsOf(md, "kafka.consumer_group.lag")[pointKey{"reader", "phoenix", 0}].intValue)
	truth := tl.timestamp.Sub(stamps[2]).Seconds()
	require.InDelta(t, truth, tl.doubleValue, 1.0, "time lag comes from the new topic's records, not the old table")
	// One backward read only suspends the old table (a new leader of an old
	// broker can lag for a moment); the next confirms the reset.
	_, err := s.scrape(context.Background())
	require.NoError(t, err)
	oldest := tableHeads(s)[kafka.TopicPartition{Topic: "phoenix", Partition: 0}]
	require.LessOrEqual(t, oldest.Offset, int64(4), "the table was reset: nothing left of the old log's end offset 10")
}

// A topic deleted and recreated whose new log grows past the old end offset
// before the next sample never goes backwards: only its topic ID tells it
// from the old topic. The old table and the record timestamps read from the
// old log must not date the new log's records.
func TestTopicRecreatedPastOldEndIsNotTheOldTopic(t *testing.T) {
	k, s := startOnOldTopic(t)
	require.NoError(t, s.sampler.Sample(context.Background(), true))
	stamps := recreateOldTopic(t, k, 12) // end offset 12, past the old 10
	require.NoError(t, s.sampler.Sample(context.Background(), true))
	_, tl := scrapeRecreatedTopic(t, s, 12)
	truth := tl.timestamp.Sub(stamps[2]).Seconds()
	require.InDelta(t, truth, tl.doubleValue, 1.0, "time lag comes from the new topic's record at offset 2, not the old one's")
}

// Retention deleted records the group never read: lag still counts from the
// committed offset, time lag comes from the oldest record still there, and
// lost_messages says how many are gone.
func TestCommittedBelowLogStart(t *testing.T) {
	k := newTestKafka(t, 1)
	// LogAppendTime: the record's stamp, its append time, dates it from
	// the first scrape.
	k.CreateAppendTimeTopic("retained", 1)
	produced := time.Now()
	k.Produce("retained", 0, make([]time.Time, 10)...)
	k.Commit("slowpoke", "retained", map[int32]int64{0: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := k.Admin.DeleteRecords(ctx, kadm.Offsets{"retained": {0: {Topic: "retained", Partition: 0, At: 6}}})
	require.NoError(t, err)
	require.NoError(t, resp.Error())

	s := startScraper(t, k.testConfig())
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	key := pointKey{"slowpoke", "retained", 0}
	require.Equal(t, int64(8), pointsOf(md, "kafka.consumer_group.lag")[key].intValue)
	require.Equal(t, int64(4), pointsOf(md, "kafka.consumer_group.lost_messages")[key].intValue)
	tl := pointsOf(md, "kafka.consumer_group.time_lag")[key]
	require.InDelta(t, tl.timestamp.Sub(produced).Seconds(), tl.doubleValue, 1.0)
}

func TestCommittedAboveEndOffset(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("short", 1)
	k.Produce("short", 0, time.Now())
	k.Commit("ahead", "short", map[int32]int64{0: 50})

	s := startScraper(t, k.testConfig())
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	requireCaughtUp(t, md, pointKey{"ahead", "short", 0})
}

// requireCaughtUp asserts a pair's lag and time lag are both reported as zero.
func requireCaughtUp(t *testing.T, md pmetric.Metrics, key pointKey) {
	t.Helper()
	require.Equal(t, int64(0), pointsOf(md, "kafka.consumer_group.lag")[key].intValue)
	tl, ok := pointsOf(md, "kafka.consumer_group.time_lag")[key]
	require.True(t, ok, "a time lag for %v", key)
	require.Equal(t, 0.0, tl.doubleValue)
}

// TestRecordReadsAreBoundedAndCached: out-of-table groups cost one Fetch per
// broker per scrape while their commits move, none while they stand still, and
// never records of more partitions than max_record_reads_per_scrape (on a
// cluster of at most twice as many partitions), with timestamp_source:
// record_reads.
func TestRecordReadsAreBoundedAndCached(t *testing.T) {
	k := newTestKafka(t, 3)
	// LogAppendTime: the records' stamps date them from the first scrape.
	k.CreateAppendTimeTopic("history", 30)
	old := time.Now()
	offsets := map[int32]int64{}
	for p := range int32(30) {
		k.Produce("history", p, old, old.Add(time.Second), old.Add(2*time.Second))
		offsets[p] = 1
	}
	k.Commit("behind", "history", offsets)

	cfg := k.testConfig()
	cfg.TimestampSource = TimestampSourceRecordReads
	cfg.MaxRecordReadsPerScrape = 20
	s := startScraper(t, cfg)
	fetchesBefore := k.Requests(int16(kmsg.Fetch))
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	fetches := k.Requests(int16(kmsg.Fetch)) - fetchesBefore
	t.Logf("first scrape: %d Fetch requests for 20 capped record reads over 3 brokers", fetches)
	require.LessOrEqual(t, fetches, int64(3))
	require.Len(t, pointsOf(md, "kafka.consumer_group.time_lag"), 20, "the cap bounds the estimates of this scrape")

	md, err = s.scrape(context.Background())
	require.NoError(t, err)
	require.Len(t, pointsOf(md, "kafka.consumer_group.time_lag"), 30, "the rest are read on the next scrape")

	fetchesBefore = k.Requests(int16(kmsg.Fetch))
	md, err = s.scrape(context.Background())
	require.NoError(t, err)
	require.Equal(t, fetchesBefore, k.Requests(int16(kmsg.Fetch)), "unchanged commits cost no Fetch")
	require.Len(t, pointsOf(md, "kafka.consumer_group.time_lag"), 30)
}

// TestColdStartReadsEveryPartitionByTheSecondScrape: after a cold start
// every committed offset is older than its table; on a cluster of more than
// twice max_record_reads_per_scrape partitions, the first scrape reads the
// records of half the partitions, every group's offset on them from one
// Fetch per broker, and the second the rest, so every lagging pair has a
// time lag from the second scrape on whatever the cluster's size; the third
// reads nothing. With the time index the same cap dates half the partitions
// a scrape (TestScaleRequestsPerScrape); these are the record reads'.
func TestColdStartReadsEveryPartitionByTheSecondScrape(t *testing.T) {
	const partitions, groups = 40, 4
	k := newTestKafka(t, 3)
	// LogAppendTime: the records' stamps, their append times, date them
	// from the first scrape.
	k.CreateAppendTimeTopic("history", partitions)
	produced := time.Now()
	stamps := make([]time.Time, 5)
	for p := range int32(partitions) {
		k.Produce("history", p, stamps...)
	}
	for g := range groups {
		offsets := map[int32]int64{}
		for p := range int32(partitions) {
			offsets[p] = int64(g)
		}
		k.Commit(fmt.Sprintf("behind-%d", g), "history", offsets)
	}

	cfg := k.testConfig()
	cfg.TimestampSource = TimestampSourceRecordReads
	cfg.MaxRecordReadsPerScrape = 5
	s := startScraper(t, cfg)
	for scrape, want := range []int{partitions / 2 * groups, partitions * groups, partitions * groups} {
		fetchesBefore := k.Requests(int16(kmsg.Fetch))
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		fetches := k.Requests(int16(kmsg.Fetch)) - fetchesBefore
		timeLags := pointsOf(md, "kafka.consumer_group.time_lag")
		t.Logf("scrape %d: %d Fetch requests, %d time lags", scrape+1, fetches, len(timeLags))
		require.Len(t, timeLags, want, "scrape %d", scrape+1)
		if scrape < 2 {
			require.LessOrEqual(t, fetches, int64(3), "scrape %d: one Fetch per broker", scrape+1)
		} else {
			require.Zero(t, fetches, "every record read is cached")
		}
		for key, tl := range timeLags {
			_, err := strconv.Atoi(strings.TrimPrefix(key.group, "behind-"))
			require.NoError(t, err)
			require.InDelta(t, time.Since(produced).Seconds(), tl.doubleValue, 5, "%v", key)
		}
	}
}

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
// the partition has been idle for lag.IdleBeforeRecordRead the receiver
// reads past the marker, finds no data
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
			// The end offset was just seen moving: not idle until it has
			// stood still for a while.
			time.Sleep(lag.IdleBeforeRecordRead)
			continue
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

// unreadableGroups is a cluster on which the committed offsets of some
// groups fail to read, each with an error of its own, as when their
// coordinator stops answering.
type unreadableGroups struct {
	kafka.Cluster
	failing map[string]bool // their OffsetFetch fails
	extra   map[string]bool // listed besides the cluster's own groups, never described
}

func (u *unreadableGroups) ConsumerGroups(ctx context.Context) ([]string, error) {
	groups, err := u.Cluster.ConsumerGroups(ctx)
	for g := range u.extra {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	return groups, err
}

func (u *unreadableGroups) CommittedOffsets(ctx context.Context, groups []string) (map[string]kafka.Commits, error) {
	readable := groups[:0:0]
	var errs []error
	for _, g := range groups {
		if !u.failing[g] && !u.extra[g] {
			readable = append(readable, g)
			continue
		}
		errs = append(errs, &kafka.GroupError{Group: g, Err: fmt.Errorf("fetch committed offsets of group %q from coordinator 7: %w", g, errCoordinatorGone)})
	}
	out, err := u.Cluster.CommittedOffsets(ctx, readable)
	return out, kafka.Join(append(errs, err)...)
}

func (u *unreadableGroups) DescribeGroups(ctx context.Context, groups []string) (map[string]kafka.GroupDescription, error) {
	known := groups[:0:0]
	for _, g := range groups {
		if !u.extra[g] {
			known = append(known, g)
		}
	}
	return u.Cluster.DescribeGroups(ctx, known)
}

var errCoordinatorGone = errors.New("read tcp 10.0.0.7:9092: i/o timeout")

// TestScrapeErrorOfThousandsOfFailedGroupsStaysBounded: a coordinator of
// 5,000 groups stops answering. The scrape still reports the group that
// could be read, and its error, which the collector logs every scrape, names
// a few of the failed groups and counts the others instead of listing them
// all.
func TestScrapeErrorOfThousandsOfFailedGroupsStaysBounded(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("orders", 1)
	k.Produce("orders", 0, time.Now())
	k.Commit("readable", "orders", map[int32]int64{0: 0})
	extra := map[string]bool{}
	for i := range 5000 {
		extra[fmt.Sprintf("lost-group-%04d", i)] = true
	}
	s := startScraperWith(t, k.testConfig(), zap.NewNop(), func(c kafka.Cluster) kafka.Cluster { return &unreadableGroups{Cluster: c, extra: extra} })

	md, err := s.scrape(context.Background())
	require.Error(t, err)
	require.Contains(t, pointsOf(md, "kafka.consumer_group.lag"), pointKey{"readable", "orders", 0})
	require.Less(t, len(err.Error()), 8192, "the scrape error stays bounded: %d bytes", len(err.Error()))
	require.Contains(t, err.Error(), "lost-group-0000")
	require.Contains(t, err.Error(), "more errors")
}

// TestRequestsPerScrapeByAPI counts the Kafka requests of one steady-state
// scrape, by API, with every committed offset inside its table and with every
// group committed at records older than any table point (cold). 3 brokers,
// 300 partitions, 20 groups = 6,000 group-partitions. With health metrics on,
// DescribeGroups adds one request per coordinator. On partitions whose end
// offset stands still, the records at lagging groups' offsets are read once
// (a transaction marker is not data). These are the counts of
// timestamp_source: record_reads.
func TestRequestsPerScrapeByAPI(t *testing.T) {
	const (
		partitions = 300
		groups     = 20
	)
	k := newTestKafka(t, 3)
	k.CreateTopic("wide", partitions)
	old := time.Now().Add(-time.Hour)
	for p := range int32(partitions) {
		k.Produce("wide", p, old, old.Add(time.Second))
	}
	commitAll := func(offset int64) {
		offsets := map[int32]int64{}
		for p := range int32(partitions) {
			offsets[p] = offset
		}
		for g := range groups {
			k.Commit(fmt.Sprintf("group-%02d", g), "wide", offsets)
		}
	}

	measure := func(name string, s *timeLagScraper) kafkacount.Counts {
		before := k.Counts.Snapshot()
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		counts := k.Counts.Snapshot().Since(before)
		t.Logf("%-42s %s (time lag points: %d)", name, counts, len(pointsOf(md, "kafka.consumer_group.time_lag")))
		return counts
	}

	// Cold: every group is at offset 0, a record an hour old.
	commitAll(0)
	cfg := k.testConfig()
	cfg.TimestampSource = TimestampSourceRecordReads
	// The records were stamped an hour ago on partitions idle since: only
	// their stamps date them, as an operator who knows their producers
	// says (trusted_timestamp_topics).
	cfg.TrustedTimestampTopics = []string{"."}
	s := startScraper(t, cfg)
	first := measure("cold, first scrape:", s)
	require.LessOrEqual(t, first.Of(kmsg.ListOffsets), int64(3))
	require.LessOrEqual(t, first.Of(kmsg.OffsetFetch), int64(3), "one batched OffsetFetch per coordinator")
	require.LessOrEqual(t, first.Of(kmsg.Fetch), int64(3), "one record Fetch per broker")
	require.LessOrEqual(t, first.Of(kmsg.DescribeGroups), int64(3))
	require.Zero(t, first.Of(kmsg.FindCoordinator), "the listing names every group's coordinator")
	steadyCold := measure("cold, steady (commits unchanged):", s)
	require.Zero(t, steadyCold.Of(kmsg.Fetch), "record timestamps are cached")
	require.Zero(t, steadyCold.Of(kmsg.FindCoordinator), "coordinators are cached")
	// The counter also sees the test's own franz-go client, which may
	// refresh its metadata at any time; the receiver's is cached.
	require.LessOrEqual(t, steadyCold.Of(kmsg.Metadata), int64(1))

	// Warm: commits inside the table (the scrapes above put end offset 2
	// into it).
	commitAll(2)
	for p := range int32(partitions) {
		k.Produce("wide", p, time.Now())
	}
	require.NoError(t, s.sampler.Sample(context.Background(), false))
	for p := range int32(partitions) {
		k.Produce("wide", p, time.Now()) // still producing at the scrape
	}
	warm := measure("in table:", s)
	// The groups are a moment behind, inside a bracket as wide as their
	// time lag: one record per partition is read to date it, one Fetch per
	// broker, not one per group.
	require.LessOrEqual(t, warm.Of(kmsg.Fetch), int64(3))
	require.LessOrEqual(t, warm.Of(kmsg.ListOffsets), int64(3))
	require.LessOrEqual(t, warm.Of(kmsg.OffsetFetch), int64(3))
	t.Logf("%d group-partitions on 3 brokers: %d requests per steady scrape", partitions*groups, warm.Total())

	// No write between the last read and this scrape's: the end stood still
	// for a moment, as a partition written a few times a second does
	// between two fast samples. The next write makes the lag data again:
	// nothing is read.
	still := measure("in table, still for a moment:", s)
	require.Zero(t, still.Of(kmsg.Fetch), "a partition still for less than %s is not read", lag.IdleBeforeRecordRead)

	// Production stops with the groups behind: whether what is left is data
	// or transaction markers, only a read tells (here the warm scrape's read
	// of the coarse bracket already did); at most one Fetch per broker, then
	// cached while the commits stand.
	time.Sleep(lag.IdleBeforeRecordRead)
	idle := measure("in table, idle:", s)
	require.LessOrEqual(t, idle.Of(kmsg.Fetch), int64(3))
	require.Zero(t, measure("in table, idle, steady:", s).Of(kmsg.Fetch))
}

// TestCoordinatorFromListing: every broker lists the groups it coordinates,
// so the listing a scrape sends anyway places every group and no
// FindCoordinator is sent, first scrape included. A group whose coordinator
// then answers NOT_COORDINATOR is looked up the usual way (FindCoordinator)
// and is whole again on the next scrape.
func TestCoordinatorFromListing(t *testing.T) {
	k := newTestKafka(t, 3)
	k.CreateTopic("orders", 6)
	groups := []string{"g-0", "g-1", "g-2", "g-3", "g-4", "g-5"}
	for _, g := range groups {
		k.Commit(g, "orders", map[int32]int64{0: 0, 1: 0})
	}
	s := startScraper(t, k.testConfig())
	scrape := func() (kafkacount.Counts, map[pointKey]int64, error) {
		before := k.Counts.Snapshot()
		md, err := s.scrape(context.Background())
		return k.Counts.Snapshot().Since(before), intValues(pointsOf(md, "kafka.consumer_group.offset")), err
	}

	first, offsets, err := scrape()
	require.NoError(t, err)
	require.Len(t, offsets, 2*len(groups))
	require.Zero(t, first.Of(kmsg.FindCoordinator), "the listing placed every group")

	k.Cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetFetch}, Group: "g-1", Err: kerr.NotCoordinator, Count: 1})
	moved, offsets, err := scrape()
	require.ErrorContains(t, err, "g-1")
	require.Len(t, offsets, 2*(len(groups)-1), "the other groups are still reported")
	require.Positive(t, moved.Of(kmsg.FindCoordinator), "the group the listing misplaced is looked up")

	again, offsets, err := scrape()
	require.NoError(t, err)
	require.Len(t, offsets, 2*len(groups))
	require.Zero(t, again.Of(kmsg.FindCoordinator))
}

// TestOneOffsetFetchPerCoordinatorEveryScrape: 30 groups on 3
// coordinators, the sampler sampling meanwhile. Every scrape of ten sends
// one batched OffsetFetch per coordinator, however many groups it holds,
// and no FindCoordinator: the listing names each group's coordinator.
func TestOneOffsetFetchPerCoordinatorEveryScrape(t *testing.T) {
	k := newTestKafka(t, 3)
	const partitions = 30
	k.CreateTopic("orders", partitions)
	offsets := map[int32]int64{}
	for p := range int32(partitions) {
		offsets[p] = 0
	}
	coordinators := map[int32]bool{}
	for i := range 30 {
		g := fmt.Sprintf("group-%02d", i)
		k.Commit(g, "orders", offsets)
		coordinators[k.Cluster.CoordinatorFor(g)] = true
	}
	require.Len(t, coordinators, 3, "every broker coordinates groups")
	cfg := k.testConfig()
	cfg.SamplingInterval = 100 * time.Millisecond
	s := startScraper(t, cfg)
	for i := range 10 {
		before := k.Counts.Snapshot()
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		got := k.Counts.Snapshot().Since(before)
		require.Len(t, pointsOf(md, "kafka.consumer_group.lag"), 30*partitions, "scrape %d", i)
		require.Equal(t, int64(len(coordinators)), got.Of(kmsg.OffsetFetch), "scrape %d: OffsetFetch per coordinator", i)
		require.Zero(t, got.Of(kmsg.FindCoordinator), "scrape %d", i)
	}
}

// updateGolden rewrites testdata/golden_scrape.yaml from the scrape.
var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden_scrape.yaml from TestGoldenScrape")

// TestGoldenScrape: the whole first scrape of a small fixed cluster, point
// for point, against testdata/golden_scrape.yaml: every metric on by
// default with its description, unit, type, attributes and values. Two
// topics, two groups (one behind on both partitions of orders, one caught
// up on payments), records a minute apart an hour ago. What depends on the
// clock is ignored: timestamps, the time lags (now minus an hour and
// some minutes) and the retention margin (a week minus the time lag), whose
// points must still be there.
func TestGoldenScrape(t *testing.T) {
	k := newTestKafka(t, 1)
	// LogAppendTime: the records' stamps date them from the first scrape.
	k.CreateAppendTimeTopic("orders", 2)
	k.CreateAppendTimeTopic("payments", 1)
	base := time.Now().Add(-time.Hour).Truncate(time.Minute)
	minutes := func(n int) []time.Time {
		out := make([]time.Time, n)
		for i := range out {
			out[i] = base.Add(time.Duration(i) * time.Minute)
		}
		return out
	}
	k.Produce("orders", 0, minutes(10)...)
	k.Produce("orders", 1, minutes(4)...)
	k.Produce("payments", 0, minutes(3)...)
	k.Commit("billing", "orders", map[int32]int64{0: 7, 1: 1})
	k.Commit("audit", "payments", map[int32]int64{0: 3})

	cfg := k.testConfig()
	cfg.ClusterAlias = "golden"
	s := startScraper(t, cfg)
	md, err := s.scrape(t.Context())
	require.NoError(t, err)

	path := filepath.Join("testdata", "golden_scrape.yaml")
	if *updateGolden {
		require.NoError(t, golden.WriteMetrics(t, path, md))
	}
	want, err := golden.ReadMetrics(path)
	require.NoError(t, err)
	require.NoError(t, pmetrictest.CompareMetrics(want, md,
		pmetrictest.IgnoreTimestamp(),
		pmetrictest.IgnoreStartTimestamp(),
		pmetrictest.IgnoreScopeVersion(),
		pmetrictest.IgnoreMetricValues("kafka.consumer_group.time_lag", "kafka.consumer_group.time_lag_max", "kafka.consumer_group.retention_margin"),
		pmetrictest.IgnoreMetricsOrder(),
		pmetrictest.IgnoreMetricDataPointsOrder(),
	))
}
