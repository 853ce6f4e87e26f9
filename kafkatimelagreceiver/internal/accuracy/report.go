package accuracy

import (
	"fmt"
	"math"
	"strings"
	"sync"
)

// Result is one shape run at one interval over seeds: the first seed's
// series (for the plots), each method's scores pooled over every seed's
// scrapes, its scores seed by seed, and its cost at the cost model's size
// (the seeds' mean), in Methods order.
type Result struct {
	Shape    Shape
	Interval Interval
	Series   []Series
	Stats    []Stats
	PerSeed  [][]Stats // by method, then seed
	Costs    []ScaledCost
}

// Seeds is how many seeds each cell of the evaluation runs.
const Seeds = 10

// Evaluate runs every shape at every interval with every method, with
// seeds from first to first+seeds-1, on workers goroutines; the result
// does not depend on how many.
func Evaluate(shapes []Shape, intervals []Interval, methods []MethodSpec, first uint64, seeds, workers int) []Result {
	type job struct{ cell, seed int }
	cells := len(shapes) * len(intervals)
	runs := make([][]Series, cells*seeds)
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range max(1, workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				sh, iv := shapes[j.cell/len(intervals)], intervals[j.cell%len(intervals)]
				runs[j.cell*seeds+j.seed] = Run(sh, iv, methods, first+uint64(j.seed))
			}
		}()
	}
	for cell := range cells {
		for seed := range seeds {
			jobs <- job{cell, seed}
		}
	}
	close(jobs)
	wg.Wait()
	out := make([]Result, 0, cells)
	for cell := range cells {
		iv := intervals[cell%len(intervals)]
		r := Result{Shape: shapes[cell/len(intervals)], Interval: iv, Series: runs[cell*seeds]}
		for i := range methods {
			var pooled []Point
			var perSeed []Stats
			var cost ScaledCost
			for seed := range seeds {
				s := runs[cell*seeds+seed][i]
				pooled = append(pooled, s.Points...)
				perSeed = append(perSeed, Score(s.Points, iv.Sampling))
				c := Scale(s)
				cost.Requests += c.Requests / float64(seeds)
				cost.Bytes += c.Bytes / float64(seeds)
				cost.SharedRequests += c.SharedRequests / float64(seeds)
			}
			r.Stats = append(r.Stats, Score(pooled, iv.Sampling))
			r.PerSeed = append(r.PerSeed, perSeed)
			r.Costs = append(r.Costs, cost)
		}
		out = append(out, r)
	}
	return out
}

// over is the 95 % interval over seeds of one of method i's figures,
// centred on the seeds' mean.
func (r Result) over(i int, figure func(Stats) float64) Interval95 {
	var xs []float64
	for _, st := range r.PerSeed[i] {
		xs = append(xs, figure(st))
	}
	return Over(xs)
}

// worst is the largest of one of method i's figures over seeds.
func (r Result) worst(i int, figure func(Stats) float64) float64 {
	w := math.Inf(-1)
	for _, st := range r.PerSeed[i] {
		w = max(w, figure(st))
	}
	return w
}

// SeedsMet is how many of the seeds method i meets the target in, of how
// many; a cell meets it only when every seed does.
func (r Result) SeedsMet(i int) (met, seeds int) {
	for _, st := range r.PerSeed[i] {
		if st.Met() {
			met++
		}
	}
	return met, len(r.PerSeed[i])
}

// verdict is whether method i meets the target in every seed, and if not,
// in how many.
func (r Result) verdict(i int, met, missed string) string {
	k, n := r.SeedsMet(i)
	if k == n {
		return met
	}
	return fmt.Sprintf("%s (%d of %d seeds met)", missed, k, n)
}

// meanCI is a figure's mean over seeds with its 95 % interval, in seconds.
func meanCI(ci Interval95) string {
	return fmt.Sprintf("%s ± %s", seconds(ci.Mean), seconds(ci.HalfWidth))
}

