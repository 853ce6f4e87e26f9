package emit

import (
	"errors"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/groupview"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/progress"
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
	// reduced holds the metrics whose attributes the user reduced.
	reduced *reductions
}

// Pairs writes one group's per-pair gauges: offset, lag, stable lag, lost
// messages and time lag.
func (s *Scrape) Pairs(lags []lag.PartitionLag) {
	m := s.w.m
	for i := range lags {
		if !s.pairs.proceed() {
			return
		}
		pl := &lags[i]
		chunk := s.pairs.next()
		if pl.CommitUnread {
			m.offset.withhold(s, pl)
		} else {
			m.offset.write(s, chunk, pl, pl.Committed)
		}
		if !pl.HasEnd {
			// The pair has none of these: a point reduced over pairs
			// that would fold it in is withheld.
			m.lag.withhold(s, pl)
			m.stableLag.withhold(s, pl)
			m.lostMessages.withhold(s, pl)
			m.timeLag.withhold(s, pl)
			continue
		}
		m.lag.write(s, chunk, pl, pl.Lag)
		if pl.HasStableLag {
			m.stableLag.write(s, chunk, pl, pl.StableLag)
		} else {
			m.stableLag.withhold(s, pl)
		}
		if pl.Lost > 0 {
			m.lostMessages.write(s, chunk, pl, pl.Lost)
		}
		if pl.HasTimeLag {
			m.timeLag.write(s, chunk, pl, pl.TimeLag)
		} else {
			m.timeLag.withhold(s, pl)
			s.pairs.omitted++
		}
	}
}

// PartitionStatuses writes kafka.consumer_group.partition_status of one
// group's pairs, a point per status, 1 for the pair's; statuses is in the
// order of lags.
func (s *Scrape) PartitionStatuses(lags []lag.PartitionLag, statuses []groupview.Status) {
	if !s.writing() {
		return
	}
	d := s.w.m.partitionStatus
	if !d.on {
		return
	}
	chunk := s.pairs.current()
	for i := range lags {
		if statuses[i] == groupview.StatusUnknown {
			continue // nothing judged it: no status rather than OK
		}
		for _, st := range groupview.Statuses {
			d.write(s, chunk, &lags[i], oneIf(st == statuses[i]), st.String())
		}
	}
}

