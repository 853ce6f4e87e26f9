//go:build !unit

package kafkatimelagreceiver

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/accuracy"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/dating"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
)

// TestSimulationAgreesWithReceiver runs the real receiver against an
// in-process cluster on a steady, a bursty and a steady partition whose
// producer's clock is 1.5 s behind for about 15 s,
// scraping every second, and records every append and commit. The
// simulation then replays the same appends, with the scrapes at the
// instants the receiver made them and the committed offsets it saw,
// through the estimator rows 1 and 2 of docs/accuracy.md run; both are
// scored against the same truth (when the test produced each record), for
// the receiver as shipped and one that reads no records. Every scrape's time
// lag must agree to within 2 ms (whether there is one, and its value), so
// their error figures agree too, and the shipped receiver must meet the
// accuracy target (on the skewed partition, take the skew out once its
// reads measured the clock). The scrapes' own
// end-offset reads are the tables' only points (the sampler's interval is
// an hour): everything the test does happens in one goroutine, between
// scrapes, so what both see does not depend on how fast the machine is.
func TestSimulationAgreesWithReceiver(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for about 15 s")
	}
	// Scrapes every second are the tables' points: the interval the
	// errors are judged at.
	const interval = time.Second
	k := newTestKafka(t, 1)
	topics := []string{"steady", "bursty", "skewed"}
	for _, topic := range topics {
		k.CreateTopic(topic, 1)
	}
	logs := map[string]*accuracy.Timeline{"steady": {}, "bursty": {}, "skewed": {}}
	// The skewed topic's producer (an idempotent one, as the test
	// cluster's client is) stamps its records by a clock 1.5 s behind.
	skews := map[string]time.Duration{"skewed": -1500 * time.Millisecond}
	produce := func(topic string, n int) (first int64) {
		ts := time.Now()
		stamps := make([]time.Time, n)
		for i := range stamps {
			stamps[i] = ts.Add(skews[topic])
		}
		first = k.Produce(topic, 0, stamps...)
		at := ts.UnixMilli() * 1e6 // Kafka keeps milliseconds
		logs[topic].AppendStamped(0, at, at+int64(skews[topic]), int64(n))
		return first
	}
	for _, topic := range topics {
		// Committed before the first scrape, so that it tracks both.
		k.Commit(topic+"-reader", topic, map[int32]int64{0: produce(topic, 1)})
	}

	// The receiver as shipped, reading records instead of asking the time
	// index, and reading none (its tables alone), against the
	// simulation's rows 1 to 3.
	rows := receiverRows()
	receivers := make([]*replayedScraper, len(rows))
	for i, row := range rows {
		receivers[i] = startReplayedScraper(t, row.config(k)) // sampling every hour: none during the test
	}
	runs := newScrapedRuns()
	rng := rand.New(rand.NewPCG(35, 1))
	var steadyTimes []time.Time // append time of each steady offset
	steadyTimes = append(steadyTimes, time.Now())
	nextBurst, nextScrape, burstFirst := time.Now(), time.Now(), int64(1)
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		now := time.Now()
		produce("steady", 1)
		produce("skewed", 1)
		steadyTimes = append(steadyTimes, now)
		// The steady reader is 1.5 s behind: its next record is the first
		// appended since.
		committed := int64(0)
		for committed < int64(len(steadyTimes)) && steadyTimes[committed].Before(now.Add(-1500*time.Millisecond)) {
			committed++
		}
		k.Commit("steady-reader", "steady", map[int32]int64{0: committed})
		k.Commit("skewed-reader", "skewed", map[int32]int64{0: committed})
		if !now.Before(nextBurst) {
			burstFirst = produce("bursty", 200)
			nextBurst = now.Add(4*time.Second + time.Duration(rng.Int64N(int64(2*time.Second))))
		}
		// The bursty reader starts on the newest burst a moment after it
		// lands and reads it part way.
		k.Commit("bursty-reader", "bursty", map[int32]int64{0: burstFirst + rng.Int64N(200)})
		if now.Before(nextScrape) {
			continue
		}
		nextScrape = now.Add(interval)
		for i, r := range receivers {
			runs.scrape(t, r, rows[i].method.Key)
		}
	}

	for _, row := range rows {
		method := row.method
		for _, topic := range topics {
			id := partitionRun{method.Key, topic, 0}
			real, realStats, simStats := runs.requireAgreement(t, id, logs[topic], method, interval)
			if method.Key == accuracy.ReceiverTablesOnly.Key {
				continue
			}
			if topic == "skewed" {
				// The first scrapes date records by the producer's clock,
				// before reads have measured it; from the third on the
				// measured clock dates them. How closely depends on how
				// near the samples the test's appends land, which is the
				// machine's speed here (the simulation's skewed shape
				// holds it to the target): only the skew's being taken
				// out is asserted.
				for i, p := range real[2:] {
					require.Less(t, math.Abs(p.Estimate-p.Truth), 0.5, "skewed, scrape %d: error against a clock 1.5 s behind", i+2)
				}
				continue
			}
			require.True(t, realStats.Met(), "%s: the receiver misses the target (ratio %.2f)", topic, realStats.TargetP95)
			require.True(t, simStats.Met(), "%s: the simulation misses the target (ratio %.2f)", topic, simStats.TargetP95)
		}
	}
}

