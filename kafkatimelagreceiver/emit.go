package kafkatimelagreceiver

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/health"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

// metricWriter is the one place metrics are written. The generated
// MetricsBuilder re-aggregates every point by scanning the metric's points
// for equal attributes, which is quadratic in points (BENCHMARKS.md has what
// it cost). A metric that keeps all its attributes has unique points within
// a scrape, nothing to re-aggregate, so it is written directly: the per-pair
// and per-partition gauges, up to 300,000 points a scrape (emit_pairs.go),
// and the per-group and per-(group, topic) metrics (emit_direct.go). A metric
// whose attributes the user reduced goes through the builder. The direct
// paths take names, descriptions, units and types from the builder itself
// (see generatedMetricInfo), so metadata.yaml stays their single source.
type metricWriter struct {
	metrics metadata.MetricsConfig
	// resource is every point's resource: the cluster alias and the
	// replica, as far as they are set and enabled.
	resource pcommon.Resource
	mb       *metadata.MetricsBuilder
	// info is the description, unit and type of each directly written
	// metric, by name.
	info         map[string]metricInfo
	startTime    pcommon.Timestamp
	buildVersion string
	logger       *zap.Logger
	// push, when set, sends chunks of a large scrape's per-pair gauges to
	// the next consumer while the scrape is built.
	push pushFunc
}

func newMetricWriter(cfg *Config, settings receiver.Settings, push pushFunc) *metricWriter {
	// One start time for both paths' points.
	start := pcommon.NewTimestampFromTime(time.Now())
	mb := metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, settings, metadata.WithStartTime(start))
	rb := mb.NewResourceBuilder()
	if cfg.ClusterAlias != "" {
		rb.SetKafkaClusterAlias(cfg.ClusterAlias)
	}
	rb.SetKafkaTimeLagReplica(replicaName())
	return &metricWriter{
		metrics:      cfg.Metrics,
		resource:     rb.Emit(),
		mb:           mb,
		info:         generatedMetricInfo(settings),
		startTime:    start,
		buildVersion: settings.BuildInfo.Version,
		logger:       settings.Logger,
		push:         push,
	}
}

// pushFunc hands one chunk of a scrape's metrics to the next consumer.
type pushFunc func(context.Context, pmetric.Metrics) error

// newPush sends the chunks a large scrape pushes itself to next, counted in
// the receiver's accepted and refused points exactly as the scraper
// controller counts what it sends: same receiver id, same (empty) transport.
func newPush(settings receiver.Settings, next consumer.Metrics) (pushFunc, error) {
	obs, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID:             settings.ID,
		ReceiverCreateSettings: settings,
	})
	if err != nil {
		return nil, fmt.Errorf("receiver telemetry: %w", err)
	}
	return func(ctx context.Context, md pmetric.Metrics) error {
		points := md.DataPointCount()
		ctx = obs.StartMetricsOp(ctx)
		err := next.ConsumeMetrics(ctx, md)
		obs.EndMetricsOp(ctx, "", points, err)
		return err
	}, nil
}

// groupHealthEnabled says whether any group-health metric is on; when none
// is, a scrape sends no DescribeGroups at all.
func (w *metricWriter) groupHealthEnabled() bool {
	m := w.metrics
	return m.KafkaConsumerGroupMembers.Enabled ||
		m.KafkaConsumerGroupState.Enabled ||
		m.KafkaConsumerGroupRebalances.Enabled ||
		m.KafkaConsumerGroupStatus.Enabled ||
		m.KafkaConsumerGroupAssignedPartitions.Enabled ||
		m.KafkaConsumerGroupPartitionOwner.Enabled ||
		m.KafkaConsumerGroupPartitionStatus.Enabled
}

// scrapeWriter is one scrape's metrics being written. Every point carries
// the scrape's instant (the end-offset read).
type scrapeWriter struct {
	w     *metricWriter
	ts    pcommon.Timestamp
	pairs *pairEmitter
	// groups is the per-group and per-(group, topic) metrics written
	// without the builder.
	groups groupMetrics
	parts  []lag.Partition
	// rebalancesSince holds the groups whose rebalance count started after
	// the receiver's start, with when it started.
	rebalancesSince map[string]pcommon.Timestamp
}

// begin starts a scrape's metrics. ctx bounds the pushes of chunks.
func (w *metricWriter) begin(ctx context.Context, at int64, totalPairs int) *scrapeWriter {
	return &scrapeWriter{w: w, ts: pcommon.Timestamp(at), pairs: w.newPairEmitter(ctx, pcommon.Timestamp(at), totalPairs), groups: groupMetrics{w: w}}
}

