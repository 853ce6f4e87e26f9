package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/childproc"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/promserver"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/scaleload"
)

// The Prometheus mode (-prometheus) measures a whole Prometheus path: the
// collector sends the workload's metrics to a real Prometheus, and the CPU
// time of both processes over a window of steady collection intervals is
// reported per 15 s, with each process's peak RSS (VmHWM) over the whole
// run. Three paths:
//
//   - otlp: the otlp_http exporter into Prometheus 3's OTLP receiver
//     (--web.enable-otlp-receiver);
//   - remote-write: the contrib prometheusremotewrite exporter into
//     --web.enable-remote-write-receiver (the collector must include it);
//   - scrape: the contrib prometheus exporter, scraped every collection
//     interval.

const (
	pathOTLP        = "otlp"
	pathRemoteWrite = "remote-write"
	pathScrape      = "scrape"
)

type promOptions struct {
	binary string   // empty: the Prometheus mode is off
	path   string   // pathOTLP, pathRemoteWrite or pathScrape
	args   []string // extra Prometheus flags
	env    []string // added to Prometheus's environment
	window int      // steady collection intervals measured
	alias  string   // receiver cluster_alias, promoted to a label
	rules  string   // alerting rules file Prometheus evaluates; empty: none
	gogc   int      // Prometheus's runtime.gogc; 0: its default (75)
}

func (p *promOptions) register(fs *flag.FlagSet) *string {
	fs.StringVar(&p.binary, "prometheus", "", "Prometheus binary: measure the collector sending to a real Prometheus (see -prometheus-path) instead of the in-process sink")
	fs.StringVar(&p.path, "prometheus-path", pathOTLP, "how the metrics reach Prometheus: otlp (Prometheus 3), remote-write (collector with the prometheusremotewrite exporter) or scrape")
	fs.IntVar(&p.window, "window", 20, "Prometheus mode: steady collection intervals measured")
	fs.StringVar(&p.alias, "cluster-alias", "scale", "Prometheus mode: the receiver's cluster_alias")
	fs.StringVar(&p.rules, "prometheus-rules", "deploy/prometheus/kafka-timelag-rules.yml", "Prometheus mode: alerting rules Prometheus evaluates every interval, as it would in production (empty: none)")
	fs.IntVar(&p.gogc, "prometheus-gogc", 200, "Prometheus mode: runtime.gogc in Prometheus's configuration, as docs/prometheus.md recommends for OTLP ingestion at scale (0: Prometheus's default, 75)")
	fs.Func("prometheus-env", "Prometheus mode: comma-separated NAME=VALUE added to Prometheus's environment, e.g. GOGC=100", func(v string) error {
		p.env = strings.Split(v, ",")
		return nil
	})
	return fs.String("prometheus-args", "", "Prometheus mode: comma-separated extra Prometheus flags")
}

// promResult is one workload's measurement in the Prometheus mode.
type promResult struct {
	w                     scaleload.Workload
	window                time.Duration
	collectorCPU, promCPU time.Duration // over the window
	collectorHWM, promHWM int64
	headSeries            float64
	samplesPerInterval    float64
	lagSeries, timeSeries int
	warmup                time.Duration // from the collector's start to the window
	collectorCfg, promCfg string
}

func (r *promResult) per15s(cpu time.Duration) float64 {
	return cpu.Seconds() * (15 * time.Second).Seconds() / r.window.Seconds()
}

// line is the one-line summary `make bench-prometheus` ends with.
func (r *promResult) line() string {
	return fmt.Sprintf("prometheus-path: pairs=%d collector_cpu_per_15s=%.2f collector_rss_mib=%.0f prometheus_cpu_per_15s=%.2f prometheus_rss_mib=%.0f",
		r.w.Pairs(), r.per15s(r.collectorCPU), float64(r.collectorHWM)/(1<<20), r.per15s(r.promCPU), float64(r.promHWM)/(1<<20))
}

