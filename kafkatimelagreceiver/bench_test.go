//go:build !unit

package kafkatimelagreceiver

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/dating"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/emit"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/sampler"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kafkacount"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/scaleload"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
)

// Scale benchmarks (issue #5): one full scrape at 1k, 10k and 100k
// (group, partition) pairs, the sampler at 10k and 100k partitions, and the
// naive end-offset path (one ListOffsets per partition per group, as a
// `client.GetOffset` loop sends) at the same sizes, all against an in-process
// kfake cluster of 3 brokers. Every benchmark reports the Kafka requests it
// sent per operation, by API key, as counted by kfake's Control observer.
//
// kfake runs in the benchmark's process, so ns/op, cpu-ms/op, B/op and
// allocs/op include the broker's side of every request. cmd/scalebench
// measures the collector process alone. Run with `make bench`; BENCHMARKS.md
// has the figures and the commands.
//
// TestScaleRequestsPerScrape keeps the request-count bounds in `go test`:
// requests per scrape grow with brokers and coordinators, never with
// partitions or groups. It asserts counts only, never timings.

// scaleBrokers is the broker count of every scale cluster.
const scaleBrokers = kfaketest.ScaleBrokers

// superlinearGrowth bounds how much the cost per pair of a steady scrape
// may grow from one size to the next (10x more pairs) before BenchmarkScrape
// skips the larger sizes.
const superlinearGrowth = 4

// scaleKafka is the scale cluster of one test or benchmark, closed with it.
type scaleKafka struct{ *kfaketest.Scale }

func newScaleKafka(tb testing.TB, opts ...kfake.Opt) *scaleKafka {
	tb.Helper()
	return &scaleKafka{kfaketest.NewScale(tb, opts...)}
}

// config is the receiver's default configuration pointed at the cluster,
// with the sampler out of the way (the scrape benchmarks time scrapes only).
func (k *scaleKafka) config() *Config {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.Brokers = k.Addrs
	cfg.SamplingInterval = time.Hour
	cfg.Timeout = time.Minute
	// The workload's records were stamped when sent, an hour before the
	// scrapes, on partitions idle since: only their stamps date them, as
	// an operator who knows their producers says (trusted_timestamp_topics).
	cfg.TrustedTimestampTopics = []string{"."}
	// The scrapes follow each other within seconds, so the tables are too
	// young to show a partition still, and the records at the groups'
	// offsets are read to tell data from transaction markers within the
	// byte budget, four partitions a scrape: the warm-up reads them all in
	// its first scrapes instead, and the steady scrapes measured read none.
	cfg.MaxRecordReadBytesPerScrape = 1 << 30
	return cfg
}

// newScaleScraper builds and starts a scraper; stop shuts it down.
func newScaleScraper(tb testing.TB, cfg *Config) (s *timeLagScraper, stop func()) {
	tb.Helper()
	require.NoError(tb, cfg.Validate())
	s, err := newTimeLagScraper(cfg, receivertest.NewNopSettings(metadata.Type), nil)
	require.NoError(tb, err)
	require.NoError(tb, s.start(context.Background(), nil))
	var once atomic.Bool
	stop = func() {
		if once.CompareAndSwap(false, true) {
			require.NoError(tb, s.shutdown(context.Background()))
		}
	}
	tb.Cleanup(stop)
	return s, stop
}

// warmUp scrapes until a scrape reads no record timestamps: every committed
// offset older than its table then has its timestamp cached, which is where
// a long-running receiver on an unchanging cluster settles. It returns the
// number of scrapes it took.
func warmUp(tb testing.TB, k *scaleKafka, s *timeLagScraper) int {
	tb.Helper()
	for i := 1; i <= 30; i++ {
		before := k.Requests()
		_, err := s.scrape(context.Background())
		require.NoError(tb, err)
		if k.Requests().Since(before).Of(kmsg.Fetch) == 0 {
			return i
		}
	}
	tb.Fatal("record reads did not settle within 30 scrapes")
	return 0
}