// pairs writes one group's per-pair gauges.
func (sw *scrapeWriter) groupLags(lags []lag.PartitionLag) {
	for i := range lags {
		sw.pairs.add(&lags[i])
	}
}

// partitionStatuses writes kafka.consumer_group.partition_status of one
// group's pairs; statuses is in the order of lags.
func (sw *scrapeWriter) partitionStatuses(lags []lag.PartitionLag, statuses []health.Status) {
	if !sw.w.metrics.KafkaConsumerGroupPartitionStatus.Enabled {
		return
	}
	for i := range lags {
		sw.pairs.addStatus(&lags[i], statuses[i])
	}
}

// groupHealth writes one group's health metrics: directly when a metric
// has all its attributes, else through the builder (see groupMetrics).
func (sw *scrapeWriter) groupHealth(g health.GroupHealth) {
	m, mb, ts, start, d, info := sw.w.metrics, sw.w.mb, sw.ts, sw.w.startTime, &sw.groups, metadata.MetricsInfo
	if allAttributes(m.KafkaConsumerGroupRebalances.Enabled, len(m.KafkaConsumerGroupRebalances.EnabledAttributes), 1) {
		// A count that started after the receiver did carries its own
		// start (see stampRebalanceStarts).
		since := start
		if g.RebalancesSince > 0 {
			since = pcommon.Timestamp(g.RebalancesSince)
		}
		d.point(info.KafkaConsumerGroupRebalances.Name, since, ts, "group", g.Group).SetIntValue(g.Rebalances)
	} else {
		mb.RecordKafkaConsumerGroupRebalancesDataPoint(ts, g.Rebalances, g.Group)
		if g.RebalancesSince > 0 && m.KafkaConsumerGroupRebalances.Enabled {
			if sw.rebalancesSince == nil {
				sw.rebalancesSince = map[string]pcommon.Timestamp{}
			}
			sw.rebalancesSince[g.Group] = pcommon.Timestamp(g.RebalancesSince)
		}
	}
	if g.StatusKnown {
		direct := allAttributes(m.KafkaConsumerGroupStatus.Enabled, len(m.KafkaConsumerGroupStatus.EnabledAttributes), 2)
		for _, st := range health.Statuses {
			if direct {
				d.point(info.KafkaConsumerGroupStatus.Name, start, ts, "group", g.Group, "status", st.String()).SetIntValue(oneIf(st == g.Status))
			} else {
				mb.RecordKafkaConsumerGroupStatusDataPoint(ts, oneIf(st == g.Status), g.Group, metadata.MapAttributeStatus[st.String()])
			}
		}
	}
	if !g.Described {
		return
	}
	direct := allAttributes(m.KafkaConsumerGroupState.Enabled, len(m.KafkaConsumerGroupState.EnabledAttributes), 2)
	for _, st := range kafka.GroupStates {
		if direct {
			d.point(info.KafkaConsumerGroupState.Name, start, ts, "group", g.Group, "state", st.String()).SetIntValue(oneIf(st == g.Description.State))
		} else {
			mb.RecordKafkaConsumerGroupStateDataPoint(ts, oneIf(st == g.Description.State), g.Group, metadata.MapAttributeState[st.String()])
		}
	}
	if g.Description.State == kafka.GroupStateUnknown {
		return // the members are unknown, not absent
	}
	members := int64(len(g.Description.Members))
	if allAttributes(m.KafkaConsumerGroupMembers.Enabled, len(m.KafkaConsumerGroupMembers.EnabledAttributes), 2) {
		d.point(info.KafkaConsumerGroupMembers.Name, start, ts, "group", g.Group, "protocol", g.Protocol).SetIntValue(members)
	} else {
		mb.RecordKafkaConsumerGroupMembersDataPoint(ts, members, g.Group, g.Protocol)
	}
	if m.KafkaConsumerGroupAssignedPartitions.Enabled {
		direct := allAttributes(true, len(m.KafkaConsumerGroupAssignedPartitions.EnabledAttributes), 4)
		for _, a := range health.AssignedPartitions(g.Description) {
			if direct {
				d.point(info.KafkaConsumerGroupAssignedPartitions.Name, start, ts,
					"group", g.Group, "member", a.ClientID, "host", a.Host, "group_instance_id", a.InstanceID).SetIntValue(a.Partitions)
			} else {
				mb.RecordKafkaConsumerGroupAssignedPartitionsDataPoint(ts, a.Partitions, g.Group, a.ClientID, a.Host, a.InstanceID)
			}
		}
	}
	sw.partitionOwners(g)
}