func runPrometheusPath(ctx context.Context, o options, w scaleload.Workload) (*promResult, error) {
	p := o.prom
	r := &promResult{w: w}
	k, err := startLoaded(ctx, o.brokers, w)
	if err != nil {
		return nil, err
	}
	defer k.Close()
	logf("loaded %d pairs", w.Pairs())

	dir, err := os.MkdirTemp(o.workDir, fmt.Sprintf("%s-%s-", w, p.path))
	if err != nil {
		return nil, err
	}
	exporterPort := 0
	if p.path == pathScrape {
		if exporterPort, err = promserver.FreePort(); err != nil {
			return nil, err
		}
	}
	if p.rules != "" {
		rules, err := os.ReadFile(p.rules)
		if err != nil {
			return nil, fmt.Errorf("-prometheus-rules: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(p.rules)), rules, 0o600); err != nil {
			return nil, err
		}
	}
	r.promCfg = prometheusConfig(p, o.interval, exporterPort)
	args := append([]string{}, p.args...)
	switch p.path {
	case pathOTLP:
		args = append(args, "--web.enable-otlp-receiver")
	case pathRemoteWrite:
		args = append(args, "--web.enable-remote-write-receiver")
	}
	prom, err := promserver.Start(ctx, promserver.Options{Binary: p.binary, Config: r.promCfg, Dir: dir, Args: args, Env: p.env})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := prom.Stop(); err != nil {
			logf("prometheus stop: %v", err)
		}
	}()
	logf("prometheus pid %d at %s (%s)", prom.PID(), prom.URL, p.path)

	r.collectorCfg = promCollectorConfig(k.Addrs, o, prom.URL, exporterPort)
	cfgPath := filepath.Join(dir, "collector.yaml")
	if err := os.WriteFile(cfgPath, []byte(r.collectorCfg), 0o600); err != nil {
		return nil, err
	}
	cargs := []string{"--config", cfgPath}
	for _, c := range o.extraConfig {
		cargs = append(cargs, "--config", c)
	}
	cargs = append(cargs, o.extraArgs...)
	started := time.Now()
	col, err := childproc.Start(filepath.Join(dir, "collector.log"), o.env, o.collector, cargs...)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := col.Stop(time.Minute); err != nil {
			logf("collector stop: %v", err)
		}
	}()
	logf("collector pid %d started (config %s)", col.PID(), cfgPath)

	alive := func() error {
		if col.Exited() {
			return fmt.Errorf("collector exited: %v; log:\n%s", col.Err(), col.LogTail(40))
		}
		if prom.Exited() {
			return fmt.Errorf("prometheus exited; log:\n%s", prom.LogTail(40))
		}
		return nil
	}
	if err := waitSteady(ctx, o, w, k, prom, alive); err != nil {
		return nil, err
	}
	r.warmup = time.Since(started)

	type cpuMark struct {
		at            time.Time
		col, prom     time.Duration
		samplesAppend float64
	}
	markNow := func(at time.Time) (m cpuMark, err error) {
		m.at = at
		if m.col, err = procCPU(col.PID()); err != nil {
			return m, err
		}
		if m.prom, err = procCPU(prom.PID()); err != nil {
			return m, err
		}
		m.samplesAppend, err = prom.SelfMetric(ctx, "prometheus_tsdb_head_samples_appended_total")
		return m, err
	}
	// The window runs from the start of one scrape of the receiver to the
	// start of the window-th after it: whole collection intervals, each with
	// one scrape and its ingestion (or, pulled, one Prometheus scrape, which
	// has the same period), whatever their phase. A scrape starts with the
	// receiver's ListGroups, which nothing else sends; counting them in the
	// in-process Kafka costs neither process anything.
	at, err := waitScrapeStart(ctx, k, o.interval)
	if err != nil {
		return nil, err
	}
	start, err := markNow(at)
	if err != nil {
		return nil, err
	}
	logf("measuring %d intervals (%s)", p.window, time.Duration(p.window)*o.interval)
	for range p.window {
		if at, err = waitScrapeStart(ctx, k, o.interval); err != nil {
			return nil, err
		}
	}
	if err := alive(); err != nil {
		return nil, err
	}
	end, err := markNow(at)
	if err != nil {
		return nil, err
	}
	r.window = end.at.Sub(start.at)
	r.collectorCPU, r.promCPU = end.col-start.col, end.prom-start.prom
	r.samplesPerInterval = (end.samplesAppend - start.samplesAppend) / float64(p.window)
	if r.collectorHWM, _, err = procMemory(col.PID()); err != nil {
		return nil, err
	}
	if r.promHWM, _, err = procMemory(prom.PID()); err != nil {
		return nil, err
	}
	if r.headSeries, err = prom.SelfMetric(ctx, "prometheus_tsdb_head_series"); err != nil {
		return nil, err
	}
	// What a user would query at the end of the window: every pair's lag and
	// time lag, fresh.
	if r.lagSeries, r.timeSeries, err = freshPairSeries(ctx, prom, o.interval); err != nil {
		return nil, err
	}
	if r.lagSeries != w.Pairs() || r.timeSeries != w.Pairs() {
		return nil, fmt.Errorf("at the end of the window Prometheus has %d fresh lag and %d fresh time lag series, want %d each", r.lagSeries, r.timeSeries, w.Pairs())
	}
	logf("%s", r.line())
	return r, nil
}

