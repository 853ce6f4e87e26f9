//go:build !unit

package kafkatimelagreceiver

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/accuracy"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// TestSimulationRunsTheShippedPipeline: the accuracy simulation's
// receiver row samples through the sampler, reads and dates through
// read.Reader.Read (dating.Date), with the receiver's defaults, and holds
// no sequence of the scrape's steps of its own: none of the steps the read
// and dating run is called from its code.
func TestSimulationRunsTheShippedPipeline(t *testing.T) {
	require.Equal(t, defaultRecordReads, accuracy.ReceiverMaxRecordReads)
	files, err := filepath.Glob("internal/accuracy/*.go")
	require.NoError(t, err)
	steps := []string{"lag.OutOfTable", "lag.NewIndex", "lag.Estimate(", "lag.AppendTimes", "PutAll(", ".Retain(", ".Forget(", "ResolveTables", ".Record(kafka.OffsetRead", ".Track("}
	var source string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, step := range steps {
			require.False(t, strings.Contains(string(b), step), "%s runs a step of the scrape itself: %s", f, step)
		}
		source += string(b)
	}
	require.True(t, strings.Contains(source, "m.reader.Read("), "the receiver row reads through read.Reader")
	require.True(t, strings.Contains(source, "m.sampler.Sample("), "the receiver row samples through sampler.Sampler")
	require.Equal(t, timetable.DefaultMaxSamples, defaultMaxSamples)
}

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

	// The receiver as shipped, and one that reads no records (its tables
	// alone), against the simulation's rows 1 and 2.
	newReceiver := func(recordReads int) *timeLagScraper {
		cfg := k.testConfig() // sampling every hour: none during the test
		cfg.MaxRecordReadsPerScrape = recordReads
		return startScraper(t, cfg)
	}
	start := time.Now().UnixNano()
	receivers := []*timeLagScraper{newReceiver(defaultRecordReads), newReceiver(0)}
	type run struct{ receiver, topic string }
	observed := map[run][]accuracy.Observed{}
	real := map[run][]accuracy.Point{}
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
			md, err := r.scrape(context.Background())
			require.NoError(t, err)
			// Every scrape's end-offset read is a table point: the
			// simulation replays those without a time lag too.
			timeLags := pointsOf(md, "kafka.consumer_group.time_lag")
			lags := pointsOf(md, "kafka.consumer_group.lag")
			for key, offset := range pointsOf(md, "kafka.consumer_group.offset") {
				tl, estimated := timeLags[key]
				at := offset.timestamp.UnixNano()
				id := run{accuracy.Methods()[i].Key, key.topic}
				observed[id] = append(observed[id], accuracy.Observed{At: at, Committed: offset.intValue, End: offset.intValue + lags[key].intValue})
				real[id] = append(real[id], accuracy.Point{At: at, Estimate: tl.doubleValue, Estimated: estimated})
			}
		}
	}

	// Timestamps are milliseconds, and the tables' times too: the two may
	// round an instant differently.
	const tolerance = 0.002
	for _, method := range accuracy.Methods()[:2] {
		for _, topic := range topics {
			id := run{method.Key, topic}
			sim := accuracy.Replay(logs[topic], start, int64(time.Hour), observed[id], method)
			require.NotEmpty(t, sim, "%s %s", method.Name, topic)
			for i := range real[id] {
				real[id][i].Truth = sim[i].Truth // the same truth for both
				require.Equal(t, real[id][i].Estimated, sim[i].Estimated, "%s %s, scrape %d: whether it has a time lag", method.Name, topic, i)
				require.InDelta(t, real[id][i].Estimate, sim[i].Estimate, tolerance, "%s %s, scrape %d: time lag, receiver against simulation", method.Name, topic, i)
			}
			realStats := accuracy.Score(real[id], int64(interval))
			simStats := accuracy.Score(sim, int64(interval))
			t.Logf("%-30s %-6s %3d scrapes: receiver |error| median %.3f s, p95 %.3f s, max %.3f s, bias %+.3f s; simulation median %.3f s, p95 %.3f s, max %.3f s, bias %+.3f s",
				method.Name, topic, len(sim), realStats.Median, realStats.P95, realStats.Max, realStats.Bias,
				simStats.Median, simStats.P95, simStats.Max, simStats.Bias)
			require.InDelta(t, simStats.Median, realStats.Median, tolerance, "%s %s: median |error|, receiver against simulation", method.Name, topic)
			require.InDelta(t, simStats.P95, realStats.P95, tolerance, "%s %s: p95 |error|, receiver against simulation", method.Name, topic)
			if method.Key != "receiver" {
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
				for i, p := range real[id][2:] {
					require.Less(t, math.Abs(p.Estimate-p.Truth), 0.5, "skewed, scrape %d: error against a clock 1.5 s behind", i+2)
				}
				continue
			}
			require.True(t, realStats.Met(), "%s: the receiver misses the target (ratio %.2f)", topic, realStats.TargetP95)
			require.True(t, simStats.Met(), "%s: the simulation misses the target (ratio %.2f)", topic, simStats.TargetP95)
		}
	}
}