// TestSimulationAgreesWithReceiverOnEarlyStamps is
// TestSimulationAgreesWithReceiver for producers that stamp each record 0
// to 500 ms (uniform) before the leader appends it, as a producer does
// whose batches wait before they are sent, on true clocks: the stamp is
// when the record was sent. An idempotent producer (its batches carry its
// ID, so the receiver measures its clock) and one without an ID (its
// records' timestamps taken as they stand) write a steady partition each
// and a third together, one record every 100 ms, read 1.5 s behind; each
// also writes bursts of 200 records to a partition of its own, sent over
// up to 500 ms, read part way. The rows compared are the receiver as
// shipped (timestamp_source record_reads) and dating from the time index
// (time_index): every scrape's time lag must agree with the simulation's.
func TestSimulationAgreesWithReceiverOnEarlyStamps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for about 15 s")
	}
	const (
		interval = time.Second
		maxEarly = 500 * time.Millisecond
		behind   = 1500 * time.Millisecond // the steady readers'
		burst    = 200
	)
	k := newTestKafka(t, 1)
	k.CreateTopic("steady", 3)
	k.CreateTopic("bursty", 2)
	type writer struct {
		producer *kfaketest.Producer
		id       int64 // in the timeline
		noID     bool
	}
	idempotent := writer{producer: k.NewProducer(), id: 1}
	noID := writer{producer: k.NewProducer(kgo.DisableIdempotentWrite()), id: 2, noID: true}
	type partition struct {
		topic string
		index int32
	}
	// In slices, not maps: the seeded delays go to the same records
	// whatever the maps' order.
	steady := []struct {
		partition
		writers []writer
	}{
		{partition{"steady", 0}, []writer{idempotent}},
		{partition{"steady", 1}, []writer{noID}},
		{partition{"steady", 2}, []writer{idempotent, noID}},
	}
	bursty := []struct {
		partition
		writer
	}{
		{partition{"bursty", 0}, idempotent},
		{partition{"bursty", 1}, noID},
	}
	var parts []partition
	logs := map[partition]*accuracy.Timeline{}
	for _, s := range steady {
		parts = append(parts, s.partition)
	}
	for _, b := range bursty {
		parts = append(parts, b.partition)
	}
	for _, p := range parts {
		logs[p] = &accuracy.Timeline{}
	}
	rng := rand.New(rand.NewPCG(43, 500))
	early := func() int64 { return rng.Int64N(maxEarly.Milliseconds()) * int64(time.Millisecond) }
	// produce appends n records from w, each stamped (and sent, on a true
	// clock) 0 to 500 ms before the append: a batch's records were sent
	// one after another, in a stretch of up to 500 ms. The timeline logs
	// the batch first and the records are produced with its stamps, so
	// that both hold the same milliseconds.
	produce := func(p partition, w writer, n int64) (first int64) {
		at := time.Now().UnixMilli() * int64(time.Millisecond) // Kafka keeps milliseconds
		sentFirst := at - early()
		sentLast := sentFirst
		if n > 1 {
			other := at - early()
			sentFirst, sentLast = min(sentFirst, other), max(sentFirst, other)
		}
		log := logs[p]
		first = log.EndOffset()
		log.AppendBatch(accuracy.Batch{Producer: w.id, NoID: w.noID, At: at, Visible: at,
			FirstStamp: sentFirst, LastStamp: sentLast, SentFirst: sentFirst, SentLast: sentLast, Records: n})
		require.Equal(t, first+n, log.EndOffset(), "%v: appended in time order", p)
		stamps := make([]time.Time, n)
		for i := range stamps {
			stamp, _ := log.Stamp(first + int64(i))
			stamps[i] = time.Unix(0, stamp)
		}
		require.Equal(t, first, w.producer.Produce(p.topic, p.index, stamps...), "%v: the timeline's offsets are the cluster's", p)
		return first
	}
	commit := func(group string, offsets map[partition]int64) {
		byTopic := map[string]map[int32]int64{}
		for p, offset := range offsets {
			if byTopic[p.topic] == nil {
				byTopic[p.topic] = map[int32]int64{}
			}
			byTopic[p.topic][p.index] = offset
		}
		for topic, o := range byTopic {
			k.Commit(group, topic, o)
		}
	}
	// Committed before the first scrape, so that it tracks every partition.
	firsts := map[partition]int64{}
	for _, s := range steady {
		for _, w := range s.writers {
			firsts[s.partition] = produce(s.partition, w, 1)
		}
	}
	commit("steady-reader", firsts)
	burstFirst, nextBurst := map[partition]int64{}, map[partition]time.Time{}
	for _, b := range bursty {
		burstFirst[b.partition] = produce(b.partition, b.writer, burst)
		nextBurst[b.partition] = time.Now().Add(time.Duration(rng.Int64N(int64(4 * time.Second))))
	}
	commit("bursty-reader", burstFirst)

	// Sampling every hour: the scrapes' end-offset reads are the tables'
	// only points.
	rows := receiverRows()[:2]
	receivers := make([]*replayedScraper, len(rows))
	for i, row := range rows {
		// The simulation replays each partition alone, with a whole
		// scrape's byte budget of record reads: the receiver reads all
		// five in one scrape, and on the first scrapes, their tables too
		// young to tell records from transaction markers, every one wants
		// a read. With the default budget (four partitions) the one left
		// out, by lag order, is read a scrape later than the simulation
		// reads it, its producer's clock measured from other records, and
		// a later scrape may date a record apart.
		cfg := row.config(k)
		cfg.MaxRecordReadBytesPerScrape = int64(len(parts)) * dating.FetchBytesPerPartition
		receivers[i] = startReplayedScraper(t, cfg)
	}
	runs := newScrapedRuns()
	nextScrape := time.Now()
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		now := time.Now()
		committed := map[partition]int64{}
		for _, s := range steady {
			for _, w := range s.writers {
				produce(s.partition, w, 1)
			}
			committed[s.partition] = logs[s.partition].EndAt(now.Add(-behind).UnixNano())
		}
		commit("steady-reader", committed)
		committed = map[partition]int64{}
		for _, b := range bursty {
			p := b.partition
			if !now.Before(nextBurst[p]) {
				burstFirst[p] = produce(p, b.writer, burst)
				nextBurst[p] = now.Add(3*time.Second + time.Duration(rng.Int64N(int64(3*time.Second))))
			}
			// The reader starts on the newest burst a moment after it
			// lands and reads it part way.
			committed[p] = burstFirst[p] + rng.Int64N(burst)
		}
		commit("bursty-reader", committed)
		if now.Before(nextScrape) {
			continue
		}
		nextScrape = now.Add(interval)
		for i, r := range receivers {
			runs.scrape(t, r, rows[i].method.Key)
		}
	}

	for _, row := range rows {
		for _, p := range parts {
			// Reading the records of bursts, the receiver's clock bounds
			// depend on which batches a Fetch returns, which the
			// simulation models by record size: where a scrape falls
			// against a burst, it measures the clock tens of milliseconds
			// apart from the receiver's. Those scrapes are logged.
			exact := row.method.Key != accuracy.ReceiverRecordReads.Key || p.topic != "bursty"
			_, realStats, simStats := runs.compare(t, partitionRun{row.method.Key, p.topic, int64(p.index)}, logs[p], row.method, interval, exact)
			// At 1 s sampling the relative bound is 0.1 s, which records
			// stamped up to 0.5 s before their append miss on every
			// partition, as the simulation's slow producers do at 1 s
			// (docs/accuracy.md, where the receiver misses): only the
			// absolute view is met, and held.
			for side, st := range map[string]accuracy.Stats{"receiver": realStats, "simulation": simStats} {
				require.LessOrEqual(t, st.AbsoluteP95, 1.0, "%s %v: the %s misses the absolute view", row.method.Name, p, side)
			}
		}
	}
}