// waitSteady waits until Prometheus holds every series of the workload and
// the receiver has stopped reading record timestamps (a whole collection
// interval without a Fetch): the state the window measures. It watches
// Prometheus's head series count, which its /metrics gives for nothing, not
// queries over 180,000 series, which would cost Prometheus more than the
// ingestion measured (and raise its peak RSS); the series are queried once,
// after the window.
func waitSteady(ctx context.Context, o options, w scaleload.Workload, k *scaleload.Cluster, prom *promserver.Server, alive func() error) error {
	deadline := time.Now().Add(time.Duration(o.warmupMax+4)*o.interval + 5*time.Minute)
	fetches := k.Requests()[kmsg.Fetch]
	var series float64
	lastChange := time.Now()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(o.interval / 3):
		}
		if err := alive(); err != nil {
			return err
		}
		head, err := prom.SelfMetric(ctx, "prometheus_tsdb_head_series")
		if err != nil {
			return err
		}
		if f := k.Requests()[kmsg.Fetch]; f != fetches || head != series {
			fetches, series, lastChange = f, head, time.Now()
		}
		// Lag and time lag for every pair, and whatever else the scrape has.
		enough := head >= float64(2*w.Pairs())
		settled := time.Since(lastChange) > o.interval
		logf("warm-up: %.0f series in Prometheus's head (want at least %d), series and record reads settled: %t", head, 2*w.Pairs(), settled)
		if enough && settled {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not steady by %s: %.0f head series, settled: %t", deadline.Format(time.TimeOnly), head, settled)
		}
	}
}

// waitScrapeStart waits for the receiver's next scrape to start: the
// cluster serves a ListGroups.
func waitScrapeStart(ctx context.Context, k *scaleload.Cluster, interval time.Duration) (time.Time, error) {
	before := k.Requests()[kmsg.ListGroups]
	deadline := time.After(2 * interval)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-deadline:
			return time.Time{}, fmt.Errorf("no scrape started within %s", 2*interval)
		case <-tick.C:
			if k.Requests()[kmsg.ListGroups] != before {
				return time.Now(), nil
			}
		}
	}
}

// freshPairSeries counts the lag and time lag series with a sample within
// the last two collection intervals.
func freshPairSeries(ctx context.Context, prom *promserver.Server, interval time.Duration) (lag, timeLag int, err error) {
	fresh := int(math.Ceil(2 * interval.Seconds()))
	count := func(metric string) (int, error) {
		v, _, err := prom.QueryValue(ctx, fmt.Sprintf("count(timestamp(%s) > time() - %d)", metric, fresh))
		return int(v), err
	}
	if lag, err = count("kafka_consumer_group_lag"); err != nil {
		return 0, 0, err
	}
	timeLag, err = count("kafka_consumer_group_time_lag_seconds")
	return lag, timeLag, err
}

// prometheusConfig is Prometheus's configuration for the path: what
// docs/prometheus.md documents.
func prometheusConfig(p promOptions, interval time.Duration, exporterPort int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Generated by cmd/scalebench.\nglobal:\n  scrape_interval: %s\n  evaluation_interval: %s\n", interval, interval)
	if p.gogc != 0 {
		fmt.Fprintf(&b, "runtime:\n  gogc: %d\n", p.gogc)
	}
	if p.rules != "" {
		fmt.Fprintf(&b, "rule_files: [%s]\n", filepath.Base(p.rules))
	}
	switch p.path {
	case pathOTLP:
		b.WriteString("otlp:\n  promote_resource_attributes: [kafka.cluster.alias]\n")
	case pathScrape:
		fmt.Fprintf(&b, "scrape_configs:\n  - job_name: otelcol-kafkatimelag\n    scrape_timeout: %s\n    static_configs:\n      - targets: [127.0.0.1:%d]\n", interval, exporterPort)
	}
	return b.String()
}

