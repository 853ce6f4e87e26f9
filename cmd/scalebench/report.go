package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/scaleload"
)

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s scalebench: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// mark is the state at the first export of a scrape.
type mark struct {
	at       time.Time // when the export arrived
	cpu      time.Duration
	rss      int64
	requests requestCounts
	traffic  traffic
	kminion  kminionMark // with -kminion
	err      error
}

// interval is what happened between two marks: one scrape and the samples
// before it.
type interval struct {
	cpu      time.Duration
	wall     time.Duration
	requests requestCounts
	traffic  traffic
}

type result struct {
	w            scaleload.Workload
	brokers      int
	coordinators int
	loadTime     time.Duration

	first   interval   // process start to the first scrape's export
	warmup  []interval // scrapes that read record timestamps
	steady  []interval // scrapes after the record-timestamp cache filled
	settled bool       // a scrape without record reads was seen

	points   int // data points of a steady scrape
	lagPts   int
	exportKB float64 // compressed OTLP bytes of a steady scrape
	requests int     // export requests of a steady scrape
	peakRSS  int64   // VmHWM at the end
	endRSS   int64   // VmRSS at the end
	maxRSS   int64   // largest VmRSS seen at a scrape mark during the steady window

	naive     *naiveMeasurement
	exporters []exporterScrape // -compare-exporters
	kminion   *kminionResult   // -kminion
	naiveErr  error

	busy     *busyResult      // busy mode's tables
	accuracy *accuracySummary // -accuracy: time lags against the truth
}

