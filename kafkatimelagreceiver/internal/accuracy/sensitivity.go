package accuracy

import (
	"fmt"
	"math"
	"strings"
)

// SensitivityShapes are the realistic steady shape with one part of the
// producer model changed at a time (the clocks, the batching, the high
// watermark's delay): run beside it, they show which part makes each
// row's error.
func SensitivityShapes() []Shape {
	type variant struct {
		key, name string
		change    func(*ProducerModel)
	}
	exact := func(m *ProducerModel) { m.SkewSigma, m.DriftPPM, m.JitterMax = 0, 0, 0 }
	variants := []variant{
		{"model", "as modelled (NTP; residual offset spread 20 ms, drift spread 10 ppm, jitter 1 ms)", func(*ProducerModel) {}},
		{"drift0", "drift 0", func(m *ProducerModel) { m.DriftPPM = 0 }},
		{"drift1", "drift spread 1 ppm", func(m *ProducerModel) { m.DriftPPM = 1 }},
		{"freerun", "drift spread 10 ppm, no NTP (the drift accumulates)", func(m *ProducerModel) { m.FreeRunning = true }},
		{"skew0", "residual offsets 0", func(m *ProducerModel) { m.SkewSigma = 0 }},
		{"jitter0", "jitter 0", func(m *ProducerModel) { m.JitterMax = 0 }},
		{"exact", "clocks exact (no offset, drift or jitter)", exact},
		{"nolinger", "clocks exact, linger.ms 0 (a batch a record)", func(m *ProducerModel) { exact(m); m.Linger = 0 }},
		{"nohwm", "clocks exact, high watermark at the append (no replication delay)", func(m *ProducerModel) { exact(m); m.ReplicationMedian = 0 }},
	}
	steady := func(int64) float64 { return 20 }
	var out []Shape
	for _, v := range variants {
		m := DefaultProducers()
		v.change(&m)
		out = append(out, realisticShape("sens-"+v.key, v.name, "the realistic steady traffic, "+v.name, m, 20, steady, 2*second, 0))
	}
	return out
}

// Sensitivity writes the sensitivity table: for each variant of the
// producer model, our row's p95 error pooled over the seeds and in the
// worst seed, with how many seeds met the target, at every interval, and
// every other row's pooled p95 at the default interval. all are the
// variants at the default interval with every method; ours at the other
// intervals with ours alone, by shape, then interval.
func Sensitivity(all, ours []Result) string {
	var b strings.Builder
	cell := func(r Result) string {
		k, n := r.SeedsMet(0)
		return fmt.Sprintf(" %s, %s (%d of %d) |", seconds(r.Stats[0].P95), seconds(r.worst(0, func(s Stats) float64 { return s.P95 })), k, n)
	}
	perShape := len(ours) / len(all)
	b.WriteString("| producers' clocks and delays |")
	for _, r := range ours[:perShape] {
		fmt.Fprintf(&b, " row 1 at %s: p95, worst seed (seeds met) |", intervalName(r.Interval))
	}
	fmt.Fprintf(&b, " row 1 at %s |", intervalName(all[0].Interval))
	for i := 1; i < len(all[0].Series); i++ {
		fmt.Fprintf(&b, " %d |", i+1)
	}
	b.WriteString("\n|---|")
	for range perShape + len(all[0].Series) {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for i, r := range all {
		fmt.Fprintf(&b, "| %s |", r.Shape.Name)
		for _, o := range ours[i*perShape : (i+1)*perShape] {
			b.WriteString(cell(o))
		}
		b.WriteString(cell(r))
		for _, st := range r.Stats[1:] {
			if st.NoEstimate == 1 {
				b.WriteString(" – |")
				continue
			}
			fmt.Fprintf(&b, " %s |", seconds(st.P95))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// VariantP95 is our row's p95 error, pooled over the seeds, on the
// sensitivity variant key (SensitivityShapes) in results.
func VariantP95(results []Result, key string) float64 {
	for _, r := range results {
		if r.Shape.Key == "sens-"+key {
			return r.Stats[0].P95
		}
	}
	return math.NaN()
}
