package emit

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/health"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/progress"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/retention"
)

// Scrape is one scrape's metrics being written. Every point carries the
// scrape's instant (the end-offset read).
type Scrape struct {
	w     *Writer
	ts    pcommon.Timestamp
	pairs pairChunks
	// groups holds the per-group, per-(group, topic) and per-topic metrics
	// written directly; partitions the per-partition ones.
	groups, partitions *section
	// rebalancesRestarted is the latest start of a group's rebalance count
	// folded by the builder into a point without the group attribute.
	rebalancesRestarted pcommon.Timestamp
	// margins is a buffer of RetentionMargins'.
	margins []retention.TopicMargin
}

// Pairs writes one group's per-pair gauges: offset, lag, stable lag, lost
// messages and time lag.
func (s *Scrape) Pairs(lags []lag.PartitionLag) {
	m := s.w.m
	for i := range lags {
		pl := &lags[i]
		chunk := s.pairs.next()
		m.offset.write(s, chunk, pl, pl.Committed)
		if !pl.HasEnd {
			continue
		}
		m.lag.write(s, chunk, pl, pl.Lag)
		if pl.HasStableLag {
			m.stableLag.write(s, chunk, pl, pl.StableLag)
		}
		if pl.Lost > 0 {
			m.lostMessages.write(s, chunk, pl, pl.Lost)
		}
		if pl.HasTimeLag {
			m.timeLag.write(s, chunk, pl, pl.TimeLag)
		} else {
			s.pairs.omitted++
		}
	}
}

// PartitionStatuses writes kafka.consumer_group.partition_status of one
// group's pairs, a point per status, 1 for the pair's; statuses is in the
// order of lags.
func (s *Scrape) PartitionStatuses(lags []lag.PartitionLag, statuses []health.Status) {
	d := s.w.m.partitionStatus
	if !d.on {
		return
	}
	chunk := s.pairs.current()
	for i := range lags {
		if statuses[i] == health.StatusUnknown {
			continue // nothing judged it: no status rather than OK
		}
		for _, st := range health.Statuses {
			d.write(s, chunk, &lags[i], oneIf(st == statuses[i]), st.String())
		}
	}
}

// PartitionDrains writes kafka.consumer_group.partition_time_to_drain of
// one group's pairs that have one; parts is in the order of lags.
func (s *Scrape) PartitionDrains(lags []lag.PartitionLag, parts []progress.Partition) {
	d := s.w.m.partitionTimeToDrain
	if !d.on {
		return
	}
	for i := range lags {
		if parts[i].HasDrain {
			d.write(s, s.pairs.current(), &lags[i], parts[i].Drain)
		}
	}
}

// GroupHealth writes one group's health metrics.
func (s *Scrape) GroupHealth(g health.GroupHealth) {
	m := s.w.m
	// A count that started after the receiver did carries its own start: a
	// group first seen later, or forgotten and seen again, counts from 0,
	// which under the receiver's start a backend reads as a counter gone
	// backwards.
	since := s.w.start
	if g.RebalancesSince > 0 {
		since = pcommon.Timestamp(g.RebalancesSince)
		if m.rebalances.on && !m.rebalances.direct {
			s.rebalancesRestarted = max(s.rebalancesRestarted, since)
		}
	}
	m.rebalances.write(s, since, g.Rebalances, g.Group)
	if g.StatusKnown {
		for _, st := range health.Statuses {
			m.status.write(s, oneIf(st == g.Status), g.Group, st.String())
		}
	}
	if !g.Described {
		return
	}
	for _, st := range kafka.GroupStates {
		m.state.write(s, oneIf(st == g.Description.State), g.Group, st.String())
	}
	if g.Description.State == kafka.GroupStateUnknown {
		return // the members are unknown, not absent
	}
	m.members.write(s, int64(len(g.Description.Members)), g.Group, g.Protocol)
	for _, a := range g.Assigned {
		m.assignedPartitions.write(s, a.Partitions, g.Group, a.ClientID, a.Host, a.InstanceID)
	}
	s.PartitionOwners(g)
}

