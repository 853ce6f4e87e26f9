package emit

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/health"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/retention"
)

// recordOwner is the Record... method of kafka.consumer_group.partition_owner.
type recordOwner = func(*builder, pcommon.Timestamp, int64, string, string, int64, string, string, string)

// ownerMetric's points carry a pair's attributes and the member's three.
type ownerMetric struct {
	*metric
}

func ownerOf[K ~string](m *metrics, info generatedInfo, enabled bool, kept []K, strategy string, record recordOwner) ownerMetric {
	return ownerMetric{m.add(info, enabled, keys(kept), strategy, func(b *builder) { record(b, 0, 0, "", "", 0, "", "", "") })}
}

// PartitionOwners writes kafka.consumer_group.partition_owner of a
// described group: a point per assigned partition, naming its member.
func (s *Scrape) PartitionOwners(g health.GroupHealth) {
	if !s.writing() {
		return
	}
	d := s.w.m.partitionOwner
	if !d.on || !g.Described || g.Description.State == kafka.GroupStateUnknown {
		return
	}
	for _, o := range health.PartitionOwners(g.Description) {
		if !d.direct {
			reduce(s.reduced, d.metric, s.w.start, s.ts, int64(1), attrValues{
				strs: [6]string{g.Group, o.Topic, "", o.ClientID, o.Host, o.InstanceID}, num: int64(o.Partition), numAt: 2})
			continue
		}
		// point sizes the attributes for all six at once: at 100,000
		// points a scrape, a map left to grow would be a third of what
		// the metric allocates.
		attrs := point(s.groups, d.metric, 0, s.w.start, s.ts, int64(1))
		attrs.PutStr(d.keys[0], g.Group)
		attrs.PutStr(d.keys[1], o.Topic)
		attrs.PutInt(d.keys[2], int64(o.Partition))
		putStringsFrom(attrs, d.metric, 3, o.ClientID, o.Host, o.InstanceID)
	}
}

// RetentionMargins writes one group's retention margins, per topic and per
// partition; lags are the group's, sorted by (topic, partition).
func (s *Scrape) RetentionMargins(lags []lag.PartitionLag, limits *retention.Cache) {
	if !s.writing() {
		return
	}
	m := s.w.m
	if m.retentionMargin.on {
		s.margins = limits.TopicMargins(s.margins[:0], lags)
		for _, tm := range s.margins {
			m.retentionMargin.write(s, tm.Seconds, tm.Group, tm.Topic)
		}
	}
	if !m.partitionRetentionMargin.on {
		return
	}
	for i := range lags {
		pl := &lags[i]
		limit, ok := limits.Limit(pl.Topic)
		if !ok {
			continue
		}
		if margin, ok := retention.Margin(pl, limit); ok {
			m.partitionRetentionMargin.write(s, s.pairs.current(), pl, margin)
		}
	}
}

// putStringsFrom puts values under d's keys from the from-th on.
func putStringsFrom(attrs pcommon.Map, d *metric, from int, values ...string) {
	for i, v := range values {
		attrs.PutStr(d.keys[from+i], v)
	}
}
