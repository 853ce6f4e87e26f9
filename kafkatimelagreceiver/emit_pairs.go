package kafkatimelagreceiver

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/health"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/progress"
)

// pairPoint appends a point with the pair's attributes and room for
// attributeCapacity of them in all.
func pairPoint(dps pmetric.NumberDataPointSlice, start, ts pcommon.Timestamp, pl *lag.PartitionLag, attributeCapacity int) pmetric.NumberDataPoint {
	dp := dps.AppendEmpty()
	dp.SetStartTimestamp(start)
	dp.SetTimestamp(ts)
	attrs := dp.Attributes()
	attrs.EnsureCapacity(attributeCapacity)
	attrs.PutStr("group", pl.Group)
	attrs.PutStr("topic", pl.Topic)
	attrs.PutInt("partition", int64(pl.Partition))
	return dp
}

// chunkPairs is how many (group, partition) pairs go into one pushed chunk:
// about 15,000 points, 1.2 MB of OTLP.
const chunkPairs = 5000

// pairEmitter builds the per-pair gauges of a scrape. A scrape of more than
// chunkPairs pairs, when a consumer is wired (push), is sent in chunks as it
// is built, so that the collector holds one chunk's points at a time rather
// than every point of the scrape. Smaller scrapes, and scrapes without push
// (tests), come out as one piece with the rest of the scrape.
type pairEmitter struct {
	w         *metricWriter
	ctx       context.Context
	ts, start pcommon.Timestamp
	push      pushFunc // nil: everything in one chunk, returned by finish
	capacity  int      // pairs of the current chunk to allocate for

	// on: built here; viaBuilder: the user reduced the attributes, so the
	// MetricsBuilder re-aggregates.
	offsetOn, lagOn, lostOn, timeLagOn, statusOn, stableOn, drainOn    bool
	offsetViaBuilder, lagViaBuilder, lostViaBuilder, timeLagViaBuilder bool
	statusViaBuilder, stableViaBuilder, drainViaBuilder                bool

	started                                               bool
	chunk                                                 pmetric.MetricSlice
	offset, lag, lost, timeLag, partStatus, stable, drain pmetric.NumberDataPointSlice
	pairs                                                 int // in the current chunk
	omitted                                               int // pairs without a time lag estimate
	refusedPoints, sentPoints                             int
	errs                                                  []error
}

func (w *metricWriter) newPairEmitter(ctx context.Context, ts pcommon.Timestamp, totalPairs int) *pairEmitter {
	m := w.metrics
	const pairAttributes = 3
	e := &pairEmitter{w: w, ctx: ctx, ts: ts, start: w.startTime, capacity: totalPairs}
	if w.push != nil && totalPairs > chunkPairs {
		e.push = w.push
		e.capacity = chunkPairs
	}
	direct := func(enabled bool, attributes int) (on, viaBuilder bool) {
		return enabled && attributes == pairAttributes, enabled && attributes != pairAttributes
	}
	e.offsetOn, e.offsetViaBuilder = direct(m.KafkaConsumerGroupOffset.Enabled, len(m.KafkaConsumerGroupOffset.EnabledAttributes))
	e.lagOn, e.lagViaBuilder = direct(m.KafkaConsumerGroupLag.Enabled, len(m.KafkaConsumerGroupLag.EnabledAttributes))
	e.lostOn, e.lostViaBuilder = direct(m.KafkaConsumerGroupLostMessages.Enabled, len(m.KafkaConsumerGroupLostMessages.EnabledAttributes))
	e.timeLagOn, e.timeLagViaBuilder = direct(m.KafkaConsumerGroupTimeLag.Enabled, len(m.KafkaConsumerGroupTimeLag.EnabledAttributes))
	e.stableOn, e.stableViaBuilder = direct(m.KafkaConsumerGroupStableLag.Enabled, len(m.KafkaConsumerGroupStableLag.EnabledAttributes))
	// partition_status has the status attribute besides the pair's three.
	e.statusOn, e.statusViaBuilder = direct(m.KafkaConsumerGroupPartitionStatus.Enabled, len(m.KafkaConsumerGroupPartitionStatus.EnabledAttributes)-1)
	e.drainOn, e.drainViaBuilder = direct(m.KafkaConsumerGroupPartitionTimeToDrain.Enabled, len(m.KafkaConsumerGroupPartitionTimeToDrain.EnabledAttributes))
	return e
}

