package main

// Busy mode (-busy): every partition of the workload is written
// continuously while the collector runs, so that its interpolation tables
// fill as they do on a production cluster, and the run reports what the
// tables cost: resident memory and live heap from the first export (tables
// of a few points) to the end of the run, per busy partition and per pair.

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/promserver"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/scaleload"
)

type busyOptions struct {
	on bool
	// fill is how long the run goes on after the first export.
	fill time.Duration
	// every is how often every partition is written; rate is the records a
	// second each one gets, on average, and noise how far each write strays
	// from it (uniformly, as a fraction).
	every time.Duration
	rate  float64
	noise float64
	// phase is how long the first write waits: the collector starts as
	// the writes do and scrapes a second later, so without it every write
	// lands a second before a scrape.
	phase time.Duration
	// telemetryPort serves the collector's own metrics (table points).
	telemetryPort int
	// appended, with -accuracy, remembers what the writes appended.
	appended *appendLog
	// clockSkew is how far the writing producer's clock is off the
	// broker's: its records are stamped by it.
	clockSkew time.Duration
	// records are the records' size, batching and compression.
	records recordOptions
}

func (b *busyOptions) register(fs *flag.FlagSet) {
	fs.BoolVar(&b.on, "busy", false, "write every partition continuously, run -busy-fill past the first scrape that reads no record and report the tables' memory (live heap from GODEBUG=gctrace=1, RSS)")
	fs.DurationVar(&b.fill, "busy-fill", 10*time.Minute, "busy mode: how long to run past the first scrape that read no record")
	fs.DurationVar(&b.every, "busy-every", time.Second, "busy mode: how often every partition is written")
	fs.DurationVar(&b.phase, "busy-phase", 0, "busy mode: how long the first write (and, with -churn, the first commits) waits, which sets where the writes fall between scrapes (0: about a second before each)")
	fs.Float64Var(&b.rate, "busy-rate", 20, "busy mode: records a second per partition, on average (at 10,000 partitions, e.g. -busy-rate 1 -busy-every 10s)")
	fs.Float64Var(&b.noise, "busy-noise", 0.2, "busy mode: each write strays from the rate by up to this fraction, uniformly")
	fs.DurationVar(&b.clockSkew, "busy-clock-skew", 0, "busy mode: the writing producer's clock is this far off the broker's (negative: behind); its records are stamped by it, and -accuracy's truth takes it out")
	b.records.register(fs)
}

// telemetryConfig is the service telemetry block of a busy run: the
// collector's own metrics on a loopback port, which tell the table points.
func (b *busyOptions) telemetryConfig() string {
	if !b.on {
		return "      level: none\n"
	}
	return fmt.Sprintf(`      level: basic
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: %d
`, b.telemetryPort)
}

// prepare picks the telemetry port and adds gctrace to the environment.
func (b *busyOptions) prepare(o *options) error {
	if !b.on {
		return nil
	}
	if err := b.records.check(); err != nil {
		return err
	}
	if b.records.prefill > 0 && o.accuracy {
		return errPrefillAccuracy
	}
	port, err := promserver.FreePort()
	if err != nil {
		return err
	}
	b.telemetryPort = port
	o.env = append(o.env, "GODEBUG=gctrace=1")
	return nil
}