// partitionRun names one receiver row's scrapes of one partition.
type partitionRun struct {
	receiver, topic string
	partition       int64
}

// receiverRow is one of the simulation's rows of this receiver, with the
// receiver configured as it runs.
type receiverRow struct {
	method accuracy.MethodSpec
	// source is its timestamp_source; tablesOnly reads nothing
	// (max_record_reads_per_scrape 0).
	source     string
	tablesOnly bool
}

// receiverRows are the simulation's rows of this receiver: as shipped,
// reading records instead of asking the time index, and its tables alone.
func receiverRows() []receiverRow {
	return []receiverRow{
		{method: accuracy.Receiver, source: TimestampSourceTimeIndex},
		{method: accuracy.ReceiverRecordReads, source: TimestampSourceRecordReads},
		{method: accuracy.ReceiverTablesOnly, source: TimestampSourceTimeIndex, tablesOnly: true},
	}
}

// config is the test cluster's receiver configured as the row runs.
func (r receiverRow) config(k *testKafka) *Config { return r.configure(k.testConfig()) }

// configure sets cfg as the row runs.
func (r receiverRow) configure(cfg *Config) *Config {
	cfg.TimestampSource = r.source
	if r.tablesOnly {
		cfg.MaxRecordReadsPerScrape = 0
	}
	return cfg
}

