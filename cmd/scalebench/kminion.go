package main

// With -kminion BINARY, scalebench runs the real kminion
// (redpanda-data/kminion; deploy/kminion/build-kminion.sh builds it) on the
// same cluster as the collector, in the same run, and scrapes its /metrics
// every collection interval as Prometheus would (its default Accept header,
// gzip, the whole body read), one scrape at a time. kminion asks Kafka on
// every scrape, so the scrape is its work. Its CPU and memory are read at
// the collector's marks, so both processes are measured over the same
// warm-up and steady intervals, and its CPU per scrape besides, since its
// scrapes may outlast an interval. Every scrape that ends in the steady
// window must carry one lag series per (group, partition), or the run is
// an error.
//
// kminion runs lag only: consumer groups at its defaults (scrapeMode
// adminApi, granularity partition, every group), its topic and log-dir
// metrics off, since the collector exports neither. -compare-exporters
// replays its requests with those on, in-process.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/childproc"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/promserver"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/scaleload"
)

// kminionClientID is kminion's default kafka.clientId, which the brokers
// count its requests and bytes by.
const kminionClientID = "kminion"

// kminionLagMetric is kminion's per-partition consumer lag, one series per
// (group, topic, partition) with its default namespace and granularity.
const kminionLagMetric = "kminion_kafka_consumer_group_topic_partition_lag"

// prometheusAccept is the Accept header Prometheus 3 sends with its default
// scrape_protocols.
const prometheusAccept = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.7," +
	"application/openmetrics-text;version=0.0.1;q=0.6," +
	"text/plain;version=1.0.0;escaping=allow-utf-8;q=0.5," +
	"text/plain;version=0.0.4;q=0.4,*/*;q=0.3"

// kminionConfig is kminion's YAML configuration (CONFIG_FILEPATH): the
// brokers, lag only, the exporter on a loopback port.
func kminionConfig(brokers []string, port int) string {
	var b strings.Builder
	b.WriteString("logger:\n  level: info\nkafka:\n  brokers:\n")
	for _, addr := range brokers {
		fmt.Fprintf(&b, "    - %q\n", addr)
	}
	fmt.Fprintf(&b, "  clientId: %s\n", kminionClientID)
	b.WriteString(`minion:
  consumerGroups:
    enabled: true
    scrapeMode: adminApi
    granularity: partition
  topics:
    enabled: false
  logDirs:
    enabled: false
  endToEnd:
    enabled: false
exporter:
  host: 127.0.0.1
`)
	fmt.Fprintf(&b, "  port: %d\n", port)
	return b.String()
}

// countLagSeries reads an exposition to its end and counts the samples of
// kminion's per-partition lag metric.
func countLagSeries(r io.Reader) (series int, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	prefix := []byte(kminionLagMetric + "{")
	for {
		line, err := br.ReadSlice('\n')
		if bytes.HasPrefix(line, prefix) {
			series++
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			// A line longer than the buffer: its start is counted, skip the rest.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err == nil {
				continue
			}
		case err == nil:
			continue
		}
		if errors.Is(err, io.EOF) {
			return series, nil
		}
		return series, err
	}
}

// metricsScrape is one scrape of kminion's /metrics.
type metricsScrape struct {
	start, end time.Time
	lagSeries  int
	err        error
	// cpuAtStart is kminion's CPU time as the scrape began: kminion works
	// on scrapes only, so from one scrape's start to the next's is that
	// scrape's cost, whatever the collector's intervals.
	cpuAtStart time.Duration
	cpuErr     error
}

// kminionRun is kminion running beside the collector and scraped every
// interval by a goroutine that close stops.
type kminionRun struct {
	proc    *childproc.Process
	cfgPath string
	url     string
	cancel  context.CancelFunc
	done    chan struct{}
	stop    sync.Once
	stopErr error

	mu      sync.Mutex
	scrapes []metricsScrape // as they end
	begun   []scrapeStart   // as they begin
}

// scrapeStart is when a scrape began, and kminion's CPU time then.
type scrapeStart struct {
	at  time.Time
	cpu time.Duration
}