// Aggregates writes the per-(group, topic) sums and maxima.
func (s *Scrape) Aggregates(aggs []lag.TopicLag) {
	m := s.w.m
	for _, agg := range aggs {
		if agg.HasLag {
			m.lagSum.write(s, agg.LagSum, agg.Group, agg.Topic)
			m.lagMax.write(s, agg.LagMax, agg.Group, agg.Topic)
		}
		if agg.HasTimeLag {
			m.timeLagMax.write(s, agg.TimeLagMax, agg.Group, agg.Topic)
		}
	}
}

// GroupProgress writes one group's per-(group, topic) progress: what is
// not known is omitted, never written as 0.
func (s *Scrape) GroupProgress(topics []progress.Topic) {
	m := s.w.m
	for i := range topics {
		tp := &topics[i]
		if tp.HasConsumeRate {
			m.consumeRate.write(s, tp.ConsumeRate, tp.Group, tp.Topic)
		}
		if tp.HasTrend {
			m.lagTrend.write(s, tp.Trend, tp.Group, tp.Topic)
		}
		if tp.HasDrain {
			m.timeToDrain.write(s, tp.Drain, tp.Group, tp.Topic)
		}
		if tp.HasStuck {
			m.stuckTime.write(s, tp.Stuck, tp.Group, tp.Topic)
		}
	}
}

// Partitions writes the per-partition gauges, in the order of parts; a
// partition whose end offset was not read has none.
func (s *Scrape) Partitions(parts []lag.Partition) {
	m := s.w.m
	for i := range parts {
		p := &parts[i]
		if !p.HasEnd {
			continue
		}
		m.currentOffset.write(s, p, len(parts), p.End)
		if p.HasStart {
			m.oldestOffset.write(s, p, len(parts), p.Start)
		}
		if p.HasProduceRate {
			m.partitionProduceRate.write(s, p, len(parts), p.ProduceRate)
		}
	}
}

// TopicProduceRates writes kafka.topic.produce_rate.
func (s *Scrape) TopicProduceRates(rates []lag.TopicRate) {
	for _, r := range rates {
		s.w.m.topicProduceRate.write(s, s.w.start, r.Rate, r.Topic)
	}
}

// Finish sends the last chunk of pairs, or returns every point of the
// scrape when nothing was pushed. The error says what the next consumer
// refused.
func (s *Scrape) Finish() (pmetric.Metrics, error) {
	direct := pmetric.NewMetricSlice()
	err := s.pairs.finish(direct)
	s.groups.ms.MoveAndAppendTo(direct)
	s.partitions.ms.MoveAndAppendTo(direct)
	s.w.mb.EmitForResource(metadata.WithResource(s.w.resource))
	md := s.w.mb.Emit()
	if s.rebalancesRestarted > 0 {
		// The one point summing every group starts at the latest restart.
		EachMetric(md, func(x pmetric.Metric) {
			if x.Name() != s.w.m.rebalances.name {
				return
			}
			dps := x.Sum().DataPoints()
			for i := range dps.Len() {
				dps.At(i).SetStartTimestamp(s.rebalancesRestarted)
			}
		})
	}
	return s.w.withDirect(md, direct), err
}

func (l labelMetric1[V]) write(s *Scrape, start pcommon.Timestamp, v V, a string) {
	switch {
	case l.direct:
		putStrings(point(s.groups, l.metric, 0, start, s.ts, v), l.metric, a)
	case l.on:
		l.record(s.w.mb, s.ts, v, a)
	}
}

func (l labelMetric2[V]) write(s *Scrape, v V, a, b string) {
	switch {
	case l.direct:
		putStrings(point(s.groups, l.metric, 0, s.w.start, s.ts, v), l.metric, a, b)
	case l.on:
		l.record(s.w.mb, s.ts, v, a, b)
	}
}

func (l labelMetric4[V]) write(s *Scrape, v V, a, b, c, d string) {
	switch {
	case l.direct:
		putStrings(point(s.groups, l.metric, 0, s.w.start, s.ts, v), l.metric, a, b, c, d)
	case l.on:
		l.record(s.w.mb, s.ts, v, a, b, c, d)
	}
}

func oneIf(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
