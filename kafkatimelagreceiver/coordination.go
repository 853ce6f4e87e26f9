package kafkatimelagreceiver

import (
	"context"
	"fmt"
	"slices"

	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/ownership"
)

// owner returns this replica's share of the monitored groups for one
// scrape: nil (everything) when coordination is off. joined is false while
// the replica holds no assignment, when it reports nothing; err says why
// when joining failed.
func (s *timeLagScraper) owner(ctx context.Context) (owner *ownership.Owner, joined bool, err error) {
	if s.membership == nil {
		return nil, true, nil
	}
	a := s.membership.Assignment()
	s.telemetry.coordinationPartitions(ctx, len(a.Partitions))
	if !a.Joined {
		s.telemetry.coordinationGroups(ctx, 0)
		if s.held.Joined {
			s.logger.Warn("coordination: no longer a member of the replicas' group; reporting nothing until it rejoins",
				zap.String("group", s.cfg.Coordination.GroupID), zap.Error(a.Err))
		}
		s.held = a
		if a.Err != nil {
			return nil, false, fmt.Errorf("coordination: not a member of group %q, so reporting no group: %w", s.cfg.Coordination.GroupID, a.Err)
		}
		return nil, false, nil
	}
	if !s.held.Joined || !slices.Equal(a.Partitions, s.held.Partitions) || a.PartitionCount != s.held.PartitionCount {
		s.logger.Info("coordination: holding coordination partitions",
			zap.String("group", s.cfg.Coordination.GroupID), zap.Int32s("partitions", a.Partitions),
			zap.Int32("of", a.PartitionCount), zap.String("member", a.MemberID), zap.Int32("generation", a.Generation))
	}
	s.held = a
	return ownership.New(a.Partitions, a.PartitionCount), true, nil
}