// startKminion starts kminion on the cluster at addrs, its configuration
// and log in dir under name, and scrapes it every interval until close.
func startKminion(ctx context.Context, binary string, addrs []string, dir, name string, interval time.Duration) (*kminionRun, error) {
	port, err := promserver.FreePort()
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, name+"-kminion.yaml")
	if err := os.WriteFile(cfgPath, []byte(kminionConfig(addrs, port)), 0o600); err != nil {
		return nil, err
	}
	proc, err := childproc.Start(filepath.Join(dir, name+"-kminion.log"), []string{"CONFIG_FILEPATH=" + cfgPath}, binary)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &kminionRun{proc: proc, cfgPath: cfgPath, url: fmt.Sprintf("http://127.0.0.1:%d/metrics", port), cancel: cancel, done: make(chan struct{})}
	go r.scrapeEvery(ctx, interval)
	return r, nil
}

// close stops scraping and kminion; a second call returns the first's
// error. kminion stops cleanly on SIGINT only: dying of SIGTERM is its
// normal end here.
func (r *kminionRun) close() error {
	r.stop.Do(func() {
		r.cancel()
		<-r.done
		err := r.proc.Stop(time.Minute)
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
				err = nil
			}
		}
		r.stopErr = err
	})
	return r.stopErr
}

// kminionScrapeTimeouts is a scrape's timeout in intervals. Prometheus's
// scrape_timeout can be at most its interval, but kminion keeps collecting
// after its scraper gives up, so timed-out scrapes pile up in it (on a
// loaded machine at 1,000,000 pairs, 7.5 GiB of RSS and no complete
// scrape): here a slow scrape is let finish, and delays the next, so that
// what is measured is kminion's cost of a scrape.
const kminionScrapeTimeouts = 5

// scrapeEvery scrapes once kminion listens, then every interval, one
// scrape at a time.
func (r *kminionRun) scrapeEvery(ctx context.Context, interval time.Duration) {
	defer close(r.done)
	client := &http.Client{} // its transport asks gzip and inflates it, as Prometheus does
	defer client.CloseIdleConnections()
	for !r.listening(ctx, client) {
		select {
		case <-ctx.Done():
			return
		case <-r.proc.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		cpu, cpuErr := procCPU(r.proc.PID())
		if cpuErr == nil {
			r.mu.Lock()
			r.begun = append(r.begun, scrapeStart{at: time.Now(), cpu: cpu})
			r.mu.Unlock()
		}
		s := getMetrics(ctx, client, r.url, kminionScrapeTimeouts*interval)
		s.cpuAtStart, s.cpuErr = cpu, cpuErr
		if ctx.Err() != nil {
			return
		}
		r.mu.Lock()
		r.scrapes = append(r.scrapes, s)
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// listening tells whether kminion's HTTP server answers yet (its /ready
// asks nothing of Kafka).
func (r *kminionRun) listening(ctx context.Context, client *http.Client) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(r.url, "/metrics")+"/ready", nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return true
}

func getMetrics(ctx context.Context, client *http.Client, url string, timeout time.Duration) (s metricsScrape) {
	s.start = time.Now()
	defer func() { s.end = time.Now() }()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		s.err = err
		return s
	}
	req.Header.Set("Accept", prometheusAccept)
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64))
	resp, err := client.Do(req)
	if err != nil {
		s.err = err
		return s
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.err = fmt.Errorf("GET %s: %s", url, resp.Status)
		_, _ = io.Copy(io.Discard, resp.Body)
		return s
	}
	s.lagSeries, s.err = countLagSeries(resp.Body)
	return s
}

// scrapesBetween are the scrapes that ended in (from, to].
func (r *kminionRun) scrapesBetween(from, to time.Time) []metricsScrape {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []metricsScrape
	for _, s := range r.scrapes {
		if s.end.After(from) && !s.end.After(to) {
			out = append(out, s)
		}
	}
	return out
}

// kminionMark is kminion's state at one of the collector's marks.
type kminionMark struct {
	cpu      time.Duration
	rss      int64
	requests requestCounts
	bytes    requestCounts // bytes the brokers sent kminion
	err      error
}

func readKminionMark(pid int, k *scaleload.Cluster) kminionMark {
	m := kminionMark{requests: k.Wire.Requests(kminionClientID), bytes: k.Wire.Bytes(kminionClientID)}
	m.cpu, m.err = procCPU(pid)
	if m.err == nil {
		_, m.rss, m.err = procMemory(pid)
	}
	return m
}