// BenchmarkScrape times one full scrape (list groups, committed offsets, end
// offsets, record reads, group descriptions, lags and the pdata build).
//
//   - steady: a receiver that has been running: coordinators known and the
//     record timestamps of committed offsets older than their tables cached.
//   - first: a fresh receiver's first scrape: connecting, finding the
//     coordinators and reading record timestamps, at most
//     max_record_reads_per_scrape (default 1,000) of them.
//
// A size is skipped when the steady scrape's cost per pair grew more than
// superlinearGrowth times between the two sizes before it: a quadratic step
// (such as the generated MetricsBuilder's search for a point with the same
// attributes, see BENCHMARKS.md) would make 100k pairs take many minutes a
// scrape.
func BenchmarkScrape(b *testing.B) {
	perPair := make([]time.Duration, len(kfaketest.ScrapeWorkloads)) // steady scrape time per pair
	for i, w := range kfaketest.ScrapeWorkloads {
		b.Run(w.Name, func(b *testing.B) {
			if i >= 2 && perPair[i-2] > 0 && perPair[i-1] > superlinearGrowth*perPair[i-2] {
				msg := fmt.Sprintf("%s skipped: a steady scrape cost %s per pair at %d pairs against %s at %d: superlinear, %d pairs would take minutes a scrape",
					b.Name(), perPair[i-1], kfaketest.ScrapeWorkloads[i-1].Pairs(), perPair[i-2], kfaketest.ScrapeWorkloads[i-2].Pairs(), w.Pairs())
				// A skipped benchmark prints nothing without -v: say it anyway.
				fmt.Fprintln(os.Stderr, msg)
				b.Skip(msg)
			}
			k := newScaleKafka(b)
			k.LoadWorkload(b, w.Workload)
			b.Run("steady", func(b *testing.B) {
				s, _ := newScaleScraper(b, k.config())
				warmUp(b, k, s)
				points, requests, cpu := timeScrapes(b, k, s)
				reportScrape(b, w, requests, cpu, points)
				perPair[i] = b.Elapsed() / time.Duration(b.N*w.Pairs())
			})
			b.Run("first", func(b *testing.B) {
				cfg := k.config()
				var (
					requests kafkacount.Counts
					cpu      time.Duration
					points   int
				)
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					b.StopTimer()
					s, stop := newScaleScraper(b, cfg)
					before, cpuBefore := k.Requests(), kfaketest.CPUTime(b)
					b.StartTimer()
					md, err := s.scrape(context.Background())
					b.StopTimer()
					if err != nil {
						b.Fatal(err)
					}
					cpu += kfaketest.CPUTime(b) - cpuBefore
					got := k.Requests().Since(before)
					for i := range requests {
						requests[i] += got[i]
					}
					points = md.DataPointCount()
					stop()
					b.StartTimer()
				}
				b.StopTimer()
				reportScrape(b, w, requests, cpu, points)
			})
		})
	}
}

