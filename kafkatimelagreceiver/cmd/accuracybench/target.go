package main

import (
	"fmt"
	"slices"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/accuracy"
)

// targetTest is the paragraph on TestAccuracyTarget.
func targetTest() string {
	return fmt.Sprintf("`TestAccuracyTarget` (in `kafkatimelagreceiver/internal/accuracy`, part\n"+
		`of `+"`make test`"+`) runs every shape at every sampling interval with this
evaluation's first %d seeds, the realistic shapes as here and the idealized
ones cut to the stretch that shows what each is about, and fails when the
receiver's row misses either view in any of those seeds, but for the cells
listed as exempted under *where the receiver misses*, each with its cause;
an exempted cell met in every seed fails it too, so that the list stays
true. The simulation reads no clock: what it asserts does not depend on the
machine's speed. Given another row
(`+"`go test ./internal/accuracy -run TestAccuracyTarget -args -accuracy.method=KEY`"+`),
it fails it: every peer below misses on several shapes, and so do two
deliberately broken copies of this receiver (`+"`broken-half-interval`"+`, every
time lag half a sampling interval long; `+"`broken-kn`"+`, the table's records
placed at k/n of their bracket).
`, accuracy.TargetSeeds)
}

// exemptions is the list of the cells TestAccuracyTarget exempts.
func exemptions(results []accuracy.Result) string {
	var shapes []accuracy.Shape
	for _, r := range results {
		if !slices.ContainsFunc(shapes, func(s accuracy.Shape) bool { return s.Key == r.Shape.Key }) {
			shapes = append(shapes, r.Shape)
		}
	}
	return fmt.Sprintf("`TestAccuracyTarget` exempts these cells, each missed in at least one of\n"+
		"the seeds 1 to %d it runs (the summary gives the verdict over all %d seeds),\n"+
		"and asserts every other:\n\n%s", accuracy.TargetSeeds, accuracy.Seeds, accuracy.Exemptions(shapes))
}