func printReport(out io.Writer, o options, results []*result) {
	samples := int(o.interval / o.sampling)
	fmt.Fprintf(out, "\n## scalebench: collector %s\n\n", o.collector)
	fmt.Fprintf(out, "collection_interval %s, sampling_interval %s (%d samples per interval), %d brokers, exporter otlp_http to an in-process sink", o.interval, o.sampling, samples, o.brokers)
	if len(o.extraConfig) == 0 {
		fmt.Fprint(out, " with its defaults (gzip, asynchronous sending queue)")
	}
	if o.timestampSource != "" {
		fmt.Fprintf(out, ", timestamp_source %s", o.timestampSource)
	}
	if len(o.env) > 0 {
		fmt.Fprintf(out, ", collector environment %v", o.env)
	}
	if len(o.extraArgs) > 0 {
		fmt.Fprintf(out, ", collector arguments %v", o.extraArgs)
	}
	fmt.Fprint(out, ".\n")
	for _, path := range o.extraConfig {
		// The extra configuration is part of what was measured: show it.
		if b, err := os.ReadFile(path); err == nil {
			fmt.Fprintf(out, "\nMerged over the generated configuration (%s):\n\n```yaml\n%s```\n", filepath.Base(path), b)
		}
	}
	fmt.Fprint(out, "\nCPU is the collector process's utime+stime over one collection interval (one scrape, its export and the samples in between).\n\n")

	fmt.Fprintln(out, "| workload | pairs | points/scrape | OTLP bytes/scrape | start + first scrape CPU | warm-up CPU/interval | steady CPU/interval, mean (min-max) | peak RSS (VmHWM) | RSS in steady state (max) |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		warm := "-"
		if m, _, _, err := meanCPU(r.warmup); err == nil {
			warm = fmt.Sprintf("%s (%d scrapes)", secs(m), len(r.warmup))
		}
		steady := "-"
		if m, lo, hi, err := meanCPU(r.steady); err == nil {
			steady = fmt.Sprintf("%s (%s-%s), %d scrapes", secs(m), secs(lo), secs(hi), len(r.steady))
			if !r.settled {
				steady += " (record reads never settled)"
			}
		}
		fmt.Fprintf(out, "| %s | %d | %d | %.0f KiB in %d request(s) | %s | %s | %s | %s | %s |\n",
			r.w, r.w.Pairs(), r.points, r.exportKB, r.requests, secs(r.first.cpu), warm, steady, mib(r.peakRSS), mib(r.maxRSS))
	}

	if o.kminion != "" {
		printKminionReport(out, o, results)
	}

	if o.busy.on {
		fmt.Fprintln(out)
		printBusyReport(out, o, results)
		if o.accuracy {
			printAccuracy(out, o, results)
		}
	}

	fmt.Fprintf(out, "\nKafka requests per collection interval (one scrape + %d samples), by API key:\n\n", samples)
	fmt.Fprintln(out, "| workload | coordinators | start + first scrape | warm-up (mean) | steady (mean) |")
	fmt.Fprintln(out, "|---|---:|---|---|---|")
	for _, r := range results {
		fmt.Fprintf(out, "| %s | %d | %s | %s | %s |\n", r.w, r.coordinators,
			r.first.requests.PerOp(1), sumRequests(r.warmup).PerOp(len(r.warmup)), sumRequests(r.steady).PerOp(len(r.steady)))
	}

	printTraffic(out, o, results)

	fmt.Fprintln(out, "\nNaive path (one OffsetFetch per group, one ListOffsets per partition per group; offsets only, no metrics built), in its own process on the same cluster:")
	fmt.Fprintln(out)
	fmt.Fprintln(out, "| workload | naive requests/pass | naive CPU/pass | naive wall/pass | naive peak RSS | collector requests/interval | collector CPU/interval | CPU ratio naive/collector | request ratio |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		if r.naive == nil {
			reason := "not run"
			if r.naiveErr != nil {
				reason = r.naiveErr.Error()
			}
			fmt.Fprintf(out, "| %s | %s | | | | | | | |\n", r.w, reason)
			continue
		}
		n := r.naive
		naiveReq := float64(n.requests.Total()) / float64(n.passes)
		steadyCPU, _, _, err := meanCPU(r.steady)
		colReq := float64(sumRequests(r.steady).Total()) / float64(max(1, len(r.steady)))
		cpuRatio, reqRatio := "-", "-"
		if err == nil && steadyCPU > 0 {
			cpuRatio = fmt.Sprintf("%.1fx", float64(n.cpu)/float64(steadyCPU))
		}
		if colReq > 0 {
			reqRatio = fmt.Sprintf("%.0fx", naiveReq/colReq)
		}
		fmt.Fprintf(out, "| %s | %.0f (%s) | %s | %s | %s | %.0f | %s | %s | %s |\n",
			r.w, naiveReq, n.requests.PerOp(n.passes), secs(n.cpu), n.wall.Round(time.Millisecond), mib(n.peakRSS), colReq, secs(steadyCPU), cpuRatio, reqRatio)
	}
	fmt.Fprintln(out)
}

func joinComma(s []string) string { return strings.Join(s, ",") }

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

var errNoSteady = errors.New("no steady scrape")

func meanCPU(ivs []interval) (mean, lo, hi time.Duration, err error) {
	if len(ivs) == 0 {
		return 0, 0, 0, errNoSteady
	}
	lo = ivs[0].cpu
	for _, iv := range ivs {
		mean += iv.cpu
		lo, hi = min(lo, iv.cpu), max(hi, iv.cpu)
	}
	return mean / time.Duration(len(ivs)), lo, hi, nil
}

func sumRequests(ivs []interval) requestCounts {
	var out requestCounts
	for _, iv := range ivs {
		for i := range out {
			out[i] += iv.requests[i]
		}
	}
	return out
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }

func between(a, b mark) interval {
	return interval{cpu: b.cpu - a.cpu, wall: b.at.Sub(a.at), requests: b.requests.Since(a.requests), traffic: b.traffic.since(a.traffic)}
}

func progress(marks []mark, mu *sync.Mutex) string {
	mu.Lock()
	defer mu.Unlock()
	n := len(marks)
	if n < 2 {
		return fmt.Sprintf("process CPU %s since start", marks[n-1].cpu)
	}
	iv := between(marks[n-2], marks[n-1])
	return fmt.Sprintf("interval CPU %s, RSS %s, requests %s", iv.cpu, mib(marks[n-1].rss), iv.requests.PerOp(1))
}