// aggregates writes the per-(group, topic) sums and maxima.
func (sw *scrapeWriter) aggregates(aggs []lag.TopicLag) {
	m, mb, info := sw.w.metrics, sw.w.mb, metadata.MetricsInfo
	lagSum := groupTopicGauge(sw, info.KafkaConsumerGroupLagSum.Name, m.KafkaConsumerGroupLagSum.Enabled, len(m.KafkaConsumerGroupLagSum.EnabledAttributes), mb.RecordKafkaConsumerGroupLagSumDataPoint)
	lagMax := groupTopicGauge(sw, info.KafkaConsumerGroupLagMax.Name, m.KafkaConsumerGroupLagMax.Enabled, len(m.KafkaConsumerGroupLagMax.EnabledAttributes), mb.RecordKafkaConsumerGroupLagMaxDataPoint)
	timeLagMax := groupTopicGauge(sw, info.KafkaConsumerGroupTimeLagMax.Name, m.KafkaConsumerGroupTimeLagMax.Enabled, len(m.KafkaConsumerGroupTimeLagMax.EnabledAttributes), mb.RecordKafkaConsumerGroupTimeLagMaxDataPoint)
	for _, agg := range aggs {
		if agg.HasLag {
			lagSum(agg.LagSum, agg.Group, agg.Topic)
			lagMax(agg.LagMax, agg.Group, agg.Topic)
		}
		if agg.HasTimeLag {
			timeLagMax(agg.TimeLagMax, agg.Group, agg.Topic)
		}
	}
}

// partitions writes the per-topic production rates now and the
// per-partition gauges, in the index's (topic, partition) order, with
// finish.
func (sw *scrapeWriter) partitions(parts []lag.Partition) {
	sw.topicProduceRates(parts)
	sw.parts = parts
}

// finish sends the last chunk of pairs, or returns every point of the
// scrape when nothing was pushed. The error says what the next consumer
// refused.
func (sw *scrapeWriter) finish() (pmetric.Metrics, error) {
	direct := pmetric.NewMetricSlice()
	err := sw.pairs.finish(direct)
	sw.groups.moveTo(direct)
	// Before the builder emits: a per-partition gauge whose attributes the
	// user reduced is recorded into the builder, and must land in the
	// resource that carries the cluster alias and the replica.
	sw.w.appendPartitionGauges(direct, sw.ts, sw.parts)
	sw.w.mb.EmitForResource(metadata.WithResource(sw.w.resource))
	md := sw.w.mb.Emit()
	sw.stampRebalanceStarts(md)
	return sw.w.withDirect(md, direct), err
}

// rebalancesMetric is the one cumulative sum the builder writes.
const rebalancesMetric = "kafka.consumer_group.rebalances"

// stampRebalanceStarts gives each group's kafka.consumer_group.rebalances
// point the time its count started. The builder stamps every point with the
// receiver's start, but a group first seen later, or forgotten and seen
// again, counts from 0 from then on: under the old start time, a backend
// reads that drop as a counter gone backwards. With the group attribute
// off, the one point summing every group starts at the latest restart.
func (sw *scrapeWriter) stampRebalanceStarts(md pmetric.Metrics) {
	if len(sw.rebalancesSince) == 0 {
		return
	}
	var latest pcommon.Timestamp
	for _, since := range sw.rebalancesSince {
		latest = max(latest, since)
	}
	eachMetric(md, func(m pmetric.Metric) {
		if m.Name() != rebalancesMetric {
			return
		}
		dps := m.Sum().DataPoints()
		for d := range dps.Len() {
			dp := dps.At(d)
			group, ok := dp.Attributes().Get("group")
			if !ok {
				dp.SetStartTimestamp(latest)
			} else if since, ok := sw.rebalancesSince[group.Str()]; ok {
				dp.SetStartTimestamp(since)
			}
		}
	})
}

// eachMetric calls fn with every metric of md, in order.
func eachMetric(md pmetric.Metrics, fn func(pmetric.Metric)) {
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

// withDirect moves the directly written metrics into md's scope, creating the
// resource and scope when the builder emitted nothing.
func (w *metricWriter) withDirect(md pmetric.Metrics, direct pmetric.MetricSlice) pmetric.Metrics {
	if direct.Len() == 0 {
		return md
	}
	var sm pmetric.ScopeMetrics
	if md.ResourceMetrics().Len() == 0 {
		rm := md.ResourceMetrics().AppendEmpty()
		w.resource.CopyTo(rm.Resource())
		sm = rm.ScopeMetrics().AppendEmpty()
		sm.Scope().SetName(metadata.ScopeName)
		sm.Scope().SetVersion(w.buildVersion)
	} else {
		sm = md.ResourceMetrics().At(0).ScopeMetrics().At(0)
	}
	direct.MoveAndAppendTo(sm.Metrics())
	return md
}

func oneIf(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
