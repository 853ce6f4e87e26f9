package emit

import (
	"slices"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

// generatedInfo is what metadata.MetricsInfo says of a metric.
type generatedInfo = struct {
	Name       string
	Attributes []string
}

// metric is one metric's descriptor. Every metric is written without the
// generated MetricsBuilder, whose re-aggregation scans the metric's points
// for equal attributes at every point: quadratic in points. A metric that
// keeps every attribute has unique points within a scrape, nothing to
// re-aggregate: it is written directly. A metric whose attributes the user
// reduced is folded by the remaining attributes through a map (reduce.go),
// with the builder's aggregation strategies. Both write the description,
// unit and type the builder writes (see describeAll).
type metric struct {
	id     int
	name   string
	keys   []string // the attributes, in the generated order
	kept   []bool   // by key: the user kept it
	on     bool
	direct bool // on, and every attribute kept
	// strategy folds the points whose kept attributes are equal: one of
	// metadata.AggregationStrategy....
	strategy string
	// everyPair: one point per pair with an end offset, so a chunk's
	// points are allocated for every pair up front.
	everyPair bool

	description, unit string
	sum, monotonic    bool
	temporality       pmetric.AggregationTemporality
	// probe records a point of zeros, from which describeAll reads what the
	// builder writes.
	probe func(*metadata.MetricsBuilder)
}

type value interface{ int64 | float64 }

type builder = metadata.MetricsBuilder

// The Record... methods of the builder, by the attributes they take: each
// descriptor probes its metric with one (describeAll).
type (
	recordPair[V value]      = func(*builder, pcommon.Timestamp, V, string, string, int64)
	recordPairLabel[V value] = func(*builder, pcommon.Timestamp, V, string, string, int64, string)
	recordPartition[V value] = func(*builder, pcommon.Timestamp, V, string, int64)
	record1[V value]         = func(*builder, pcommon.Timestamp, V, string)
	record2[V value]         = func(*builder, pcommon.Timestamp, V, string, string)
	record3[V value]         = func(*builder, pcommon.Timestamp, V, string, string, string)
	record4[V value]         = func(*builder, pcommon.Timestamp, V, string, string, string, string)
)

// The descriptors, by the attributes their points carry.
type (
	// pairMetric's points carry group, topic and partition.
	pairMetric[V value] struct {
		*metric
	}
	// pairLabelMetric's points carry a pair's attributes and one more.
	pairLabelMetric[V value] struct {
		*metric
	}
	// partitionMetric's points carry topic and partition.
	partitionMetric[V value] struct {
		*metric
	}
	// labelMetric1, 2, 3 and 4 carry that many string attributes.
	labelMetric1[V value] struct {
		*metric
	}
	labelMetric2[V value] struct {
		*metric
	}
	labelMetric3[V value] struct {
		*metric
	}
	labelMetric4[V value] struct {
		*metric
	}
)

// add describes a metric from its generated info and configuration.
func (m *metrics) add(info generatedInfo, enabled bool, kept []string, strategy string, probe func(*builder)) *metric {
	d := &metric{
		id:       len(m.all),
		name:     info.Name,
		keys:     info.Attributes,
		kept:     make([]bool, len(info.Attributes)),
		on:       enabled,
		strategy: strategy,
		probe:    probe,
	}
	for i, k := range info.Attributes {
		d.kept[i] = slices.Contains(kept, k)
	}
	d.direct = enabled && !slices.Contains(d.kept, false)
	m.all = append(m.all, d)
	return d
}

func keys[K ~string](kept []K) []string {
	out := make([]string, len(kept))
	for i, k := range kept {
		out[i] = string(k)
	}
	return out
}

func pairOf[V value, K ~string](m *metrics, info generatedInfo, enabled bool, kept []K, strategy string, record recordPair[V], everyPair bool) pairMetric[V] {
	d := m.add(info, enabled, keys(kept), strategy, func(b *builder) { record(b, 0, 0, "", "", 0) })
	d.everyPair = everyPair
	return pairMetric[V]{d}
}

func pairLabelOf[V value, K ~string](m *metrics, info generatedInfo, enabled bool, kept []K, strategy string, record recordPairLabel[V]) pairLabelMetric[V] {
	return pairLabelMetric[V]{m.add(info, enabled, keys(kept), strategy, func(b *builder) { record(b, 0, 0, "", "", 0, "") })}
}

func partitionOf[V value, K ~string](m *metrics, info generatedInfo, enabled bool, kept []K, strategy string, record recordPartition[V]) partitionMetric[V] {
	return partitionMetric[V]{m.add(info, enabled, keys(kept), strategy, func(b *builder) { record(b, 0, 0, "", 0) })}
}

func label1Of[V value, K ~string](m *metrics, info generatedInfo, enabled bool, kept []K, strategy string, record record1[V]) labelMetric1[V] {
	return labelMetric1[V]{m.add(info, enabled, keys(kept), strategy, func(b *builder) { record(b, 0, 0, "") })}
}

func label2Of[V value, K ~string](m *metrics, info generatedInfo, enabled bool, kept []K, strategy string, record record2[V]) labelMetric2[V] {
	return labelMetric2[V]{m.add(info, enabled, keys(kept), strategy, func(b *builder) { record(b, 0, 0, "", "") })}
}

func label3Of[V value, K ~string](m *metrics, info generatedInfo, enabled bool, kept []K, strategy string, record record3[V]) labelMetric3[V] {
	return labelMetric3[V]{m.add(info, enabled, keys(kept), strategy, func(b *builder) { record(b, 0, 0, "", "", "") })}
}

func label4Of[V value, K ~string](m *metrics, info generatedInfo, enabled bool, kept []K, strategy string, record record4[V]) labelMetric4[V] {
	return labelMetric4[V]{m.add(info, enabled, keys(kept), strategy, func(b *builder) { record(b, 0, 0, "", "", "", "") })}
}

// describeAll reads the description, unit and type of every metric from
// what the generated builder writes for it, so that metadata.yaml stays the
// one source of both paths' metadata.
func (m *metrics) describeAll(settings receiver.Settings) error {
	enabled := map[string]any{}
	for _, d := range m.all {
		enabled[d.name] = map[string]any{"enabled": true}
	}
	cfg := metadata.NewDefaultMetricsBuilderConfig()
	if err := confmap.NewFromStringMap(map[string]any{"metrics": enabled}).Unmarshal(&cfg); err != nil {
		return err
	}
	probe := metadata.NewMetricsBuilder(cfg, settings)
	for _, d := range m.all {
		d.probe(probe)
	}
	byName := map[string]pmetric.Metric{}
	EachMetric(probe.Emit(), func(x pmetric.Metric) { byName[x.Name()] = x })
	for _, d := range m.all {
		x := byName[d.name]
		d.description, d.unit = x.Description(), x.Unit()
		if x.Type() == pmetric.MetricTypeSum {
			d.sum, d.monotonic, d.temporality = true, x.Sum().IsMonotonic(), x.Sum().AggregationTemporality()
		}
	}
	return nil
}

// EachMetric calls fn with every metric of md, in order.
func EachMetric(md pmetric.Metrics, fn func(pmetric.Metric)) {
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				fn(ms.At(k))
			}
		}
	}
}