// PlotRange is the stretch of a result's run its shape's plot shows.
func (r Result) PlotRange() (from, to int64) {
	start := Epoch + r.Shape.History
	if r.Shape.PlotSpan == 0 {
		return start, r.Shape.End()
	}
	return start + r.Shape.PlotFrom, start + r.Shape.PlotFrom + r.Shape.PlotSpan
}

// Cheaper lists the methods more accurate than the first (ours) at less
// than ten times its requests per scrape: a lower p95 error, and an
// estimate at least as often.
func (r Result) Cheaper() []string {
	var out []string
	ours, cost := r.Stats[0], r.Costs[0]
	for i := 1; i < len(r.Stats); i++ {
		st := r.Stats[i]
		// Below a millisecond (Kafka's timestamps) is a tie.
		if st.P95 < ours.P95-0.001 && st.NoEstimate <= ours.NoEstimate && r.Costs[i].Requests < 10*cost.Requests {
			out = append(out, r.Series[i].Method.Name)
		}
	}
	return out
}

// seconds formats a duration in seconds for a table.
func seconds(v float64) string {
	switch a := math.Abs(v); {
	case math.IsInf(v, 0) || math.IsNaN(v):
		return "–"
	case a == 0:
		return "0"
	case a < 0.001:
		return "<0.001"
	case a < 10:
		return fmt.Sprintf("%.3f", v)
	case a < 1000:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

func ratio(v float64) string {
	if math.IsInf(v, 1) || math.IsNaN(v) {
		return "∞ (no estimate)"
	}
	return fmt.Sprintf("%.2f", v)
}

func intervalName(iv Interval) string {
	name := fmt.Sprintf("%d s", iv.Sampling/second)
	if iv.Default {
		name += " (default)"
	}
	return name
}

// Tables writes the per-shape tables of results, which are grouped by
// shape; plot names each shape's plot file (relative to the document).
func Tables(results []Result, plot func(Shape) string) string {
	var b strings.Builder
	for i, r := range results {
		if i == 0 || results[i-1].Shape.Key != r.Shape.Key {
			fmt.Fprintf(&b, "\n### %s\n\n%s. Scored over %s from when watching starts, %s of production before it.\n\n",
				r.Shape.Name, capitalize(r.Shape.Description), hoursOf(r.Shape.Duration), hoursOf(r.Shape.History))
			from, to := r.PlotRange()
			fmt.Fprintf(&b, "![%s: true and estimated time lag](%s)\n\n", r.Shape.Name, plot(r.Shape))
			fmt.Fprintf(&b, "*True time lag (thick grey) and each method's estimate at %s sampling, %s to %s after watching starts; numbered as in the tables.*\n\n",
				intervalName(defaultInterval(results, r.Shape.Key)), hoursOf(from-Epoch-r.Shape.History), hoursOf(to-Epoch-r.Shape.History))
			b.WriteString("| sampling | method | p95 | p95, worst seed | p95, seeds' mean ± 95 % CI | p95 vs CreateTime | median | max | bias | no estimate | relative ratio | absolute ratio | requests / scrape | MiB / scrape |\n")
			b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		}
		for j, st := range r.Stats {
			met := ""
			if j == 0 {
				met = " " + r.verdict(j, "✓", "✗")
			}
			p95 := func(s Stats) float64 { return s.P95 }
			worst, mean := seconds(r.worst(j, p95)), meanCI(r.over(j, p95))
			if st.NoEstimate == 1 { // no error to measure
				nan := math.NaN()
				st.P95, st.P95Create, st.Median, st.Max, st.Bias = nan, nan, nan, nan, nan
				worst, mean = seconds(nan), seconds(nan)
			}
			fmt.Fprintf(&b, "| %s | %d. %s | %s | %s | %s | %s | %s | %s | %s | %.1f %% | %s | %s%s | %.0f | %.2f |\n",
				intervalName(r.Interval), j+1, r.Series[j].Method.Name,
				seconds(st.P95), worst, mean, seconds(st.P95Create), seconds(st.Median), seconds(st.Max), signed(st.Bias), 100*st.NoEstimate,
				ratio(st.TargetP95), ratio(st.AbsoluteP95), met, r.Costs[j].Requests, r.Costs[j].Bytes/(1<<20))
		}
	}
	return b.String()
}

// BeforeAfter writes a table of each result's first two methods, ours
// after a change and before it, shape by shape and interval by interval.
func BeforeAfter(results []Result) string {
	var b strings.Builder
	b.WriteString("| shape | sampling | method | p95 | max | bias | target ratio | requests / scrape | MiB / scrape |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		for j, st := range r.Stats {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %.0f | %.2f |\n", r.Shape.Name, intervalName(r.Interval), r.Series[j].Method.Name,
				seconds(st.P95), seconds(st.Max), signed(st.Bias), ratio(st.TargetP95), r.Costs[j].Requests, r.Costs[j].Bytes/(1<<20))
		}
	}
	return b.String()
}