func (e *pairEmitter) startChunk() {
	e.started = true
	e.chunk = pmetric.NewMetricSlice()
	n, info := e.capacity, metadata.MetricsInfo
	e.offset, _ = e.w.appendGauge(e.chunk, e.offsetOn, info.KafkaConsumerGroupOffset.Name, n)
	e.lag, _ = e.w.appendGauge(e.chunk, e.lagOn, info.KafkaConsumerGroupLag.Name, n)
	e.lost, _ = e.w.appendGauge(e.chunk, e.lostOn, info.KafkaConsumerGroupLostMessages.Name, 0)
	e.timeLag, _ = e.w.appendGauge(e.chunk, e.timeLagOn, info.KafkaConsumerGroupTimeLag.Name, n)
	e.partStatus, _ = e.w.appendGauge(e.chunk, e.statusOn, info.KafkaConsumerGroupPartitionStatus.Name, 0)
	e.stable, _ = e.w.appendGauge(e.chunk, e.stableOn, info.KafkaConsumerGroupStableLag.Name, n)
	e.drain, _ = e.w.appendGauge(e.chunk, e.drainOn, info.KafkaConsumerGroupPartitionTimeToDrain.Name, 0)
	e.pairs = 0
}

// add records one pair's gauges.
func (e *pairEmitter) add(pl *lag.PartitionLag) {
	if !e.started {
		e.startChunk()
	} else if e.push != nil && e.pairs >= chunkPairs {
		e.send()
		e.startChunk()
	}
	e.pairs++
	ts, start, mb := e.ts, e.start, e.w.mb
	partition := int64(pl.Partition)
	if e.offsetOn {
		pairPoint(e.offset, start, ts, pl, 3).SetIntValue(pl.Committed)
	} else if e.offsetViaBuilder {
		mb.RecordKafkaConsumerGroupOffsetDataPoint(ts, pl.Committed, pl.Group, pl.Topic, partition)
	}
	if !pl.HasEnd {
		return
	}
	if e.lagOn {
		pairPoint(e.lag, start, ts, pl, 3).SetIntValue(pl.Lag)
	} else if e.lagViaBuilder {
		mb.RecordKafkaConsumerGroupLagDataPoint(ts, pl.Lag, pl.Group, pl.Topic, partition)
	}
	if pl.HasStableLag {
		if e.stableOn {
			pairPoint(e.stable, start, ts, pl, 3).SetIntValue(pl.StableLag)
		} else if e.stableViaBuilder {
			mb.RecordKafkaConsumerGroupStableLagDataPoint(ts, pl.StableLag, pl.Group, pl.Topic, partition)
		}
	}
	if pl.Lost > 0 {
		if e.lostOn {
			pairPoint(e.lost, start, ts, pl, 3).SetIntValue(pl.Lost)
		} else if e.lostViaBuilder {
			mb.RecordKafkaConsumerGroupLostMessagesDataPoint(ts, pl.Lost, pl.Group, pl.Topic, partition)
		}
	}
	switch {
	case !pl.HasTimeLag:
		e.omitted++
	case e.timeLagOn:
		pairPoint(e.timeLag, start, ts, pl, 3).SetDoubleValue(pl.TimeLag)
	case e.timeLagViaBuilder:
		mb.RecordKafkaConsumerGroupTimeLagDataPoint(ts, pl.TimeLag, pl.Group, pl.Topic, partition)
	}
}

// addStatus records one pair's kafka.consumer_group.partition_status: a
// point per status, 1 for st.
func (e *pairEmitter) addStatus(pl *lag.PartitionLag, st health.Status) {
	if !e.started {
		e.startChunk()
	}
	partition := int64(pl.Partition)
	for _, candidate := range health.Statuses {
		if e.statusOn {
			dp := pairPoint(e.partStatus, e.start, e.ts, pl, 4)
			dp.Attributes().PutStr("status", candidate.String())
			dp.SetIntValue(oneIf(candidate == st))
		} else if e.statusViaBuilder {
			e.w.mb.RecordKafkaConsumerGroupPartitionStatusDataPoint(e.ts, oneIf(candidate == st), pl.Group, pl.Topic, partition, metadata.MapAttributeStatus[candidate.String()])
		}
	}
}