// section is metrics written directly, each created at its first point.
type section struct {
	ms    pmetric.MetricSlice
	slots []pmetric.NumberDataPointSlice // by metric id
	made  []bool
}

func newSection(m *metrics) *section {
	return &section{ms: pmetric.NewMetricSlice(), slots: make([]pmetric.NumberDataPointSlice, len(m.all)), made: make([]bool, len(m.all))}
}

// points returns d's points, creating the metric with room for capacity.
func (s *section) points(d *metric, capacity int) pmetric.NumberDataPointSlice {
	if s.made[d.id] {
		return s.slots[d.id]
	}
	x := s.ms.AppendEmpty()
	x.SetName(d.name)
	x.SetDescription(d.description)
	x.SetUnit(d.unit)
	var dps pmetric.NumberDataPointSlice
	if d.sum {
		sum := x.SetEmptySum()
		sum.SetIsMonotonic(d.monotonic)
		sum.SetAggregationTemporality(d.temporality)
		dps = sum.DataPoints()
	} else {
		dps = x.SetEmptyGauge().DataPoints()
	}
	dps.EnsureCapacity(capacity)
	s.slots[d.id], s.made[d.id] = dps, true
	return dps
}

// point appends a point of d with its value (and, for a sum, its start),
// returning its attributes, which have room for all of d's.
func point[V value](s *section, d *metric, capacity int, start, ts pcommon.Timestamp, v V) pcommon.Map {
	dp := s.points(d, capacity).AppendEmpty()
	// OTLP ignores a gauge point's start time (metrics.proto, Gauge): it
	// would be 9 bytes of every per-pair point for nobody to read.
	if d.sum {
		dp.SetStartTimestamp(start)
	}
	dp.SetTimestamp(ts)
	switch v := any(v).(type) {
	case int64:
		dp.SetIntValue(v)
	case float64:
		dp.SetDoubleValue(v)
	}
	attrs := dp.Attributes()
	attrs.EnsureCapacity(len(d.keys))
	return attrs
}

// putStrings puts values under d's keys, in order, from the first.
func putStrings(attrs pcommon.Map, d *metric, values ...string) {
	for i, v := range values {
		attrs.PutStr(d.keys[i], v)
	}
}