// Summary writes, shape by shape and interval by interval, whether our row
// meets the target in every seed, its figures pooled and in its worst
// seed, and which methods beat it at less than ten times its requests.
func Summary(results []Result) string {
	var b strings.Builder
	b.WriteString("| shape | sampling | relative ratio: pooled, worst seed | absolute ratio: pooled, worst seed | target, in every seed | p95 error: pooled, worst seed | p95 error: seeds' mean ± 95 % CI | p95 vs CreateTime | more accurate at < 10x our requests |\n")
	b.WriteString("|---|---|---:|---:|---|---:|---:|---:|---|\n")
	for _, r := range results {
		st := r.Stats[0]
		cheaper := strings.Join(r.Cheaper(), ", ")
		if cheaper == "" {
			cheaper = "none"
		}
		rel := r.worst(0, func(s Stats) float64 { return s.TargetP95 })
		abs := r.worst(0, func(s Stats) float64 { return s.AbsoluteP95 })
		p95 := func(s Stats) float64 { return s.P95 }
		errors := fmt.Sprintf("%s s, %s s | %s s | %s s", seconds(st.P95), seconds(r.worst(0, p95)), meanCI(r.over(0, p95)), seconds(st.P95Create))
		if st.NoEstimate == 1 {
			errors = "– | – | –" // no error to measure
		}
		fmt.Fprintf(&b, "| %s | %s | %s, %s | %s, %s | %s | %s | %s |\n", r.Shape.Name, intervalName(r.Interval),
			ratio(st.TargetP95), ratio(rel), ratio(st.AbsoluteP95), ratio(abs), r.verdict(0, "met", "**missed**"), errors, cheaper)
	}
	return b.String()
}

func defaultInterval(results []Result, shape string) Interval {
	for _, r := range results {
		if r.Shape.Key == shape && r.Interval.Default {
			return r.Interval
		}
	}
	return results[0].Interval
}

func signed(v float64) string {
	if v >= 0.001 {
		return "+" + seconds(v)
	}
	return seconds(v)
}

func hoursOf(d int64) string {
	if d%hour == 0 {
		return fmt.Sprintf("%d h", d/hour)
	}
	return fmt.Sprintf("%d min", d/minute)
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Peers writes the table of the rows that stand for other tools: which
// tool, the release its behaviour is read from, whether the row is at its
// defaults, the settings it runs at with each default's source, and the
// source file of its method.
func Peers(methods []MethodSpec) string {
	var b strings.Builder
	b.WriteString("| row | tool and release | at its defaults? | settings as run, and where each default is set | method read from |\n|---|---|---|---|---|\n")
	for i, m := range methods {
		if m.Tool == "" {
			continue
		}
		fmt.Fprintf(&b, "| %d. %s | %s | %s | %s | [source](%s) |\n", i+1, m.Name, m.Tool, m.Defaults, m.Settings, m.Source)
	}
	return b.String()
}

// CostOf is method i's scaled cost on shape key at interval iv in
// results, and whether there is one.
func CostOf(results []Result, key string, iv Interval, i int) (ScaledCost, bool) {
	for _, r := range results {
		if r.Shape.Key == key && r.Interval == iv {
			return r.Costs[i], true
		}
	}
	return ScaledCost{}, false
}
