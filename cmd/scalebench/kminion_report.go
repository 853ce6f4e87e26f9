package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// scrapeWall is the mean and longest wall time of the scrapes.
func scrapeWall(scrapes []metricsScrape) (mean, longest time.Duration) {
	for _, s := range scrapes {
		d := s.end.Sub(s.start)
		mean += d
		longest = max(longest, d)
	}
	if len(scrapes) > 0 {
		mean /= time.Duration(len(scrapes))
	}
	return mean, longest
}

func meanDurations(ds []time.Duration) (mean, lo, hi time.Duration, err error) {
	ivs := make([]interval, len(ds))
	for i, d := range ds {
		ivs[i].cpu = d
	}
	return meanCPU(ivs)
}

// printKminionReport prints kminion beside the collector: CPU per interval
// and memory of each, and the ratios.
func printKminionReport(out io.Writer, o options, results []*result) {
	fmt.Fprintf(out, "\nkminion %s in the same run (configuration below), scraped every %s as Prometheus would, one scrape at a time (a scrape longer than that delays the next; timeout %s). Per interval: CPU over the collector's steady intervals (one collector scrape each; on a loaded machine they stretch past %s and may hold more than one kminion scrape). Per scrape: kminion's CPU from a scrape's start to the next's (or to the end of the window when no other began), for the scrapes that ended in the window; the collector's per scrape is its per interval.\n\n", o.kminion, o.interval, kminionScrapeTimeouts*o.interval, o.interval)
	fmt.Fprintln(out, "| workload | interval wall, mean | collector CPU/interval | kminion CPU/interval, mean (min-max) | kminion/collector | kminion CPU/scrape, mean (min-max) | kminion/collector per scrape | kminion warm-up CPU/interval | collector steady scrapes: lag points | kminion scrapes ended in the window: lag series, wall mean (max) |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
	for _, r := range results {
		kr := r.kminion
		if kr == nil {
			continue
		}
		col, _, _, colErr := meanCPU(r.steady)
		var wall time.Duration
		for _, iv := range r.steady {
			wall += iv.wall
		}
		wall /= time.Duration(max(1, len(r.steady)))
		perInterval, intervalRatio := cpuAndRatio(kr.steady, col, colErr)
		perScrape, scrapeRatio := cpuAndRatio(kr.perScrape, col, colErr)
		warm := "-"
		if m, _, _, err := meanDurations(kr.warmup); err == nil {
			warm = fmt.Sprintf("%s (%d)", secs(m), len(kr.warmup))
		}
		series := make([]string, len(kr.scrapes))
		for i, s := range kr.scrapes {
			series[i] = strconv.Itoa(s.lagSeries)
			if s.err != nil {
				series[i] = "failed"
			}
		}
		colPts := make([]string, len(kr.collectorLagPts))
		complete := true
		for i, n := range kr.collectorLagPts {
			colPts[i] = strconv.Itoa(n)
			complete = complete && n == kr.wantSeries
		}
		if !complete {
			// The collector's CPU is then that of part of the work.
			intervalRatio += " (collector cut short)"
			scrapeRatio += " (collector cut short)"
		}
		if kr.err != nil {
			// kminion did less than the collector: no ratio holds.
			intervalRatio, scrapeRatio = "kminion incomplete", "kminion incomplete"
		}
		mean, longest := scrapeWall(kr.scrapes)
		fmt.Fprintf(out, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d: %s (want %d), %s (%s) |\n",
			r.w, wall.Round(100*time.Millisecond), secs(col), perInterval, intervalRatio, perScrape, scrapeRatio, warm,
			strings.Join(colPts, ", "), len(kr.scrapes), strings.Join(series, ", "), kr.wantSeries, mean.Round(time.Millisecond), longest.Round(time.Millisecond))
	}
	fmt.Fprintln(out, "\nMemory, each process's as the collector's is read: peak RSS (VmHWM) over the whole run, and the largest VmRSS at a steady mark:")
	fmt.Fprintln(out)
	fmt.Fprintln(out, "| workload | collector peak RSS | kminion peak RSS | kminion/collector | collector RSS steady (max) | kminion RSS steady (max) | kminion/collector |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		if kr := r.kminion; kr != nil {
			fmt.Fprintf(out, "| %s | %s | %s | %s | %s | %s | %s |\n", r.w, mib(r.peakRSS), mib(kr.peakRSS), ratio(kr.peakRSS, r.peakRSS),
				mib(r.maxRSS), mib(kr.maxRSS), ratio(kr.maxRSS, r.maxRSS))
		}
	}
	fmt.Fprintf(out, "\nKafka requests and bytes the brokers sent, per interval (steady), by client id (%s, %s); the requests by API key below count every client's, kminion's too:\n", kminionClientID, collectorClientID)
	fmt.Fprintln(out)
	fmt.Fprintln(out, "| workload | kminion requests | kminion bytes received | collector bytes received |")
	fmt.Fprintln(out, "|---|---|---:|---:|")
	for _, r := range results {
		kr := r.kminion
		if kr == nil || len(kr.steady) == 0 {
			continue
		}
		n := len(kr.steady)
		var colBytes int64
		for _, iv := range r.steady {
			colBytes += iv.traffic.bytes.Total()
		}
		fmt.Fprintf(out, "| %s | %s | %.1f MiB | %.1f MiB |\n", r.w, kr.requests.PerOp(n),
			float64(kr.bytes.Total())/float64(n)/(1<<20), float64(colBytes)/float64(max(1, len(r.steady)))/(1<<20))
	}
	for _, r := range results {
		if r.kminion != nil {
			fmt.Fprintf(out, "\nkminion's configuration (CONFIG_FILEPATH):\n\n```yaml\n%s```\n", r.kminion.config)
			break
		}
	}
}

// cpuAndRatio is the mean (min-max) of cpus and its ratio to the
// collector's mean.
func cpuAndRatio(cpus []time.Duration, collector time.Duration, collectorErr error) (cpu, ratio string) {
	m, lo, hi, err := meanDurations(cpus)
	if err != nil {
		return "-", "-"
	}
	cpu = fmt.Sprintf("%s (%s-%s), %d", secs(m), secs(lo), secs(hi), len(cpus))
	if collectorErr != nil || collector <= 0 {
		return cpu, "-"
	}
	return cpu, fmt.Sprintf("%.2fx", float64(m)/float64(collector))
}

func ratio(a, b int64) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", float64(a)/float64(b))
}