// scrapedRuns is what receivers' scrapes saw, by row and partition: the
// scrapes for the simulation to replay, and the time lags the receiver
// reported at them.
type scrapedRuns struct {
	observed map[partitionRun][]accuracy.Observed
	reported map[partitionRun][]accuracy.Point
}

func newScrapedRuns() *scrapedRuns {
	return &scrapedRuns{observed: map[partitionRun][]accuracy.Observed{}, reported: map[partitionRun][]accuracy.Point{}}
}

// replayedScraper is a receiver whose scrapes the simulation replays, and
// when each of its end-offset reads was sent, by when it was received
// (unix nanoseconds): the replay sends each read when the receiver did. A
// record the test appends a moment before a scrape is in the scrape's
// records as the receiver read them; a read modelled as sent
// accuracy.Latency before its answer (a round trip the test's in-process
// cluster often beats) could be sent before the timeline's append of it.
type replayedScraper struct {
	*timeLagScraper
	mu   sync.Mutex
	sent map[int64]int64
}

// startReplayedScraper starts a scraper for cfg whose end-offset reads are
// timed for the replay.
func startReplayedScraper(t *testing.T, cfg *Config) *replayedScraper {
	r := &replayedScraper{sent: map[int64]int64{}}
	r.timeLagScraper = startScraperWith(t, cfg, zap.NewNop(), func(c kafka.Cluster) kafka.Cluster { return endReadTimer{c, r} })
	return r
}

// sentAt is when the end-offset read received at received was sent; 0 when
// none was.
func (r *replayedScraper) sentAt(received int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sent[received]
}

// endReadTimer is a cluster telling its replayedScraper when each
// end-offset read was sent and received.
type endReadTimer struct {
	kafka.Cluster
	r *replayedScraper
}

func (c endReadTimer) EndOffsets(ctx context.Context, partitions []kafka.TopicPartition) (kafka.OffsetRead, error) {
	read, err := c.Cluster.EndOffsets(ctx, partitions)
	if !read.Received.IsZero() {
		c.r.mu.Lock()
		c.r.sent[read.Received.UnixNano()] = read.Sent.UnixNano()
		c.r.mu.Unlock()
	}
	return read, err
}

// scrape scrapes r, the receiver of the simulation's row receiver, once.
// Every scrape's end-offset read is a table point: the simulation replays
// the scrapes without a time lag too.
func (runs *scrapedRuns) scrape(t *testing.T, r *replayedScraper, receiver string) {
	t.Helper()
	md, err := r.scrape(context.Background())
	require.NoError(t, err)
	timeLags := pointsOf(md, "kafka.consumer_group.time_lag")
	lags := pointsOf(md, "kafka.consumer_group.lag")
	for key, offset := range pointsOf(md, "kafka.consumer_group.offset") {
		tl, estimated := timeLags[key]
		at := offset.timestamp.UnixNano()
		id := partitionRun{receiver, key.topic, key.partition}
		sent := r.sentAt(at)
		require.NotZero(t, sent, "%s %v: the end-offset read of the scrape at %d", receiver, key, at)
		runs.observed[id] = append(runs.observed[id], accuracy.Observed{At: at, Sent: sent, Committed: offset.intValue, End: offset.intValue + lags[key].intValue})
		runs.reported[id] = append(runs.reported[id], accuracy.Point{At: at, Estimate: tl.doubleValue, Estimated: estimated})
	}
}

// agreementTolerance is how far the receiver's and the simulation's time
// lags may be apart, in seconds: timestamps are milliseconds, and the
// tables' times too, so the two may round an instant differently.
const agreementTolerance = 0.002

