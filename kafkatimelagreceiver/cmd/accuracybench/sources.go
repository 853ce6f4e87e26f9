package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/accuracy"
)

// clockModel is the clocks' bullet of what the simulation models.
func clockModel(p accuracy.ProducerModel) string {
	return fmt.Sprintf(`- clocks: hosts running NTP (ntpd at its defaults). Each producer's clock
  has a residual offset NTP cannot see (the paths to its time server
  asymmetric, the server's own error), normal with a %d ms spread (the
  public internet's servers keep clocks within tens of milliseconds), and an
  oscillator off by a drift normal with a %.0f ppm spread. Every %d s
  (minpoll) NTP measures the offset from that residual and slews it away by
  the next poll, at most at %.0f ppm (0.5 ms a second, the kernel's limit),
  so that the drift leaves at most itself times a poll (%.2f ms at %.0f ppm);
  an offset above %d ms (the step threshold) is taken for a spike until it
  has lasted %d s (the stepout), then stepped. Each batch's stamp jitters by
  up to %d ms either way. One shape's hosts run no NTP, their clocks 1.5 s
  behind with 100 ms of jitter and drifting; one shape's producer has its
  clock knocked 1 s behind, which NTP steps back; one shape's batches wait
  0 to 500 ms before they are sent;
`, p.SkewSigma/1e6, p.DriftPPM, accuracy.NTPPoll/1e9, accuracy.NTPMaxSlewPPM,
		p.DriftPPM*float64(accuracy.NTPPoll)/1e9*1e-3, p.DriftPPM, accuracy.NTPStepThreshold/1e6, accuracy.NTPStepout/1e9, p.JitterMax/1e6)
}

// errorSources is the section on what the realistic error comes from,
// measured on the realistic steady shape's variants.
func errorSources(s sensitivityRuns, seeds int) string {
	p95 := func(key string) string { return fmt.Sprintf("%.3f s", accuracy.VariantP95(s.all, key)) }
	ms := func(a, b string) string {
		d := 1e3 * (accuracy.VariantP95(s.all, a) - accuracy.VariantP95(s.all, b))
		if math.Abs(d) < 0.5 {
			return "under a millisecond"
		}
		return fmt.Sprintf("%.0f ms", d)
	}
	return fmt.Sprintf(`## What the error comes from

On the realistic shapes a record's timestamp is not its append: its
producer's clock and its delays lie between them. To tell the parts apart,
the realistic steady shape runs again with one part of the producer model
changed at a time, %d seeds each (the same traffic drawn: only the part
named changes). Row 1's p95 error at every interval, pooled over the seeds
and in the worst seed, with how many seeds met the target; the other rows'
pooled p95 at the default interval, numbered as in the tables:

%s
At the default interval row 1's p95 is %s as modelled, %s with the
residual offsets NTP leaves at 0, and %s with the clocks exact: the
producers' residual offsets, tens of milliseconds apart, make most of it;
row 2, which measures each identified producer's clock from the records it
reads, does no better. The drift NTP slews away matters little (%s with no
drift, %s at 1 ppm); left to accumulate on hosts without NTP, the same
10 ppm makes it %s. With the clocks exact, batching at linger.ms 5 accounts
for %s (%s with linger.ms 0), and the high watermark's delay for %s (%s
without it). The rows that never read a timestamp (3 to 6, 9 and 11) do not
move with the clocks; klag's anchors and klag-exporter's message mode (7
and 8) read timestamps and move with them as row 1 does.
`, seeds, accuracy.Sensitivity(s.all, s.ours),
		p95("model"), p95("skew0"), p95("exact"), p95("drift0"), p95("drift1"), p95("freerun"),
		ms("exact", "nolinger"), p95("nolinger"), ms("exact", "nohwm"), p95("nohwm"))
}

// costBounds is what counting this receiver's searches and reads per group
// does to its requests, on the steady shapes at the default interval.
func costBounds(results []accuracy.Result) string {
	var iv accuracy.Interval
	for _, i := range accuracy.Intervals() {
		if i.Default {
			iv = i
		}
	}
	var parts []string
	for _, key := range []string{"steady", "groups", "real-steady"} {
		c, ok := accuracy.CostOf(results, key, iv, 0)
		if !ok {
			continue
		}
		name := ""
		for _, r := range results {
			if r.Shape.Key == key {
				name = r.Shape.Name
			}
		}
		parts = append(parts, fmt.Sprintf("%.0f on %s (%.0f were they the partition's)", c.Requests, name, c.SharedRequests))
	}
	return fmt.Sprintf(`
So counted, row 1's requests a scrape at the default interval are
%s: the first where every group sits at an offset of its own, the second
where all sit at one. The column *more accurate at < 10x our requests*
compares the peers with the first.
`, strings.Join(parts, "; "))
}
