package emit

import (
	"encoding/binary"

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
	key    []byte           // buffer
}

func newReductions(m *metrics) *reductions {
	return &reductions{points: newSection(m), byKey: make([]map[string]int, len(m.all)), counts: make([][]int64, len(m.all))}
}

// reduce folds a point of d, with value v and attributes a, into the point
// of d with the same kept attributes: the aggregation strategy's sum, avg,
// min or max of the values, and, for a sum, the latest start.
func reduce[V value](r *reductions, d *metric, start, ts pcommon.Timestamp, v V, a attrValues) {
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
// average rounds toward zero, as the builder's) and moves the points to out.
func (r *reductions) finish(m *metrics, out pmetric.MetricSlice) {
	for _, d := range m.all {
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
	r.points.ms.MoveAndAppendTo(out)
}