// requireAgreement replays run's scrapes of log through method (the
// receiver's row in the simulation) and requires
// every scrape's time lag to agree with the receiver's: whether there is
// one, and its value. It returns the receiver's points scored against the
// simulation's truth, and both sides' figures at the sampling interval
// (the scrapes', which are the tables' only points), which it logs.
func (runs *scrapedRuns) requireAgreement(t *testing.T, run partitionRun, log *accuracy.Timeline, method accuracy.MethodSpec, interval time.Duration) (real []accuracy.Point, realStats, simStats accuracy.Stats) {
	return runs.compare(t, run, log, method, interval, true)
}

// compare is requireAgreement; with exact false, scrapes that disagree are
// counted and logged rather than failing the test.
func (runs *scrapedRuns) compare(t *testing.T, run partitionRun, log *accuracy.Timeline, method accuracy.MethodSpec, interval time.Duration, exact bool) (real []accuracy.Point, realStats, simStats accuracy.Stats) {
	t.Helper()
	real = runs.reported[run]
	// The receivers' samplers (hourly) take no sample during the run:
	// their scrapes' end-offset reads are the tables' only points, and the
	// replay takes none of its own either.
	sim := accuracy.Replay(log, math.MaxInt64/2, int64(time.Hour), runs.observed[run], method)
	name := fmt.Sprintf("%s %s/%d", method.Name, run.topic, run.partition)
	require.NotEmpty(t, sim, name)
	// Until both have dated a scrape, whether one has depends on which
	// records near the tables' samples the reads found: the broker's
	// batches where the scrape falls, which the simulation models by
	// record size; from then on they agree scrape by scrape.
	warm := false
	for i := range real {
		real[i].Truth, real[i].TruthCreate = sim[i].Truth, sim[i].TruthCreate // the same truths for both
		if !warm && real[i].Estimated != sim[i].Estimated {
			t.Logf("%s, scrape %d, before both dated one: receiver %.3f s (%v), simulation %.3f s (%v)", name, i, real[i].Estimate, real[i].Estimated, sim[i].Estimate, sim[i].Estimated)
			continue
		}
		warm = warm || real[i].Estimated && sim[i].Estimated
		if !exact {
			if real[i].Estimated != sim[i].Estimated || math.Abs(real[i].Estimate-sim[i].Estimate) > agreementTolerance {
				t.Logf("%s, scrape %d: receiver %.3f s (%v), simulation %.3f s (%v)", name, i, real[i].Estimate, real[i].Estimated, sim[i].Estimate, sim[i].Estimated)
			}
			continue
		}
		require.Equal(t, real[i].Estimated, sim[i].Estimated, "%s, scrape %d: whether it has a time lag", name, i)
		require.InDelta(t, real[i].Estimate, sim[i].Estimate, agreementTolerance, "%s, scrape %d: time lag, receiver against simulation", name, i)
	}
	// Scored from the first scrape with a time lag: the first ones, on
	// tables of a point or two, withhold (in both) the records only their
	// stamps could date, until the records the tables bound show the
	// stamps are append times: a few scrapes, a few bursts on a bursty
	// partition.
	cold := slices.IndexFunc(real, func(p accuracy.Point) bool { return p.Estimated })
	require.GreaterOrEqual(t, cold, 0, "%s: a time lag at some scrape", name)
	require.LessOrEqual(t, cold, len(real)/2, "%s: scrapes withheld after the start", name)
	cold = max(cold, slices.IndexFunc(sim, func(p accuracy.Point) bool { return p.Estimated }))
	realStats = accuracy.Score(real[cold:], int64(interval))
	simStats = accuracy.Score(sim[cold:], int64(interval))
	t.Logf("%-42s %-9s %3d scrapes: receiver |error| median %.3f s, p95 %.3f s (%.3f s vs CreateTime), max %.3f s, bias %+.3f s, ratio %.2f relative, %.2f absolute; simulation median %.3f s, p95 %.3f s (%.3f s), max %.3f s, bias %+.3f s, ratio %.2f, %.2f",
		method.Name, fmt.Sprintf("%s/%d", run.topic, run.partition), len(sim),
		realStats.Median, realStats.P95, realStats.P95Create, realStats.Max, realStats.Bias, realStats.TargetP95, realStats.AbsoluteP95,
		simStats.Median, simStats.P95, simStats.P95Create, simStats.Max, simStats.Bias, simStats.TargetP95, simStats.AbsoluteP95)
	if exact {
		require.InDelta(t, simStats.Median, realStats.Median, agreementTolerance, "%s: median |error|, receiver against simulation", name)
		require.InDelta(t, simStats.P95, realStats.P95, agreementTolerance, "%s: p95 |error|, receiver against simulation", name)
	}
	return real, realStats, simStats
}
