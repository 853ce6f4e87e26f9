package accuracy

import (
	"fmt"
	"math"
	"strings"
)

// Result is one shape run at one interval: each method's series, scores
// and cost at the cost model's size, in Methods order.
type Result struct {
	Shape    Shape
	Interval Interval
	Series   []Series
	Stats    []Stats
	Costs    []ScaledCost
}

// Evaluate runs every shape at every interval with every method.
func Evaluate(shapes []Shape, intervals []Interval, methods []MethodSpec, seed uint64) []Result {
	var out []Result
	for _, sh := range shapes {
		for _, iv := range intervals {
			r := Result{Shape: sh, Interval: iv, Series: Run(sh, iv, methods, seed)}
			for _, s := range r.Series {
				r.Stats = append(r.Stats, Score(s.Points, iv.Sampling))
				r.Costs = append(r.Costs, Scale(s))
			}
			out = append(out, r)
		}
	}
	return out
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
	if math.IsInf(v, 1) {
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
			b.WriteString("| sampling | method | median | p95 | max | bias | no estimate | target ratio | requests / scrape | MiB / scrape |\n")
			b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		}
		for j, st := range r.Stats {
			met := ""
			if j == 0 {
				met = " ✗"
				if st.Met() {
					met = " ✓"
				}
			}
			fmt.Fprintf(&b, "| %s | %d. %s | %s | %s | %s | %s | %.1f %% | %s%s | %.0f | %.2f |\n",
				intervalName(r.Interval), j+1, r.Series[j].Method.Name,
				seconds(st.Median), seconds(st.P95), seconds(st.Max), signed(st.Bias), 100*st.NoEstimate,
				ratio(st.TargetP95), met, r.Costs[j].Requests, r.Costs[j].Bytes/(1<<20))
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
// meets the target and which methods beat it at less than ten times its
// requests.
func Summary(results []Result) string {
	var b strings.Builder
	b.WriteString("| shape | sampling | target ratio (≤ 1 meets it) | p95 error | more accurate at < 10x our requests |\n")
	b.WriteString("|---|---|---:|---:|---|\n")
	for _, r := range results {
		st := r.Stats[0]
		verdict := "met"
		if !st.Met() {
			verdict = "**missed**"
		}
		cheaper := strings.Join(r.Cheaper(), ", ")
		if cheaper == "" {
			cheaper = "none"
		}
		fmt.Fprintf(&b, "| %s | %s | %s, %s | %s s | %s |\n", r.Shape.Name, intervalName(r.Interval), ratio(st.TargetP95), verdict, seconds(st.P95), cheaper)
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