// promCollectorConfig is the collector's configuration for the path.
func promCollectorConfig(brokers []string, o options, promURL string, exporterPort int) string {
	var exporter, name string
	switch o.prom.path {
	case pathOTLP:
		name = "otlp_http/prometheus"
		exporter = fmt.Sprintf(`    metrics_endpoint: %s/api/v1/otlp/v1/metrics
    compression: none
    sending_queue:
      wait_for_result: true`, promURL)
	case pathRemoteWrite:
		name = "prometheusremotewrite"
		exporter = fmt.Sprintf(`    endpoint: %s/api/v1/write
    resource_to_telemetry_conversion:
      enabled: true`, promURL)
	case pathScrape:
		name = "prometheus"
		exporter = fmt.Sprintf(`    endpoint: 127.0.0.1:%d
    without_scope_info: true
    resource_constant_labels:
      included: [kafka.cluster.alias]`, exporterPort)
	}
	return collectorConfig(brokers, o, "    cluster_alias: "+o.prom.alias+"\n", name, exporter)
}

func printPrometheusReport(o options, results []*promResult) {
	out := os.Stdout
	fmt.Fprintf(out, "\n## scalebench: Prometheus path %s, collector %s, Prometheus %s\n\n", o.prom.path, o.collector, o.prom.binary)
	if len(o.prom.args) > 0 {
		fmt.Fprintf(out, "Prometheus flags added: %v.\n\n", o.prom.args)
	}
	if len(o.prom.env) > 0 {
		fmt.Fprintf(out, "Prometheus environment: %v.\n\n", o.prom.env)
	}
	if len(o.env) > 0 {
		fmt.Fprintf(out, "Collector environment %v.\n\n", o.env)
	}
	for i, r := range results {
		if i == 0 {
			fmt.Fprintf(out, "Collector configuration (brokers and ports vary):\n\n```yaml\n%s```\n\n", r.collectorCfg)
			for _, path := range o.extraConfig {
				if b, err := os.ReadFile(path); err == nil {
					fmt.Fprintf(out, "Merged over it (%s):\n\n```yaml\n%s```\n\n", filepath.Base(path), b)
				}
			}
			fmt.Fprintf(out, "Prometheus configuration:\n\n```yaml\n%s```\n\n", r.promCfg)
			fmt.Fprintln(out, "| workload | pairs | collector CPU per 15 s | collector peak RSS | Prometheus CPU per 15 s | Prometheus peak RSS | together CPU / RSS | head series | samples appended per interval | warm-up |")
			fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		}
		colCPU, promCPU := r.per15s(r.collectorCPU), r.per15s(r.promCPU)
		fmt.Fprintf(out, "| %s | %d | %.2f s | %s | %.2f s | %s | %.2f s / %s | %.0f | %.0f | %s |\n",
			r.w, r.w.Pairs(), colCPU, mib(r.collectorHWM), promCPU, mib(r.promHWM), colCPU+promCPU, mib(r.collectorHWM+r.promHWM),
			r.headSeries, r.samplesPerInterval, r.warmup.Round(time.Second))
	}
	fmt.Fprintf(out, "\nCPU: utime+stime of each process over %d steady collection intervals of %s (from the start of one receiver scrape to the start of the %d-th after it), scaled to 15 s. RSS: VmHWM over the whole run.\n\n", o.prom.window, o.interval, o.prom.window)
	for _, r := range results {
		fmt.Fprintln(out, r.line())
	}
}

func runPrometheusPaths(ctx context.Context, o options, ws []scaleload.Workload) error {
	switch o.prom.path {
	case pathOTLP, pathRemoteWrite, pathScrape:
	default:
		return fmt.Errorf("-prometheus-path %q: want %s, %s or %s", o.prom.path, pathOTLP, pathRemoteWrite, pathScrape)
	}
	if o.prom.window < 1 {
		return fmt.Errorf("-window %d: want at least 1", o.prom.window)
	}
	var results []*promResult
	for _, w := range ws {
		logf("workload %s: %d pairs, Prometheus path %s", w, w.Pairs(), o.prom.path)
		r, err := runPrometheusPath(ctx, o, w)
		if err != nil {
			return fmt.Errorf("workload %s, path %s: %w", w, o.prom.path, err)
		}
		results = append(results, r)
	}
	printPrometheusReport(o, results)
	return nil
}
