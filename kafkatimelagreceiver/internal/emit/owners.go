package emit

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/groupview"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
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
// described group: a point per assigned partition (GroupHealth.Owners),
// naming its member.
func (s *Scrape) PartitionOwners(g groupview.GroupHealth) {
	if !s.writing() {
		return
	}
	d := s.w.m.partitionOwner
	if !d.on || !g.Described || g.Description.State == kafka.GroupStateUnknown {
		return
	}
	for _, o := range g.Owners {
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

// RetentionMargin writes kafka.consumer_group.retention_margin of one
// (group, topic): seconds, predicted from basis (its retention attribute).
func (s *Scrape) RetentionMargin(group, topic string, seconds float64, basis string) {
	if s.writing() {
		s.w.m.retentionMargin.write(s, seconds, group, topic, basis)
	}
}

// RetentionMarginUnknown withholds the reduced points of
// kafka.consumer_group.retention_margin that one (group, topic) whose
// margin is not known would fold into, whatever its basis would have been.
func (s *Scrape) RetentionMarginUnknown(group, topic string) {
	d := s.w.m.retentionMargin
	if s.writing() && d.on && !d.direct {
		for basis := range metadata.MapAttributeRetention {
			s.reduced.withhold(d.metric, stringValues(group, topic, basis))
		}
	}
}

// PartitionRetentionMargin writes kafka.consumer_group.partition_retention_margin
// of one pair.
func (s *Scrape) PartitionRetentionMargin(pl *lag.PartitionLag, seconds float64, basis string) {
	if s.writing() && s.w.m.partitionRetentionMargin.on {
		s.w.m.partitionRetentionMargin.write(s, s.pairs.current(), pl, seconds, basis)
	}
}

// PartitionRetentionMarginUnknown is RetentionMarginUnknown of one pair.
func (s *Scrape) PartitionRetentionMarginUnknown(pl *lag.PartitionLag) {
	d := s.w.m.partitionRetentionMargin
	if s.writing() && d.on && !d.direct {
		for basis := range metadata.MapAttributeRetention {
			a := pairValues(pl)
			a.strs[3] = basis
			s.reduced.withhold(d.metric, a)
		}
	}
}

// putStringsFrom puts values under d's keys from the from-th on.
func putStringsFrom(attrs pcommon.Map, d *metric, from int, values ...string) {
	for i, v := range values {
		attrs.PutStr(d.keys[from+i], v)
	}
}
