package emit

import (
	"encoding/binary"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

// attrValues is one point's attribute values in its metric's generated
// order: strings, but the one at numAt (-1: none), the partition.
type attrValues struct {
	strs  [6]string
	num   int64
	numAt int
}

func stringValues(values ...string) attrValues {
	a := attrValues{numAt: -1}
	copy(a.strs[:], values)
	return a
}

// reductions fold, per metric whose attributes the user reduced, the points
// whose kept attributes are equal into one, found by those attributes in a
// map: one lookup a point, where the generated builder scans every point
// recorded so far. They fold over the whole scrape, so their points come
// out with the scrape's last piece, never in a pushed chunk.
type reductions struct {
	points *section
	byKey  []map[string]int // by metric id: a point's index by its key
	counts [][]int64        // by metric id and point: points folded, for avg
	// withheld are, by metric id, the keys of the points one of whose
	// pairs or partitions had no value this scrape: a sum, minimum or
	// maximum over the others would pass for one over all of them.
	withheld []map[string]struct{}
	// acrossGroups, by metric id, withholds every point of a metric whose
	// points fold over groups (its group attribute removed): a group was
	// not read this scrape, and the points it would have folded into are
	// not known, so each of them may be missing a part.
	acrossGroups []bool
	key          []byte // buffer
}

func newReductions(m *metrics) *reductions {
	return &reductions{
		points:       newSection(m),
		byKey:        make([]map[string]int, len(m.all)),
		counts:       make([][]int64, len(m.all)),
		withheld:     make([]map[string]struct{}, len(m.all)),
		acrossGroups: make([]bool, len(m.all)),
	}
}

// withholdAcrossGroups withholds, of the metrics share says (the share
// groups' or the consumer groups'), every point of those that fold over
// groups.
func (r *reductions) withholdAcrossGroups(m *metrics, share bool) {
	for _, d := range m.all {
		if strings.HasPrefix(d.name, shareGroupPrefix) != share {
			continue
		}
		if i := slices.Index(d.keys, groupAttribute); i >= 0 && !d.kept[i] {
			r.acrossGroups[d.id] = true
		}
	}
}

const (
	groupAttribute   = "group"
	shareGroupPrefix = "kafka.share_group."
)

// keyOf sets r.key to the kept attributes of a.
func (r *reductions) keyOf(d *metric, a attrValues) {
	r.key = r.key[:0]
	for i, kept := range d.kept {
		switch {
		case !kept:
		case i == a.numAt:
			r.key = binary.AppendVarint(r.key, a.num)
		default:
			r.key = binary.AppendUvarint(r.key, uint64(len(a.strs[i])))
			r.key = append(r.key, a.strs[i]...)
		}
	}
}

// withhold drops the point of d with a's kept attributes from the scrape:
// one of the points it folds has no value.
func (r *reductions) withhold(d *metric, a attrValues) {
	r.keyOf(d, a)
	if r.withheld[d.id] == nil {
		r.withheld[d.id] = map[string]struct{}{}
	}
	r.withheld[d.id][string(r.key)] = struct{}{}
}

// reduce folds a point of d, with value v and attributes a, into the point
// of d with the same kept attributes: the aggregation strategy's sum, avg,
// min or max of the values, and, for a sum, the latest start.
func reduce[V value](r *reductions, d *metric, start, ts pcommon.Timestamp, v V, a attrValues) {
	r.keyOf(d, a)
	index := r.byKey[d.id]
	if index == nil {
		index = map[string]int{}
		r.byKey[d.id] = index
	}
	if i, ok := index[string(r.key)]; ok {
		dp := r.points.slots[d.id].At(i)
		fold(dp, d.strategy, v)
		r.counts[d.id][i]++
		if d.sum && start > dp.StartTimestamp() {
			dp.SetStartTimestamp(start)
		}
		return
	}
	index[string(r.key)] = len(r.counts[d.id])
	r.counts[d.id] = append(r.counts[d.id], 1)
	attrs := point(r.points, d, 0, start, ts, v)
	for i, kept := range d.kept {
		switch {
		case !kept:
		case i == a.numAt:
			attrs.PutInt(d.keys[i], a.num)
		default:
			attrs.PutStr(d.keys[i], a.strs[i])
		}
	}
}

// fold adds v to dp by strategy, as the generated builder does, but that an
// integer sum saturates rather than wraps.
func fold[V value](dp pmetric.NumberDataPoint, strategy string, v V) {
	switch x := any(v).(type) {
	case int64:
		cur := dp.IntValue()
		switch {
		case strategy == metadata.AggregationStrategySum || strategy == metadata.AggregationStrategyAvg:
			dp.SetIntValue(lag.AddLags(cur, x)) // offsets and counts: never negative
		case strategy == metadata.AggregationStrategyMin && x < cur, strategy == metadata.AggregationStrategyMax && x > cur:
			dp.SetIntValue(x)
		}
	case float64:
		cur := dp.DoubleValue()
		switch {
		case strategy == metadata.AggregationStrategySum || strategy == metadata.AggregationStrategyAvg:
			dp.SetDoubleValue(cur + x)
		case strategy == metadata.AggregationStrategyMin && x < cur, strategy == metadata.AggregationStrategyMax && x > cur:
			dp.SetDoubleValue(x)
		}
	}
}

// finish turns the sums of the metrics averaged into averages (an integer
// average rounds toward zero, as the builder's), drops the points withheld
// and moves the rest to out.
func (r *reductions) finish(m *metrics, out pmetric.MetricSlice) {
	for _, d := range m.all {
		r.dropWithheld(d)
		if d.strategy != metadata.AggregationStrategyAvg || !r.points.made[d.id] {
			continue
		}
		dps := r.points.slots[d.id]
		for i, n := range r.counts[d.id] {
			dp := dps.At(i)
			if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
				dp.SetIntValue(dp.IntValue() / n)
			} else {
				dp.SetDoubleValue(dp.DoubleValue() / float64(n))
			}
		}
	}
	// A metric whose every point was withheld is left out whole.
	r.points.ms.RemoveIf(func(m pmetric.Metric) bool { return pointCount(m) == 0 })
	r.points.ms.MoveAndAppendTo(out)
}

func pointCount(m pmetric.Metric) int {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		return m.Gauge().DataPoints().Len()
	case pmetric.MetricTypeSum:
		return m.Sum().DataPoints().Len()
	default:
		return 1
	}
}

// dropWithheld removes d's withheld points.
func (r *reductions) dropWithheld(d *metric) {
	if len(r.withheld[d.id]) == 0 && !r.acrossGroups[d.id] || !r.points.made[d.id] {
		return
	}
	drop := make([]bool, len(r.counts[d.id]))
	for key := range r.withheld[d.id] {
		if i, ok := r.byKey[d.id][key]; ok {
			drop[i] = true
		}
	}
	if r.acrossGroups[d.id] {
		for i := range drop {
			drop[i] = true
		}
	}
	i := 0
	r.points.slots[d.id].RemoveIf(func(pmetric.NumberDataPoint) bool {
		i++
		return drop[i-1]
	})
	kept := r.counts[d.id][:0]
	for j, n := range r.counts[d.id] {
		if !drop[j] {
			kept = append(kept, n)
		}
	}
	r.counts[d.id] = kept
}
