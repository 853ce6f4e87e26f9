package kafkatimelagreceiver

// The per-pair and per-partition gauges are built directly into a
// pmetric.MetricSlice, not through the generated MetricsBuilder: mdatagen's
// recordDataPoint searches every point already recorded for the metric for
// one with equal attributes (to reaggregate), which is quadratic in points:
// 4.4 s a scrape at 10,000 pairs, minutes at 100,000. (group, topic,
// partition) is unique within a scrape, so there is nothing to reaggregate.
// Names, descriptions and units must match metadata.yaml; a test compares
// them with the builder's. A metric whose attributes the user reduced (the
// generated `attributes` setting) does need re-aggregation, so it keeps going
// through the builder.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

func appendGauge(ms pmetric.MetricSlice, enabled bool, name, description, unit string, capacity int) (pmetric.NumberDataPointSlice, bool) {
	if !enabled {
		return pmetric.NumberDataPointSlice{}, false
	}
	m := ms.AppendEmpty()
	m.SetName(name)
	m.SetDescription(description)
	m.SetUnit(unit)
	dps := m.SetEmptyGauge().DataPoints()
	dps.EnsureCapacity(capacity)
	return dps, true
}

// pairPoint appends a point with the pair's attributes and room for
// attributeCapacity of them in all.
func pairPoint(dps pmetric.NumberDataPointSlice, start, ts pcommon.Timestamp, group, topic string, partition int64, attributeCapacity int) pmetric.NumberDataPoint {
	dp := dps.AppendEmpty()
	dp.SetStartTimestamp(start)
	dp.SetTimestamp(ts)
	attrs := dp.Attributes()
	attrs.EnsureCapacity(attributeCapacity)
	attrs.PutStr("group", group)
	attrs.PutStr("topic", topic)
	attrs.PutInt("partition", partition)
	return dp
}

func partitionPoint(dps pmetric.NumberDataPointSlice, start, ts pcommon.Timestamp, tp topicPartition, value int64) {
	dp := dps.AppendEmpty()
	dp.SetStartTimestamp(start)
	dp.SetTimestamp(ts)
	attrs := dp.Attributes()
	attrs.EnsureCapacity(2)
	attrs.PutStr("topic", tp.topic)
	attrs.PutInt("partition", int64(tp.partition))
	dp.SetIntValue(value)
}

// pushFunc hands one chunk of a scrape's metrics to the next consumer.
type pushFunc func(context.Context, pmetric.Metrics) error

// chunkPairs is how many (group, partition) pairs go into one pushed chunk:
// about 15,000 points, 1.2 MB of OTLP.
const chunkPairs = 5000

// pairEmitter builds the per-pair gauges of a scrape. A scrape of more than
// chunkPairs pairs, when a consumer is wired (push), is sent in chunks as it
// is built, so that the collector holds one chunk's points at a time rather
// than every point of the scrape: at 100,000 pairs that is 300,000 points
// and ~90 MB of pdata. Smaller scrapes, and scrapes without push (tests),
// come out as one piece with the rest of the scrape.
type pairEmitter struct {
	s         *timeLagScraper
	ctx       context.Context
	ts, start pcommon.Timestamp
	push      pushFunc // nil: everything in one chunk, returned by finish
	capacity  int      // pairs of the current chunk to allocate for

	// on: built here; viaBuilder: the user reduced the attributes, so the
	// MetricsBuilder re-aggregates.
	offsetOn, lagOn, lostOn, timeLagOn, statusOn                       bool
	offsetViaBuilder, lagViaBuilder, lostViaBuilder, timeLagViaBuilder bool
	statusViaBuilder                                                   bool

	started                                bool
	chunk                                  pmetric.MetricSlice
	offset, lag, lost, timeLag, partStatus pmetric.NumberDataPointSlice
	pairs                                  int // in the current chunk
	omitted                                int // pairs without a time lag estimate
	refusedPoints, sentPoints              int
	errs                                   []error
}

func (s *timeLagScraper) newPairEmitter(ctx context.Context, snap *snapshot, totalPairs int) *pairEmitter {
	m := s.cfg.Metrics
	const pairAttributes = 3
	e := &pairEmitter{s: s, ctx: ctx, ts: pcommon.Timestamp(snap.at), start: s.startTime, capacity: totalPairs}
	if s.push != nil && totalPairs > chunkPairs {
		e.push = s.push
		e.capacity = chunkPairs
	}
	direct := func(enabled bool, attributes int) (on, viaBuilder bool) {
		return enabled && attributes == pairAttributes, enabled && attributes != pairAttributes
	}
	e.offsetOn, e.offsetViaBuilder = direct(m.KafkaConsumerGroupOffset.Enabled, len(m.KafkaConsumerGroupOffset.EnabledAttributes))
	e.lagOn, e.lagViaBuilder = direct(m.KafkaConsumerGroupLag.Enabled, len(m.KafkaConsumerGroupLag.EnabledAttributes))
	e.lostOn, e.lostViaBuilder = direct(m.KafkaConsumerGroupLostMessages.Enabled, len(m.KafkaConsumerGroupLostMessages.EnabledAttributes))
	e.timeLagOn, e.timeLagViaBuilder = direct(m.KafkaConsumerGroupTimeLag.Enabled, len(m.KafkaConsumerGroupTimeLag.EnabledAttributes))
	// partition_status has the status attribute besides the pair's three.
	e.statusOn, e.statusViaBuilder = direct(m.KafkaConsumerGroupPartitionStatus.Enabled, len(m.KafkaConsumerGroupPartitionStatus.EnabledAttributes)-1)
	return e
}