// writeBusy writes every partition of w every b.every until ctx ends.
func writeBusy(ctx context.Context, k *scaleload.Cluster, w scaleload.Workload, b busyOptions) error {
	if !waitPhase(ctx, b.phase) {
		return nil
	}
	rng := rand.New(rand.NewPCG(1, 2))
	writer, err := newBusyWriter(k, b.records)
	if err != nil {
		return err
	}
	defer writer.close()
	tick := time.NewTicker(b.every)
	defer tick.Stop()
	perWrite := b.rate * b.every.Seconds()
	var records []*kgo.Record
	for {
		records = records[:0]
		var stamp time.Time // the client's own stamp, when the clock is right
		if b.clockSkew != 0 {
			stamp = time.Now().Add(b.clockSkew)
		}
		for t := range w.Topics {
			for p := range w.PartitionsPerTopic {
				n := max(1, int(perWrite*(1-b.noise+2*b.noise*rng.Float64())+0.5))
				if b.records.perWrite > 0 {
					n = b.records.perWrite
				}
				for range n {
					records = append(records, &kgo.Record{Topic: w.Topic(t), Partition: p, Value: writer.values.next(), Timestamp: stamp})
				}
			}
		}
		results := writer.send(ctx, records)
		if b.appended != nil {
			b.appended.note(results)
		}
		if err := results.FirstErr(); err != nil && ctx.Err() == nil {
			return fmt.Errorf("busy write: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// waitPhase waits d, and tells whether ctx is still on.
func waitPhase(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// busyMark is what the collector's own metrics say at an export.
type busyMark struct {
	points, partitions float64 // the receiver's table points and tracked partitions
	err                error
}

func (m busyMark) perTable() float64 { return m.points / max(m.partitions, 1) }

// readBusyMark reads the collector's own metrics.
func readBusyMark(b busyOptions) busyMark {
	var m busyMark
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", b.telemetryPort))
	if err != nil {
		m.err = err
		return m
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		m.err = err
		return m
	}
	for _, line := range strings.Split(string(body), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ = strings.Cut(name, "{")
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(name, "otelcol_kafka_time_lag_table_points"):
			m.points = v
		case strings.HasPrefix(name, "otelcol_kafka_time_lag_tracked_partitions"):
			m.partitions = v
		}
	}
	return m
}

// busyWindow is how many exports a busy run's memory is taken over at each
// end (fewer when the run has fewer than twice as many): a scrape's
// transient allocations come and go, and one reading of VmRSS or of the
// live heap catches it anywhere in a scrape.
const busyWindow = 3

// busyResult is what a busy run measured.
type busyResult struct {
	started time.Time // the collector's start, the origin of gctrace's times
	log     string    // the collector's log, with gctrace
	// first, settled and end are at the first export, at the first scrape
	// that read no record (the record-timestamp cache is full, so what
	// grows after it is the tables) and at the end of the run.
	first, settled, end busyMark
	elapsed             time.Duration // from settled to the end
	// The largest VmRSS at the first busyWindow exports, at the busyWindow
	// from settled on, and at the last busyWindow; the smallest live heap
	// of a collection over the same windows (the floor under the scrapes'
	// transients, where the tables are), in MiB.
	firstRSS, settledRSS, endRSS    int64
	firstLive, settledLive, endLive float64
}

// finish takes the end mark and the windows' memory.
func (b *busyResult) finish(o busyOptions, marks []mark, settled int) error {
	b.end = readBusyMark(o)
	if settled < 0 {
		// The growth is then measured from the first export on.
		logf("busy: record reads never settled; the settled figures are the first export's")
		settled, b.settled = 0, b.first
	}
	for _, m := range []busyMark{b.first, b.settled, b.end} {
		if m.err != nil {
			return m.err
		}
	}
	window := min(busyWindow, (len(marks)-settled)/2)
	if window < 1 {
		return fmt.Errorf("%d exports after the record reads settled, want 2 at least", len(marks)-settled)
	}
	lives, err := gctraceLives(b.log)
	if err != nil {
		return err
	}
	over := func(from int) (rss int64, live float64) {
		ms := marks[from : from+window]
		for _, m := range ms {
			rss = max(rss, m.rss)
		}
		lo, hi := ms[0].at.Sub(b.started), ms[len(ms)-1].at.Sub(b.started)
		live = -1
		for _, l := range lives {
			if l.at >= lo && l.at <= hi && (live < 0 || l.mb < live) {
				live = l.mb
			}
		}
		return rss, live
	}
	b.firstRSS, b.firstLive = over(0)
	b.settledRSS, b.settledLive = over(settled)
	b.endRSS, b.endLive = over(len(marks) - window)
	b.elapsed = marks[len(marks)-1].at.Sub(marks[settled].at)
	logf("busy: %.1f -> %.1f -> %.1f points per table; RSS %s -> %s -> %s; live heap floor %.0f -> %.0f -> %.0f MiB (first exports -> settled -> end)",
		b.first.perTable(), b.settled.perTable(), b.end.perTable(), mib(b.firstRSS), mib(b.settledRSS), mib(b.endRSS), b.firstLive, b.settledLive, b.endLive)
	return nil
}

// gctraceLive matches the heap sizes of a gctrace line: at the start of the
// collection, at its end, and marked live.
var gctraceLive = regexp.MustCompile(`(\d+)->(\d+)->(\d+) MB`)

// gcLive is the live heap one collection marked, at its time since start.
type gcLive struct {
	at time.Duration
	mb float64
}

// gctraceStart matches the time of a gctrace line since the start.
var gctraceStart = regexp.MustCompile(`^gc \d+ @([0-9.]+)s`)

// gctraceLives reads every collection's live heap from the log.
func gctraceLives(logPath string) ([]gcLive, error) {
	f, err := os.Open(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []gcLive
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		at, heap := gctraceStart.FindStringSubmatch(line), gctraceLive.FindStringSubmatch(line)
		if at == nil || heap == nil {
			continue
		}
		secs, _ := strconv.ParseFloat(at[1], 64)
		mb, _ := strconv.ParseFloat(heap[3], 64)
		out = append(out, gcLive{at: time.Duration(secs * float64(time.Second)), mb: mb})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no gctrace line", logPath)
	}
	return out, sc.Err()
}

// printBusyReport prints the tables' memory of busy runs.
func printBusyReport(out io.Writer, o options, results []*result) {
	settled := "the first scrape that read no record"
	if o.churn.on {
		settled = fmt.Sprintf("a warm-up of %d scrapes (churn mode: every group committed on every partition every %s, up to %d records behind the end, so record reads never stop)",
			o.churn.warmup, o.churn.every, o.churn.behind)
	}
	fmt.Fprintf(out, "Busy mode: %s; the run went on %s past %s (settled). RSS is the largest VmRSS at %d exports (the first ones, from settled on, the last ones); live heap the smallest a collection marked over the same exports (gctrace, in whole MiB), the floor under the scrapes' transients.\n\n",
		o.busy.records.describe(o.busy), o.busy.fill, settled, busyWindow)
	fmt.Fprintln(out, "| workload | busy partitions | pairs | samples per table, settled to end | points per table, first / settled / end | RSS, first / settled / end | live heap, first / settled / end | RSS growth per busy partition, from the first exports / from settled | live heap growth per busy partition, from settled | RSS per pair, end |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---|---|---|---:|---:|---:|")
	for _, r := range results {
		b := r.busy
		if b == nil {
			continue
		}
		busy := float64(r.w.Partitions())
		fmt.Fprintf(out, "| %s | %d | %d | %.0f | %.1f / %.1f / %.1f | %s / %s / %s | %.0f / %.0f / %.0f MiB | %.2f / %.2f KiB | %.2f KiB | %.2f KiB |\n",
			r.w, r.w.Partitions(), r.w.Pairs(), b.elapsed.Seconds()/o.sampling.Seconds(),
			b.first.perTable(), b.settled.perTable(), b.end.perTable(),
			mib(b.firstRSS), mib(b.settledRSS), mib(b.endRSS), b.firstLive, b.settledLive, b.endLive,
			float64(b.endRSS-b.firstRSS)/1024/busy, float64(b.endRSS-b.settledRSS)/1024/busy,
			(b.endLive-b.settledLive)*1024/busy, float64(b.endRSS)/1024/float64(r.w.Pairs()))
	}
	fmt.Fprintln(out)
}

// startWriting starts busy mode's writes on k, and churn mode's commits
// when on; the function returned stops them and logs what failed.
func startWriting(ctx context.Context, k *scaleload.Cluster, w scaleload.Workload, o options) (stop func()) {
	writeCtx, stopWriting := context.WithCancel(ctx)
	writeErr := make(chan error, 1)
	go func() { writeErr <- writeBusy(writeCtx, k, w, o.busy) }()
	churnErr := make(chan error, 1)
	if o.churn.on {
		go func() { churnErr <- commitChurn(writeCtx, k, w, o.churn, o.busy.phase) }()
	} else {
		churnErr <- nil
	}
	return func() {
		stopWriting()
		for _, err := range []error{<-writeErr, <-churnErr} {
			if err != nil {
				logf("%v", err)
			}
		}
	}
}

// startLoaded starts a cluster of brokers brokers and loads w on it.
func startLoaded(ctx context.Context, brokers int, w scaleload.Workload) (*scaleload.Cluster, error) {
	k, err := scaleload.Start(brokers)
	if err != nil {
		return nil, err
	}
	loadCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	err = k.Load(loadCtx, w)
	cancel()
	if err != nil {
		k.Close()
		return nil, fmt.Errorf("load the workload: %w", err)
	}
	return k, nil
}
