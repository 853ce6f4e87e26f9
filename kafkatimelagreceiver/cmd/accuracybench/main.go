// Command accuracybench evaluates time-lag methods on simulated traffic
// against the ground truth of every record's append time, and writes
// docs/accuracy.md and its plots. Run it from the receiver's module:
//
//	cd kafkatimelagreceiver && go run ./cmd/accuracybench
//
// The simulation is deterministic: a second run writes the same bytes.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/accuracy"
)

func main() {
	doc := flag.String("doc", "../docs/accuracy.md", "the Markdown document to write")
	plots := flag.String("plots", "../docs/accuracy", "the directory to write the plots into (PNG, one per shape)")
	seed := flag.Uint64("seed", 1, "the first of the simulation's random seeds")
	seeds := flag.Int("seeds", accuracy.Seeds, "how many seeds each cell runs")
	workers := flag.Int("workers", 2, "how many runs go at once (the output does not depend on it)")
	flag.Parse()
	if err := run(*doc, *plots, *seed, *seeds, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "accuracybench:", err)
		os.Exit(1)
	}
}

func run(docPath, plotDir string, seed uint64, seeds, workers int) error {
	shapes := append(accuracy.Shapes(), accuracy.RealisticShapes()...)
	results := accuracy.Evaluate(shapes, accuracy.Intervals(), accuracy.Methods(), seed, seeds, workers)
	if err := os.MkdirAll(plotDir, 0o755); err != nil {
		return fmt.Errorf("create the plot directory %q: %w", plotDir, err)
	}
	rel, err := filepath.Rel(filepath.Dir(docPath), plotDir)
	if err != nil {
		return fmt.Errorf("place the plots %q relative to the document %q: %w", plotDir, docPath, err)
	}
	plotName := func(s accuracy.Shape) string { return filepath.ToSlash(filepath.Join(rel, s.Key+".png")) }
	for _, r := range results {
		if !r.Interval.Default {
			continue
		}
		from, to := r.PlotRange()
		png, err := accuracy.Plot(r.Series, from, to)
		if err != nil {
			return fmt.Errorf("plot %s: %w", r.Shape.Key, err)
		}
		path := filepath.Join(plotDir, r.Shape.Key+".png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			return fmt.Errorf("write plot %q: %w", path, err)
		}
	}
	var skew []accuracy.Shape
	for _, s := range accuracy.Shapes() {
		if s.Key == "skew" {
			skew = append(skew, s)
		}
	}
	clocks := accuracy.Evaluate(skew, accuracy.Intervals(), []accuracy.MethodSpec{accuracy.ReceiverRecordReads, accuracy.TrustClocks}, seed, seeds, workers)
	var atDefault, others []accuracy.Interval
	for _, iv := range accuracy.Intervals() {
		if iv.Default {
			atDefault = append(atDefault, iv)
		} else {
			others = append(others, iv)
		}
	}
	variants := accuracy.SensitivityShapes()
	sensitivity := sensitivityRuns{
		all:  accuracy.Evaluate(variants, atDefault, accuracy.Methods(), seed, seeds, workers),
		ours: accuracy.Evaluate(variants, others, []accuracy.MethodSpec{accuracy.Receiver}, seed, seeds, workers),
	}
	text := document(results, clocks, sensitivity, plotName, seed, seeds)
	if err := os.WriteFile(docPath, []byte(text), 0o644); err != nil {
		return fmt.Errorf("write %q: %w", docPath, err)
	}
	fmt.Printf("wrote %s and %d plots in %s\n", docPath, len(shapes), plotDir)
	return nil
}

// sensitivityRuns are the realistic steady shape's variants: at the
// default interval with every method, and at the others with ours.
type sensitivityRuns struct{ all, ours []accuracy.Result }
