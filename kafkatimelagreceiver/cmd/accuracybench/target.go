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

// againstKafka is the section on TestApacheKafkaSimulationAgrees.
func againstKafka() string {
	return `
## The simulation against Apache Kafka

` + "`TestApacheKafkaSimulationAgrees`" + ` (in ` + "`kafkatimelagreceiver`" + `, part of ` + "`make test`" + `
through ` + "`make test-kafka`" + `) checks the simulated cluster against Apache Kafka
4.4: a steady partition written a record every 100 ms and read 1.5 s
behind, and a bursty one written 200 records every 4 to 6 s and read part
way, both LogAppendTime (the broker's stamps are the append times, the
truth), for 15 s, rows 1 to 3 scraping every second. The records are then
read back and the simulation's log built from their stamps. The time index
Kafka answers and the one the simulation answers give the same record and
timestamp at every time asked (the millisecond of each record's stamp and
those either side, and every tenth millisecond of the run), and the
simulation, replaying the scrapes the receivers made, gives every scrape
the time lag the receiver gave it, within 2 ms. It needs Java 17 and
Maven (Maven fetches Kafka's jars):

` + "```" + `sh
make test-kafka
` + "```" + `
`
}
