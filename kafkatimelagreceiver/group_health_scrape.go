package kafkatimelagreceiver

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

// groupHealthEnabled says whether any group-health metric is on; when none
// is, a scrape sends no DescribeGroups at all.
func (s *timeLagScraper) groupHealthEnabled() bool {
	m := s.cfg.Metrics
	return m.KafkaConsumerGroupMembers.Enabled ||
		m.KafkaConsumerGroupState.Enabled ||
		m.KafkaConsumerGroupRebalances.Enabled ||
		m.KafkaConsumerGroupStatus.Enabled ||
		m.KafkaConsumerGroupAssignedPartitions.Enabled ||
		m.KafkaConsumerGroupPartitionStatus.Enabled
}

// describeGroups describes the scrape's groups when a group-health metric
// needs them.
func (s *timeLagScraper) describeGroups(ctx context.Context, groups []string) (map[string]groupDescription, error) {
	if !s.groupHealthEnabled() || len(groups) == 0 {
		return nil, nil
	}
	described, err := s.cluster.describeGroups(ctx, groups)
	if err != nil {
		return described, fmt.Errorf("describe consumer groups: %w", err)
	}
	return described, nil
}

// recordGroupHealth records the group-health metrics of the scrape's groups.
// It must run before emit, which flushes the builder.
func (s *timeLagScraper) recordGroupHealth(snap *snapshot, groups []groupHealth) {
	// The scrape's points share the end-offset read time (or the scrape's
	// start, when there were no end offsets to read).
	ts := pcommon.Timestamp(snap.at)
	for _, g := range groups {
		s.mb.RecordKafkaConsumerGroupRebalancesDataPoint(ts, g.rebalances, g.group)
		for _, st := range healthStatuses {
			s.mb.RecordKafkaConsumerGroupStatusDataPoint(ts, oneIf(st == g.status), g.group, metadata.MapAttributeStatus[st.String()])
		}
		if !g.described {
			continue
		}
		for _, st := range groupStates {
			s.mb.RecordKafkaConsumerGroupStateDataPoint(ts, oneIf(st == g.description.state), g.group, metadata.MapAttributeState[st.String()])
		}
		if g.description.state == groupStateUnknown {
			continue // the members are unknown, not absent
		}
		s.mb.RecordKafkaConsumerGroupMembersDataPoint(ts, int64(len(g.description.members)), g.group, g.protocol)
		if s.cfg.Metrics.KafkaConsumerGroupAssignedPartitions.Enabled {
			for _, a := range assignedPartitions(g.description) {
				s.mb.RecordKafkaConsumerGroupAssignedPartitionsDataPoint(ts, a.partitions, g.group, a.clientID, a.host, a.instanceID)
			}
		}
	}
}

func oneIf(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
