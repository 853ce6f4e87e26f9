package emit

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

// shareMetrics are the kafka.share_group metrics.
type shareMetrics struct {
	// Per (share group, topic, partition).
	lag, startOffset sharePairMetric[int64]
	timeLag          sharePairMetric[float64]
	// Per share group, and per (share group, topic).
	members    labelMetric1[int64]
	state      labelMetric2[int64]
	lagSum     labelMetric2[int64]
	timeLagMax labelMetric2[float64]
}

// sharePairMetric's points carry a share group, topic and partition.
type sharePairMetric[V value] struct {
	*metric
}

func newShareMetrics(m *metrics, cfg metadata.MetricsConfig) shareMetrics {
	info := metadata.MetricsInfo
	type mb = metadata.MetricsBuilder
	return shareMetrics{
		lag:         sharePairMetric[int64]{pairOf(m, info.KafkaShareGroupLag, cfg.KafkaShareGroupLag.Enabled, cfg.KafkaShareGroupLag.EnabledAttributes, cfg.KafkaShareGroupLag.AggregationStrategy, (*mb).RecordKafkaShareGroupLagDataPoint, false).metric},
		startOffset: sharePairMetric[int64]{pairOf(m, info.KafkaShareGroupStartOffset, cfg.KafkaShareGroupStartOffset.Enabled, cfg.KafkaShareGroupStartOffset.EnabledAttributes, cfg.KafkaShareGroupStartOffset.AggregationStrategy, (*mb).RecordKafkaShareGroupStartOffsetDataPoint, false).metric},
		timeLag:     sharePairMetric[float64]{pairOf(m, info.KafkaShareGroupTimeLag, cfg.KafkaShareGroupTimeLag.Enabled, cfg.KafkaShareGroupTimeLag.EnabledAttributes, cfg.KafkaShareGroupTimeLag.AggregationStrategy, (*mb).RecordKafkaShareGroupTimeLagDataPoint, false).metric},
		members:     label1Of(m, info.KafkaShareGroupMembers, cfg.KafkaShareGroupMembers.Enabled, cfg.KafkaShareGroupMembers.EnabledAttributes, cfg.KafkaShareGroupMembers.AggregationStrategy, (*mb).RecordKafkaShareGroupMembersDataPoint),
		state: label2Of(m, info.KafkaShareGroupState, cfg.KafkaShareGroupState.Enabled, cfg.KafkaShareGroupState.EnabledAttributes, cfg.KafkaShareGroupState.AggregationStrategy,
			func(b *mb, ts pcommon.Timestamp, v int64, group, state string) {
				b.RecordKafkaShareGroupStateDataPoint(ts, v, group, metadata.MapAttributeState[state])
			}),
		lagSum:     label2Of(m, info.KafkaShareGroupLagSum, cfg.KafkaShareGroupLagSum.Enabled, cfg.KafkaShareGroupLagSum.EnabledAttributes, cfg.KafkaShareGroupLagSum.AggregationStrategy, (*mb).RecordKafkaShareGroupLagSumDataPoint),
		timeLagMax: label2Of(m, info.KafkaShareGroupTimeLagMax, cfg.KafkaShareGroupTimeLagMax.Enabled, cfg.KafkaShareGroupTimeLagMax.EnabledAttributes, cfg.KafkaShareGroupTimeLagMax.AggregationStrategy, (*mb).RecordKafkaShareGroupTimeLagMaxDataPoint),
	}
}

// SharePairs writes one share group's per-partition gauges: start offset,
// lag and time lag, each where it is known.
func (s *Scrape) SharePairs(lags []lag.SharePartitionLag) {
	m := &s.w.m.share
	for i := range lags {
		if !s.pairs.proceed() {
			return
		}
		sl := &lags[i]
		chunk := s.pairs.next()
		// What the pair has no value of, a point reduced over pairs that
		// would fold it in is withheld from, as a consumer group's pair's.
		if sl.StartOffset >= 0 {
			m.startOffset.write(s, chunk, sl, sl.StartOffset)
		} else if sl.Unread {
			m.startOffset.withhold(s, sl)
		}
		if sl.HasLag {
			m.lag.write(s, chunk, sl, sl.Lag)
		} else {
			m.lag.withhold(s, sl)
		}
		if sl.HasTimeLag {
			m.timeLag.write(s, chunk, sl, sl.TimeLag)
		} else {
			m.timeLag.withhold(s, sl)
		}
	}
}

// ShareGroup writes one described share group's state and members.
func (s *Scrape) ShareGroup(group string, d kafka.ShareGroupDescription) {
	if !s.writing() {
		return
	}
	m := &s.w.m.share
	for _, st := range kafka.ShareGroupStates {
		m.state.write(s, oneIf(st == d.State), group, st.String())
	}
	if d.State == kafka.GroupStateUnknown {
		return // the members are unknown, not absent
	}
	m.members.write(s, s.w.start, int64(len(d.Members)), group)
}

// ShareAggregates writes the per-(share group, topic) sum and maximum.
func (s *Scrape) ShareAggregates(aggs []lag.TopicLag) {
	if !s.writing() {
		return
	}
	m := &s.w.m.share
	for _, agg := range aggs {
		if agg.HasLag {
			m.lagSum.write(s, agg.LagSum, agg.Group, agg.Topic)
		} else {
			m.lagSum.withhold(s, agg.Group, agg.Topic)
		}
		if agg.HasTimeLag {
			m.timeLagMax.write(s, agg.TimeLagMax, agg.Group, agg.Topic)
		} else {
			m.timeLagMax.withhold(s, agg.Group, agg.Topic)
		}
	}
}

// withhold drops the reduced point of p that sl would fold into: sl has no
// value of p this scrape.
func (p sharePairMetric[V]) withhold(s *Scrape, sl *lag.SharePartitionLag) {
	if p.on && !p.direct {
		s.reduced.withhold(p.metric, shareValues(sl))
	}
}

// shareValues are a share pair's group, topic and partition.
func shareValues(sl *lag.SharePartitionLag) attrValues {
	return attrValues{strs: [6]string{sl.Group, sl.Topic}, num: int64(sl.Partition), numAt: 2}
}

// write writes one share pair's point of p.
func (p sharePairMetric[V]) write(s *Scrape, chunk *section, sl *lag.SharePartitionLag, v V) {
	switch {
	case p.direct:
		attrs := point(chunk, p.metric, s.pairs.capacityOf(p.metric), s.w.start, s.ts, v)
		putStrings(attrs, p.metric, sl.Group, sl.Topic)
		attrs.PutInt(p.keys[2], int64(sl.Partition))
	case p.on:
		reduce(s.reduced, p.metric, s.w.start, s.ts, v, shareValues(sl))
	}
}