func (e *pairEmitter) startChunk() {
	e.started = true
	e.chunk = pmetric.NewMetricSlice()
	n := e.capacity
	e.offset, _ = appendGauge(e.chunk, e.offsetOn, "kafka.consumer_group.offset", "Committed offset of the group on the partition.", "{offset}", n)
	e.lag, _ = appendGauge(e.chunk, e.lagOn, "kafka.consumer_group.lag", "Offset lag of the group on the partition, max(0, end offset - committed offset).", "{message}", n)
	e.lost, _ = appendGauge(e.chunk, e.lostOn, "kafka.consumer_group.lost_messages", "Records the group never consumed because retention deleted them: log start offset minus committed offset, when positive.", "{message}", 0)
	e.timeLag, _ = appendGauge(e.chunk, e.timeLagOn, "kafka.consumer_group.time_lag", "Estimated time since the oldest record the group has not consumed was appended (0 when the group is caught up). Omitted when no estimate can be made.", "s", n)
	e.partStatus, _ = appendGauge(e.chunk, e.statusOn, "kafka.consumer_group.partition_status", "The group's Burrow-style status on the partition, one point per status: 1 for the current one, 0 for the others. See kafka.consumer_group.status for the rules.", "1", 0)
	e.pairs = 0
}

// add records one pair's gauges.
func (e *pairEmitter) add(pl partitionLag) {
	if !e.started {
		e.startChunk()
	} else if e.push != nil && e.pairs >= chunkPairs {
		e.send()
		e.startChunk()
	}
	e.pairs++
	ts, start, mb := e.ts, e.start, e.s.mb
	partition := int64(pl.partition)
	if e.offsetOn {
		pairPoint(e.offset, start, ts, pl.group, pl.topic, partition, 3).SetIntValue(pl.committed)
	} else if e.offsetViaBuilder {
		mb.RecordKafkaConsumerGroupOffsetDataPoint(ts, pl.committed, pl.group, pl.topic, partition)
	}
	if !pl.hasEnd {
		return
	}
	if e.lagOn {
		pairPoint(e.lag, start, ts, pl.group, pl.topic, partition, 3).SetIntValue(pl.lag)
	} else if e.lagViaBuilder {
		mb.RecordKafkaConsumerGroupLagDataPoint(ts, pl.lag, pl.group, pl.topic, partition)
	}
	if pl.lost > 0 {
		if e.lostOn {
			pairPoint(e.lost, start, ts, pl.group, pl.topic, partition, 3).SetIntValue(pl.lost)
		} else if e.lostViaBuilder {
			mb.RecordKafkaConsumerGroupLostMessagesDataPoint(ts, pl.lost, pl.group, pl.topic, partition)
		}
	}
	switch {
	case !pl.hasTimeLag:
		e.omitted++
	case e.timeLagOn:
		pairPoint(e.timeLag, start, ts, pl.group, pl.topic, partition, 3).SetDoubleValue(pl.timeLag)
	case e.timeLagViaBuilder:
		mb.RecordKafkaConsumerGroupTimeLagDataPoint(ts, pl.timeLag, pl.group, pl.topic, partition)
	}
}

// addStatus records one pair's kafka.consumer_group.partition_status: a
// point per status, 1 for st.
func (e *pairEmitter) addStatus(pl partitionLag, st healthStatus) {
	if !e.started {
		e.startChunk()
	}
	partition := int64(pl.partition)
	for _, candidate := range healthStatuses {
		if e.statusOn {
			dp := pairPoint(e.partStatus, e.start, e.ts, pl.group, pl.topic, partition, 4)
			dp.Attributes().PutStr("status", candidate.String())
			dp.SetIntValue(oneIf(candidate == st))
		} else if e.statusViaBuilder {
			e.s.mb.RecordKafkaConsumerGroupPartitionStatusDataPoint(e.ts, oneIf(candidate == st), pl.group, pl.topic, partition, metadata.MapAttributeStatus[candidate.String()])
		}
	}
}

