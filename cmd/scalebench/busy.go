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
	// telemetryPort serves the collector's own metrics (table points).
	telemetryPort int
}

func (b *busyOptions) register(fs *flag.FlagSet) {
	fs.BoolVar(&b.on, "busy", false, "write every partition continuously, run -busy-fill past the first scrape that reads no record and report the tables' memory (live heap from GODEBUG=gctrace=1, RSS)")
	fs.DurationVar(&b.fill, "busy-fill", 10*time.Minute, "busy mode: how long to run past the first scrape that read no record")
	fs.DurationVar(&b.every, "busy-every", time.Second, "busy mode: how often every partition is written")
	fs.Float64Var(&b.rate, "busy-rate", 20, "busy mode: records a second per partition, on average")
	fs.Float64Var(&b.noise, "busy-noise", 0.2, "busy mode: each write strays from the rate by up to this fraction, uniformly")
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
	rng := rand.New(rand.NewPCG(1, 2))
	tick := time.NewTicker(b.every)
	defer tick.Stop()
	perWrite := b.rate * b.every.Seconds()
	value := []byte("x")
	var records []*kgo.Record
	for {
		records = records[:0]
		for t := range w.Topics {
			for p := range w.PartitionsPerTopic {
				n := max(1, int(perWrite*(1-b.noise+2*b.noise*rng.Float64())+0.5))
				for range n {
					records = append(records, &kgo.Record{Topic: w.Topic(t), Partition: p, Value: value})
				}
			}
		}
		if err := k.Client.ProduceSync(ctx, records...).FirstErr(); err != nil && ctx.Err() == nil {
			return fmt.Errorf("busy write: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// busyMark is what a busy run knows at an export.
type busyMark struct {
	points, partitions float64 // the receiver's table points and tracked partitions
	liveMB             float64 // live heap after the last collection (gctrace)
	err                error
}

// readBusyMark reads the collector's own metrics and its log's last gctrace.
func readBusyMark(b busyOptions, logPath string) busyMark {
	var m busyMark
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", b.telemetryPort))
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
	m.liveMB, m.err = lastLiveHeap(logPath)
	return m
}

// gctraceLive matches the heap sizes of a gctrace line: at the start of the
// collection, at its end, and marked live.
var gctraceLive = regexp.MustCompile(`(\d+)->(\d+)->(\d+) MB`)

// lastLiveHeap is the live heap of the last collection in the log, in MB.
func lastLiveHeap(logPath string) (float64, error) {
	f, err := os.Open(logPath)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	live := -1.0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "gc ") {
			continue
		}
		if m := gctraceLive.FindStringSubmatch(line); m != nil {
			live, _ = strconv.ParseFloat(m[3], 64)
		}
	}
	if live < 0 {
		return 0, fmt.Errorf("%s: no gctrace line", logPath)
	}
	return live, sc.Err()
}

// printBusyReport prints the tables' memory of busy runs: growth from the
// first scrape that read no record (the record-timestamp cache is full, so
// what grows after it is the tables) to the end of the run.
func printBusyReport(out io.Writer, o options, results []*result) {
	fmt.Fprintf(out, "Busy mode: every partition written every %s, %.0f records/s each on average (+-%.0f%% per write); the run went on %s past the first scrape that read no record (settled). Live heap is gctrace's marked heap of the last collection (MB resolution); RSS is VmRSS at the export.\n\n",
		o.busy.every, o.busy.rate, 100*o.busy.noise, o.busy.fill)
	fmt.Fprintln(out, "| workload | busy partitions | pairs | samples per table, settled to end | points per table, first / settled / end | live heap, first / settled / end | RSS, first / settled / end | live heap growth per busy partition | RSS growth per busy partition | RSS per pair, end |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---|---|---|---:|---:|---:|")
	for _, r := range results {
		f, s, e := r.busyFirst, r.busySettled, r.busyEnd
		if f == nil || s == nil || e == nil {
			continue
		}
		busy := float64(r.w.Partitions())
		perTable := func(m *busyMark) float64 { return m.points / max(m.partitions, 1) }
		fmt.Fprintf(out, "| %s | %d | %d | %.0f | %.1f / %.1f / %.1f | %.0f / %.0f / %.0f MiB | %s / %s / %s | %.2f KiB | %.2f KiB | %.2f KiB |\n",
			r.w, r.w.Partitions(), r.w.Pairs(), r.busyElapsed.Seconds()/o.sampling.Seconds(),
			perTable(f), perTable(s), perTable(e), f.liveMB, s.liveMB, e.liveMB,
			mib(r.busyFirstRSS), mib(r.busySettledRSS), mib(r.busyEndRSS),
			(e.liveMB-s.liveMB)*1024/busy, float64(r.busyEndRSS-r.busySettledRSS)/1024/busy,
			float64(r.busyEndRSS)/1024/float64(r.w.Pairs()))
	}
	fmt.Fprintln(out)
}