// addDrain records one pair's kafka.consumer_group.partition_time_to_drain,
// when it has one.
func (e *pairEmitter) addDrain(pl *lag.PartitionLag, p *progress.Partition) {
	if !p.HasDrain {
		return
	}
	if !e.started {
		e.startChunk()
	}
	if e.drainOn {
		pairPoint(e.drain, e.start, e.ts, pl, 3).SetDoubleValue(p.Drain)
	} else if e.drainViaBuilder {
		e.w.mb.RecordKafkaConsumerGroupPartitionTimeToDrainDataPoint(e.ts, p.Drain, pl.Group, pl.Topic, int64(pl.Partition))
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
	md := e.w.withDirect(pmetric.NewMetrics(), e.chunk)
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
		e.w.logger.Debug("time lag omitted: no table point or record brackets the committed offset", zap.Int("partitions", e.omitted))
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

// appendPartitionGauges appends the per-partition gauges of the scrape to
// ms, in the index's (topic, partition) order; a partition whose end offset
// was not read has none.
func (w *metricWriter) appendPartitionGauges(ms pmetric.MetricSlice, ts pcommon.Timestamp, parts []lag.Partition) {
	m, info := w.metrics, metadata.MetricsInfo
	const partitionAttributes = 2
	from := ms.Len()
	currentDirect := len(m.KafkaPartitionCurrentOffset.EnabledAttributes) == partitionAttributes
	oldestDirect := len(m.KafkaPartitionOldestOffset.EnabledAttributes) == partitionAttributes
	rateDirect := len(m.KafkaPartitionProduceRate.EnabledAttributes) == partitionAttributes
	current, currentOn := w.appendGauge(ms, currentDirect && m.KafkaPartitionCurrentOffset.Enabled, info.KafkaPartitionCurrentOffset.Name, len(parts))
	oldest, oldestOn := w.appendGauge(ms, oldestDirect && m.KafkaPartitionOldestOffset.Enabled, info.KafkaPartitionOldestOffset.Name, len(parts))
	rate, rateOn := w.appendGauge(ms, rateDirect && m.KafkaPartitionProduceRate.Enabled, info.KafkaPartitionProduceRate.Name, len(parts))
	for i := range parts {
		p := &parts[i]
		if !p.HasEnd {
			continue
		}
		if currentOn {
			w.partitionPoint(current, ts, p).SetIntValue(p.End)
		} else if !currentDirect {
			w.mb.RecordKafkaPartitionCurrentOffsetDataPoint(ts, p.End, p.Topic, int64(p.Partition))
		}
		if p.HasStart {
			if oldestOn {
				w.partitionPoint(oldest, ts, p).SetIntValue(p.Start)
			} else if !oldestDirect {
				w.mb.RecordKafkaPartitionOldestOffsetDataPoint(ts, p.Start, p.Topic, int64(p.Partition))
			}
		}
		if p.HasProduceRate {
			if rateOn {
				w.partitionPoint(rate, ts, p).SetDoubleValue(p.ProduceRate)
			} else if !rateDirect {
				w.mb.RecordKafkaPartitionProduceRateDataPoint(ts, p.ProduceRate, p.Topic, int64(p.Partition))
			}
		}
	}
	i := 0
	ms.RemoveIf(func(x pmetric.Metric) bool {
		i++
		return i > from && x.Gauge().DataPoints().Len() == 0
	})
}

func (w *metricWriter) partitionPoint(dps pmetric.NumberDataPointSlice, ts pcommon.Timestamp, p *lag.Partition) pmetric.NumberDataPoint {
	dp := dps.AppendEmpty()
	dp.SetStartTimestamp(w.startTime)
	dp.SetTimestamp(ts)
	attrs := dp.Attributes()
	attrs.EnsureCapacity(2)
	attrs.PutStr("topic", p.Topic)
	attrs.PutInt("partition", int64(p.Partition))
	return dp
}