// dropEmpty removes the chunk's gauges that got no point.
func (e *pairEmitter) dropEmpty() {
	e.chunk.RemoveIf(func(m pmetric.Metric) bool { return m.Gauge().DataPoints().Len() == 0 })
}

// send pushes the current chunk to the next consumer. A refusal (a
// memory_limiter, a full queue) is reported with the scrape's error; the
// other chunks are still sent.
func (e *pairEmitter) send() {
	e.dropEmpty()
	if e.chunk.Len() == 0 {
		return
	}
	md := e.s.withDirect(pmetric.NewMetrics(), e.chunk)
	points := md.DataPointCount()
	if err := e.push(e.ctx, md); err != nil {
		e.refusedPoints += points
		// Chunks refused for the same reason say it once.
		if !slices.ContainsFunc(e.errs, func(seen error) bool { return seen.Error() == err.Error() }) {
			e.errs = append(e.errs, err)
		}
		return
	}
	e.sentPoints += points
}

// finish sends the last chunk, or, when nothing was pushed, moves the one
// chunk into out. The error says what the next consumer refused.
func (e *pairEmitter) finish(out pmetric.MetricSlice) error {
	if e.omitted > 0 {
		e.s.logger.Debug("time lag omitted: no table point or record brackets the committed offset", zap.Int("partitions", e.omitted))
	}
	if !e.started {
		return nil
	}
	if e.push != nil {
		e.send()
	} else {
		e.dropEmpty()
		e.chunk.MoveAndAppendTo(out)
	}
	if len(e.errs) == 0 {
		return nil
	}
	return fmt.Errorf("send per-pair metrics: %d of %d points refused: %w", e.refusedPoints, e.refusedPoints+e.sentPoints, errors.Join(e.errs...))
}

// emitPartitions appends the per-partition gauges of the scrape to ms, from
// the scrape's index (already in (topic, partition) order); a partition
// whose end offset was not read has none.
func (s *timeLagScraper) emitPartitions(ms pmetric.MetricSlice, at int64, parts []indexedPartition) {
	ts := pcommon.Timestamp(at)
	start := s.startTime
	m := s.cfg.Metrics
	const partitionAttributes = 2
	from := ms.Len()
	currentDirect := len(m.KafkaPartitionCurrentOffset.EnabledAttributes) == partitionAttributes
	oldestDirect := len(m.KafkaPartitionOldestOffset.EnabledAttributes) == partitionAttributes
	current, currentOn := appendGauge(ms, currentDirect && m.KafkaPartitionCurrentOffset.Enabled, "kafka.partition.current_offset", "End offset (high watermark) of the partition.", "{offset}", len(parts))
	oldest, oldestOn := appendGauge(ms, oldestDirect && m.KafkaPartitionOldestOffset.Enabled, "kafka.partition.oldest_offset", "Log start offset (oldest available offset) of the partition.", "{offset}", len(parts))
	for i := range parts {
		p := &parts[i]
		if !p.hasEnd {
			continue
		}
		if currentOn {
			partitionPoint(current, start, ts, p.topicPartition, p.end)
		} else if !currentDirect {
			s.mb.RecordKafkaPartitionCurrentOffsetDataPoint(ts, p.end, p.topic, int64(p.partition))
		}
		if p.hasStart {
			if oldestOn {
				partitionPoint(oldest, start, ts, p.topicPartition, p.start)
			} else if !oldestDirect {
				s.mb.RecordKafkaPartitionOldestOffsetDataPoint(ts, p.start, p.topic, int64(p.partition))
			}
		}
	}
	i := 0
	ms.RemoveIf(func(x pmetric.Metric) bool {
		i++
		return i > from && x.Gauge().DataPoints().Len() == 0
	})
}

// withDirect moves the direct gauges into md's scope, creating the resource
// and scope when the builder emitted nothing.
func (s *timeLagScraper) withDirect(md pmetric.Metrics, direct pmetric.MetricSlice) pmetric.Metrics {
	if direct.Len() == 0 {
		return md
	}
	var sm pmetric.ScopeMetrics
	if md.ResourceMetrics().Len() == 0 {
		rm := md.ResourceMetrics().AppendEmpty()
		if s.cfg.ClusterAlias != "" && s.cfg.ResourceAttributes.KafkaClusterAlias.Enabled {
			rm.Resource().Attributes().PutStr("kafka.cluster.alias", s.cfg.ClusterAlias)
		}
		sm = rm.ScopeMetrics().AppendEmpty()
		sm.Scope().SetName(metadata.ScopeName)
		sm.Scope().SetVersion(s.buildVersion)
	} else {
		sm = md.ResourceMetrics().At(0).ScopeMetrics().At(0)
	}
	direct.MoveAndAppendTo(sm.Metrics())
	return md
}