// timeScrapes runs b.N timed scrapes and returns the data points of the
// last, and the requests and CPU time of them all.
func timeScrapes(b *testing.B, k *scaleKafka, s *timeLagScraper) (points int, requests kafkacount.Counts, cpu time.Duration) {
	b.ReportAllocs()
	b.ResetTimer()
	before, cpuBefore := k.Requests(), kfaketest.CPUTime(b)
	for range b.N {
		md, err := s.scrape(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		points = md.DataPointCount()
	}
	b.StopTimer()
	return points, k.Requests().Since(before), kfaketest.CPUTime(b) - cpuBefore
}

func reportScrape(b *testing.B, w kfaketest.ScaleWorkload, requests kafkacount.Counts, cpu time.Duration, points int) {
	kfaketest.ReportRequests(b, requests)
	kfaketest.ReportCPU(b, cpu)
	b.ReportMetric(float64(w.Pairs()), "pairs")
	b.ReportMetric(float64(points), "points/op")
}

// samplerWorkloads spread the partitions over topics of 2,000 partitions.
var samplerWorkloads = []kfaketest.ScaleWorkload{
	{Name: "10k", Workload: scaleload.Workload{Topics: 5, PartitionsPerTopic: 2000}},
	{Name: "100k", Workload: scaleload.Workload{Topics: 50, PartitionsPerTopic: 2000}},
}

// BenchmarkSampler times one sample: the end offsets of every tracked
// partition, read and appended to the tables.
func BenchmarkSampler(b *testing.B) {
	for _, w := range samplerWorkloads {
		b.Run(w.Name, func(b *testing.B) {
			k := newScaleKafka(b)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			tracked := map[kafka.TopicPartition]struct{}{}
			for t := range w.Topics {
				resp, err := k.Admin.CreateTopic(ctx, w.PartitionsPerTopic, 1, nil, w.Topic(t))
				require.NoError(b, err)
				require.NoError(b, resp.Err)
				for p := range w.PartitionsPerTopic {
					tracked[kafka.TopicPartition{Topic: w.Topic(t), Partition: p}] = struct{}{}
				}
			}
			cfg := k.config()
			cl, err := newCluster(context.Background(), cfg, nil, zap.NewNop(), nil)
			require.NoError(b, err)
			b.Cleanup(func() { _ = cl.Close() })
			tables := timetable.NewStore(cfg.MaxSamples, timetable.GapSamples*cfg.SamplingInterval, time.Now)
			tables.Track(tracked, time.Now(), 0)
			smp := sampler.New(cl, tables, sampler.Settings{Interval: cfg.SamplingInterval, Timeout: cfg.requestTimeout()})
			// The first sample connects and loads the metadata.
			require.NoError(b, smp.Sample(ctx, false))
			b.ReportAllocs()
			b.ResetTimer()
			before, cpu := k.Requests(), kfaketest.CPUTime(b)
			for range b.N {
				if err := smp.Sample(ctx, false); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			kfaketest.ReportRequests(b, k.Requests().Since(before))
			kfaketest.ReportCPU(b, kfaketest.CPUTime(b)-cpu)
			b.ReportMetric(float64(len(tracked)), "partitions")
		})
	}
}

// TestScaleRequestsPerScrape: 50 groups x 2,000 partitions on 3 brokers.
// However many groups and partitions, a scrape sends one ListOffsets per
// broker for the end offsets and at most a bounded number for the time
// index (none once every record is dated), and one OffsetFetch (batched,
// v8) per coordinator; a sample one ListOffsets per broker. Counts only:
// timings stay in the benchmarks.
func TestScaleRequestsPerScrape(t *testing.T) {
	w := kfaketest.ScrapeWorkloads[len(kfaketest.ScrapeWorkloads)-1]
	k := newScaleKafka(t)
	k.LoadWorkload(t, w.Workload)
	coordinators := k.coordinators(t, w)
	t.Logf("%d groups on %d coordinators", w.Groups, coordinators)

	cfg := k.config()
	// The per-pair metrics are off: they do not change what is asked of
	// Kafka, and building 100,000 points of each is the benchmarks' concern,
	// not this test's. The per-topic aggregates stay on: they need every
	// pair's lag and time lag all the same.
	cfg.Metrics.KafkaConsumerGroupOffset.Enabled = false
	cfg.Metrics.KafkaConsumerGroupLag.Enabled = false
	cfg.Metrics.KafkaConsumerGroupTimeLag.Enabled = false
	cfg.Metrics.KafkaConsumerGroupLostMessages.Enabled = false
	cfg.Metrics.KafkaPartitionCurrentOffset.Enabled = false
	s, _ := newScaleScraper(t, cfg)
	for i := range 3 {
		before := k.Requests()
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		got := k.Requests().Since(before)
		t.Logf("scrape %d of %d pairs: %v", i+1, w.Pairs(), got)
		require.Equal(t, w.Groups*w.Topics, pointsOfCount(md, "kafka.consumer_group.lag_sum"))
		if i == 0 {
			// A first scrape dates at most max_record_reads_per_scrape
			// partitions' records; a topic with one left undated has no
			// time_lag_max rather than the maximum of the others.
			require.LessOrEqual(t, pointsOfCount(md, "kafka.consumer_group.time_lag_max"), w.Groups*w.Topics)
		} else {
			require.Equal(t, w.Groups*w.Topics, pointsOfCount(md, "kafka.consumer_group.time_lag_max"))
		}
		// The end offsets, then the time index's rounds: each round one
		// request per leader for each time a partition is asked.
		require.LessOrEqual(t, got.Of(kmsg.ListOffsets), int64(scaleBrokers*(1+dating.MaxIndexRounds*dating.MaxAsksPerPartition)), "ListOffsets per scrape")
		if i == 2 {
			// The first two scrapes dated every record (half the
			// partitions each): the index is not asked again.
			require.Equal(t, int64(scaleBrokers), got.Of(kmsg.ListOffsets), "ListOffsets once every record is dated")
		}
		require.LessOrEqual(t, got.Of(kmsg.OffsetFetch), int64(coordinators), "OffsetFetch per scrape")
		require.LessOrEqual(t, got.Of(kmsg.ListGroups), int64(scaleBrokers), "ListGroups per scrape")
		require.LessOrEqual(t, got.Of(kmsg.DescribeGroups), int64(coordinators), "DescribeGroups per scrape")
		// Record reads are capped (1,000 per scrape), which one Fetch per
		// leader carries; a partition cut off by the response size limit
		// is asked again.
		require.LessOrEqual(t, got.Of(kmsg.Fetch), int64(4*scaleBrokers), "Fetch per scrape")
		require.Zero(t, got.Of(kmsg.FindCoordinator), "the listing names every group's coordinator, first scrape included")
		if i > 0 {
			// The counter sees every client, and the test's own franz-go
			// client refreshes its metadata on a timer of its own: one
			// Metadata request in the window is not the receiver's doing
			// (it asks only on its 5-minute refresh or after an error).
			require.LessOrEqual(t, got.Of(kmsg.Metadata), int64(1), "metadata is cached")
		}
	}

	before := k.Requests()
	require.NoError(t, s.sampler.Sample(context.Background(), true))
	got := k.Requests().Since(before)
	t.Logf("full sample (log start offsets, topic ids): %v", got)
	require.LessOrEqual(t, got.Of(kmsg.ListOffsets), int64(2*scaleBrokers), "end and start offsets, one request per broker each")
	require.Equal(t, int64(1), got.Of(kmsg.Metadata), "the topic ids of every tracked topic, in one request")
	require.Equal(t, got.Of(kmsg.ListOffsets)+1, got.Total(), "a sample sends ListOffsets and that Metadata only")
}

// TestScaleOffsetFetchFallback: a coordinator without OffsetFetch v8 gets
// one OffsetFetch per group, and the scrape still reports every pair.
func TestScaleOffsetFetchFallback(t *testing.T) {
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(int16(kmsg.OffsetFetch), 7)
	w := kfaketest.ScaleWorkload{Name: "fallback", Workload: scaleload.Workload{Groups: 12, Topics: 1, PartitionsPerTopic: 50}}
	k := newScaleKafka(t, kfake.MaxVersions(versions))
	k.LoadWorkload(t, w.Workload)

	s, _ := newScaleScraper(t, k.config())
	_, err := s.scrape(context.Background()) // connects, finds coordinators, may try v8 once
	require.NoError(t, err)
	before := k.Requests()
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	got := k.Requests().Since(before)
	t.Logf("scrape of %d groups without OffsetFetch v8: %v", w.Groups, got)
	require.Equal(t, w.Pairs(), pointsOfCount(md, "kafka.consumer_group.lag"))
	require.LessOrEqual(t, got.Of(kmsg.OffsetFetch), int64(w.Groups+scaleBrokers), "one per group, plus at most one refused batch per coordinator")
	require.GreaterOrEqual(t, got.Of(kmsg.OffsetFetch), int64(w.Groups))
	require.LessOrEqual(t, got.Of(kmsg.ListOffsets), int64(scaleBrokers))
}

// coordinators counts the distinct coordinators of the workload's groups.
func (k *scaleKafka) coordinators(tb testing.TB, w kfaketest.ScaleWorkload) int {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := k.Coordinators(ctx, w.Workload)
	require.NoError(tb, err)
	return n
}

// pointsOfCount counts the data points of a gauge, duplicates included.
func pointsOfCount(md pmetric.Metrics, name string) int {
	n := 0
	emit.EachMetric(md, func(m pmetric.Metric) {
		if m.Name() == name {
			n += m.Gauge().DataPoints().Len()
		}
	})
	return n
}

// BenchmarkCoordinatedScrape times one replica's steady scrape when three
// coordinated replicas share 100,000 pairs laid out as clusters usually are
// (20 topics of 1,000 partitions, each read by 5 groups of its own),
// against BenchmarkScrape/100k, which is one collector with every pair. The
// replica reads every group's commits (to agree on each group's home
// topic) and does the rest for its topics; "pairs" is the pairs it
// reports.
func BenchmarkCoordinatedScrape(b *testing.B) {
	w := kfaketest.ScaleWorkload{Name: "100k-apart", Workload: scaleload.Workload{Groups: 5, Topics: 20, PartitionsPerTopic: 1000, Apart: true}}
	k := newScaleKafka(b)
	k.LoadWorkload(b, w.Workload)
	replicas := make([]*timeLagScraper, 3)
	for i := range replicas {
		cfg := k.config()
		cfg.Coordination.GroupID = "bench-replicas"
		replicas[i], _ = newScaleScraper(b, cfg)
	}
	// Joined: the three together report every group, each a share.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		total, shares := 0, 0
		for _, s := range replicas {
			md, err := s.scrape(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			n := pointsOfCount(md, "kafka.consumer_group.lag")
			total += n
			if n > 0 {
				shares++
			}
		}
		if total == w.Pairs() && shares == len(replicas) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the replicas did not split the groups: %d of %d pairs, %d replicas with a share", total, w.Pairs(), shares)
		}
		time.Sleep(time.Second)
	}
	s := replicas[0]
	warmUp(b, k, s)
	md, err := s.scrape(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	pairs := pointsOfCount(md, "kafka.consumer_group.lag")
	points, requests, cpu := timeScrapes(b, k, s)
	kfaketest.ReportRequests(b, requests)
	kfaketest.ReportCPU(b, cpu)
	b.ReportMetric(float64(pairs), "pairs")
	b.ReportMetric(float64(points), "points/op")
}
