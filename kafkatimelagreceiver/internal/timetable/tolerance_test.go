package timetable

import (
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSimplifiedTableDatesEverySampleWithinTheTolerance feeds a day of each
// shape to a table and to a reference that keeps every sample (merging flat
// runs as a table does), and checks that the table dates the offset of
// every sample, and the one after it, within the documented tolerance of
// what the reference says.
func TestSimplifiedTableDatesEverySampleWithinTheTolerance(t *testing.T) {
	// Written now and then: a record about every ten minutes, so that the
	// table is a staircase of flat runs whose ends date the records.
	sparse := partitionShape{"sparse", func(rng *rand.Rand, s int) float64 {
		if rng.Intn(600) == 0 {
			return 1
		}
		return 0
	}}
	for _, shape := range append(partitionShapes[:2:2], sparse) {
		t.Run(shape.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(1))
			table := NewTable(512, 0)
			var reference []Sample
			cum := 0.0
			base := unixSec(1_700_000_000)
			for s := 0; s <= 86400; s++ {
				if s%10 == 0 {
					at := base + unixSec(int64(s)) + rng.Int63n(int64(20*time.Millisecond))
					tableAddAt(table, int64(cum), at)
					p := Sample{Offset: int64(cum), At: quantize(at)}
					if n := len(reference); n >= 2 && reference[n-1].Offset == p.Offset && reference[n-2].Offset == p.Offset {
						reference[n-1] = p
					} else {
						reference = append(reference, p)
					}
				}
				cum += shape.rate(rng, s)
			}
			require.Less(t, len(reference), 20000)
			newest := reference[len(reference)-1]
			upper := Sample{Offset: newest.Offset + 1, At: newest.At + int64(time.Second)}
			// referenceBracket is the samples between which record c was
			// appended.
			referenceBracket := func(c int64) (lo, hi Sample) {
				i := sort.Search(len(reference), func(i int) bool { return reference[i].Offset > c })
				if i == len(reference) {
					return reference[i-1], upper
				}
				return reference[i-1], reference[i]
			}
			referenceAt := func(c int64) int64 {
				lo, hi := referenceBracket(c)
				return Interpolate(lo, hi, c)
			}
			worst, worstSpread, worstMerged, merged := 0.0, 0.0, 0.0, 0
			for _, s := range reference {
				for _, c := range []int64{s.Offset, s.Offset + 1} {
					if c >= upper.Offset {
						continue
					}
					want := referenceAt(c)
					at, ok := appendTime(table, c, upper)
					require.True(t, ok)
					tolerance := max(float64(simplifyFloor), simplifyRatio*float64(newest.At-want))
					worst = max(worst, abs(float64(at-want))/tolerance)

					// Every time the samples allow for record c is within
					// the bracket's Spread of the table's line.
					b, ok := table.Bracket(c, upper)
					require.True(t, ok)
					lo, hi := referenceBracket(c)
					line := Interpolate(b.Lo, b.Hi, c)
					farthest := float64(max(line-lo.At, hi.At-line)) / float64(b.Spread)
					worstSpread = max(worstSpread, farthest)
					if b.Lo != lo || b.Hi != hi {
						merged++
						worstMerged = max(worstMerged, farthest)
					}
				}
			}
			t.Logf("%d points of %d; worst error %.2f of the tolerance; the samples' times at most %.2f of the spread from the line (%d offsets in merged segments: %.2f)",
				table.len(), len(reference), worst, worstSpread, merged, worstMerged)
			require.LessOrEqual(t, worst, 1.0)
			require.Positive(t, merged)
			require.LessOrEqual(t, worstSpread, 1.0, "a bracket's spread bounds where its records were appended")
		})
	}
}