// PartitionDrains writes kafka.consumer_group.partition_time_to_drain of
// one group's pairs that have one; parts is in the order of lags.
func (s *Scrape) PartitionDrains(lags []lag.PartitionLag, parts []progress.Partition) {
	if !s.writing() {
		return
	}
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
func (s *Scrape) GroupHealth(g groupview.GroupHealth) {
	if !s.writing() {
		return
	}
	m := s.w.m
	// A count that started after the receiver did carries its own start: a
	// group first seen later, or forgotten and seen again, counts from 0,
	// which under the receiver's start a backend reads as a counter gone
	// backwards.
	since := s.w.start
	// Folded into a point without the group attribute, the counts start
	// at the latest restart.
	if g.RebalancesSince > 0 {
		since = pcommon.Timestamp(g.RebalancesSince)
	}
	m.rebalances.write(s, since, g.Rebalances, g.Group)
	if g.StatusKnown {
		for _, st := range groupview.Statuses {
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

// GroupsUnread withholds from the scrape every point of the consumer-group
// metrics (share: the share-group metrics) whose group attribute was
// removed: some group's offsets were not read, so each such point may lack
// that group's part, and which ones it would have folded into is not known.
func (s *Scrape) GroupsUnread(share bool) {
	s.reduced.withholdAcrossGroups(s.w.m, share)
}

// Aggregates writes the per-(group, topic) sums and maxima.
func (s *Scrape) Aggregates(aggs []lag.TopicLag) {
	if !s.writing() {
		return
	}
	m := s.w.m
	for _, agg := range aggs {
		if agg.HasLag {
			m.lagSum.write(s, agg.LagSum, agg.Group, agg.Topic)
			m.lagMax.write(s, agg.LagMax, agg.Group, agg.Topic)
		} else {
			m.lagSum.withhold(s, agg.Group, agg.Topic)
			m.lagMax.withhold(s, agg.Group, agg.Topic)
		}
		if agg.HasTimeLag {
			m.timeLagMax.write(s, agg.TimeLagMax, agg.Group, agg.Topic)
		} else {
			m.timeLagMax.withhold(s, agg.Group, agg.Topic)
		}
	}
}

// GroupProgress writes one group's per-(group, topic) progress: what is
// not known is omitted, never written as 0.
func (s *Scrape) GroupProgress(topics []progress.Topic) {
	if !s.writing() {
		return
	}
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
func (s *Scrape) Partitions(parts []lag.PartitionGauge) {
	if !s.writing() {
		return
	}
	m := s.w.m
	for i := range parts {
		g := &parts[i]
		p := g.Partition
		if !p.HasEnd {
			m.currentOffset.withhold(s, p)
			m.oldestOffset.withhold(s, p)
			m.partitionProduceRate.withhold(s, p)
			continue
		}
		m.currentOffset.write(s, p, len(parts), p.End)
		if p.HasStart {
			m.oldestOffset.write(s, p, len(parts), p.Start)
		} else {
			m.oldestOffset.withhold(s, p)
		}
		if g.HasProduceRate {
			m.partitionProduceRate.write(s, p, len(parts), g.ProduceRate)
		} else {
			m.partitionProduceRate.withhold(s, p)
		}
	}
}

// TopicProduceRates writes kafka.topic.produce_rate.
func (s *Scrape) TopicProduceRates(rates []lag.TopicRate) {
	if !s.writing() {
		return
	}
	for _, r := range rates {
		s.w.m.topicProduceRate.write(s, s.w.start, r.Rate, r.Topic)
	}
}

// Finish sends the last chunk of pairs, or returns every point of the
// scrape when nothing was pushed. The error says what the next consumer
// refused, or that the scrape's context ended before everything was
// written: then what was written is returned but for the metrics folded
// over groups or partitions, whose points would be partial sums.
func (s *Scrape) Finish() (pmetric.Metrics, error) {
	direct := pmetric.NewMetricSlice()
	err := s.pairs.finish(direct)
	s.groups.ms.MoveAndAppendTo(direct)
	s.partitions.ms.MoveAndAppendTo(direct)
	if s.pairs.stopped == nil {
		s.reduced.finish(s.w.m, direct)
	}
	return s.w.withDirect(pmetric.NewMetrics(), direct), errors.Join(s.pairs.stopped, err)
}

// writing says whether the scrape still writes: not once its context ended.
func (s *Scrape) writing() bool { return s.pairs.stopped == nil }

func (l labelMetric1[V]) write(s *Scrape, start pcommon.Timestamp, v V, a string) {
	switch {
	case l.direct:
		putStrings(point(s.groups, l.metric, 0, start, s.ts, v), l.metric, a)
	case l.on:
		reduce(s.reduced, l.metric, start, s.ts, v, stringValues(a))
	}
}

func (l labelMetric2[V]) write(s *Scrape, v V, a, b string) {
	switch {
	case l.direct:
		putStrings(point(s.groups, l.metric, 0, s.w.start, s.ts, v), l.metric, a, b)
	case l.on:
		reduce(s.reduced, l.metric, s.w.start, s.ts, v, stringValues(a, b))
	}
}

// withhold drops the reduced point of l that (a, b) would fold into: it has
// no value this scrape.
func (l labelMetric2[V]) withhold(s *Scrape, a, b string) {
	if l.on && !l.direct {
		s.reduced.withhold(l.metric, stringValues(a, b))
	}
}

func (l labelMetric3[V]) write(s *Scrape, v V, a, b, c string) {
	switch {
	case l.direct:
		putStrings(point(s.groups, l.metric, 0, s.w.start, s.ts, v), l.metric, a, b, c)
	case l.on:
		reduce(s.reduced, l.metric, s.w.start, s.ts, v, stringValues(a, b, c))
	}
}

func (l labelMetric4[V]) write(s *Scrape, v V, a, b, c, d string) {
	switch {
	case l.direct:
		putStrings(point(s.groups, l.metric, 0, s.w.start, s.ts, v), l.metric, a, b, c, d)
	case l.on:
		reduce(s.reduced, l.metric, s.w.start, s.ts, v, stringValues(a, b, c, d))
	}
}

func oneIf(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