// kminionResult is kminion's side of a run.
type kminionResult struct {
	warmup, steady []time.Duration // CPU per interval, the collector's intervals
	peakRSS        int64           // VmHWM at the end
	maxRSS         int64           // largest VmRSS at a steady mark
	requests       requestCounts   // over the steady intervals
	bytes          requestCounts
	scrapes        []metricsScrape // those that ended in the steady window
	perScrape      []time.Duration // CPU from each of scrapes' start to the next's
	wantSeries     int
	// collectorLagPts are the lag points of the collector's steady scrapes:
	// a collector that cut its scrapes short did less than kminion.
	collectorLagPts []int
	config          string
	err             error // a steady scrape failed or was short
}

// kminionFigures is kminion's side of the run: its intervals
// (kminionWindow), its peak RSS now and its configuration.
func kminionFigures(r *kminionRun, marks []mark, steadyFrom, scrapes, pairs int) (*kminionResult, error) {
	for _, m := range marks {
		if m.kminion.err != nil {
			return nil, fmt.Errorf("read /proc of kminion: %w", m.kminion.err)
		}
	}
	hwm, _, err := procMemory(r.proc.PID())
	if err != nil {
		return nil, fmt.Errorf("read /proc of kminion: %w", err)
	}
	config, err := os.ReadFile(r.cfgPath)
	if err != nil {
		return nil, err
	}
	cpuNow, err := procCPU(r.proc.PID())
	if err != nil {
		return nil, fmt.Errorf("read /proc of kminion: %w", err)
	}
	kr := kminionWindow(r, marks, steadyFrom, scrapes, pairs, cpuNow)
	kr.peakRSS, kr.config = hwm, string(config)
	return kr, nil
}

// kminionWindow reads kminion's side of the intervals the collector's
// marks bound: warm-up before steadyFrom, then scrapes steady ones, and
// checks the scrapes that ended in the steady window. cpuNow is kminion's
// CPU time now, after the window.
func kminionWindow(r *kminionRun, marks []mark, steadyFrom, scrapes, pairs int, cpuNow time.Duration) *kminionResult {
	kr := &kminionResult{wantSeries: pairs}
	last := min(steadyFrom+scrapes, len(marks)) - 1
	for i := 1; i <= last; i++ {
		cpu := marks[i].kminion.cpu - marks[i-1].kminion.cpu
		if i < steadyFrom {
			kr.warmup = append(kr.warmup, cpu)
			continue
		}
		kr.steady = append(kr.steady, cpu)
		kr.maxRSS = max(kr.maxRSS, marks[i].kminion.rss)
	}
	if steadyFrom < 1 || last < steadyFrom {
		kr.err = errors.New("no steady interval")
		return kr
	}
	from, to := marks[steadyFrom-1], marks[last]
	kr.requests = to.kminion.requests.Since(from.kminion.requests)
	kr.bytes = to.kminion.bytes.Since(from.kminion.bytes)
	kr.scrapes = r.scrapesBetween(from.at, to.at)
	kr.err = checkKminionScrapes(kr.scrapes, pairs)
	kr.perScrape = r.cpuPerScrape(kr.scrapes, cpuNow)
	return kr
}

// cpuPerScrape is kminion's CPU from the start of each of scrapes to the
// start of the next scrape, or to now (cpuNow) when none began since:
// between scrapes kminion idles.
func (r *kminionRun) cpuPerScrape(scrapes []metricsScrape, cpuNow time.Duration) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Duration
	for _, s := range scrapes {
		if s.cpuErr != nil {
			continue
		}
		next := cpuNow
		for _, b := range r.begun {
			if b.at.After(s.start) {
				next = b.cpu
				break
			}
		}
		out = append(out, next-s.cpuAtStart)
	}
	return out
}

// checkKminionScrapes: at least one scrape, each complete with one lag
// series per pair, so that a kminion that reports nothing is never a fast
// row.
func checkKminionScrapes(scrapes []metricsScrape, pairs int) error {
	if len(scrapes) == 0 {
		return errors.New("no kminion scrape ended in the steady window")
	}
	var errs []error
	for i, s := range scrapes {
		switch {
		case s.err != nil:
			errs = append(errs, fmt.Errorf("steady scrape %d of kminion (%s): %w", i+1, s.end.Sub(s.start).Round(time.Millisecond), s.err))
		case s.lagSeries != pairs:
			errs = append(errs, fmt.Errorf("steady scrape %d of kminion: %d series of %s, want one per (group, partition): %d", i+1, s.lagSeries, kminionLagMetric, pairs))
		}
	}
	return errors.Join(errs...)
}
