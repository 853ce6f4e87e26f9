package kafkatimelagreceiver

import (
	"context"
	"fmt"
	"slices"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/ownership"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/read"
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

// served judges, with coordination, whether a scrape read this replica's
// share: it did unless nothing could be read, none of its groups' commits
// were read, or none of their partitions' end offsets. Part of a share is
// worth keeping (no other replica is likely to do better); none of it for
// StandDownAfter scrapes in a row, and the replica gives its groups up.
func (s *timeLagScraper) served(owner *ownership.Owner, in *read.Input, err error) {
	if owner == nil {
		return
	}
	s.share.Store(owner)
	if reason := s.standing.Read(owner, readShare(in, err)); reason != nil {
		s.standDown(reason)
	}
}

// readShare tells whether a read got any of the replica's share.
func readShare(in *read.Input, err error) bool {
	if err != nil || in == nil {
		return false
	}
	groupsRead := 0
	for _, g := range in.Groups {
		if g.Reported && !g.Unread {
			groupsRead++
		}
	}
	for _, g := range in.Shares {
		if !g.Unread {
			groupsRead++
		}
	}
	if in.Owned+len(in.Shares) > 0 && groupsRead == 0 {
		return false
	}
	return in.Pairs == 0 || len(in.Snap.End) > 0
}

// exported judges, with coordination, whether the pipeline took a
// scrape's points (the controller's send of them, err its answer).
func (s *timeLagScraper) exported(err error) {
	if s.membership == nil || !s.held.Joined {
		return
	}
	if reason := s.standing.Exported(s.share.Load(), err == nil); reason != nil {
		s.standDown(reason)
	}
}

func (s *timeLagScraper) standDown(reason error) {
	s.logger.Warn("coordination: this replica cannot serve its groups; leaving the replicas' group so that the others take them over",
		zap.String("group", s.cfg.Coordination.GroupID), zap.Error(reason))
	s.membership.Leave(reason)
}

// probe, while this replica stands down, reads the share it gave up and
// reports nothing; once that read succeeds (and, after refused exports,
// the hold is over), it rejoins. awayErr is the scrape's error meanwhile.
func (s *timeLagScraper) probe(ctx context.Context, given *ownership.Owner, denials *kafka.Denials, awayErr error) (pmetric.Metrics, error) {
	var errs scrapererror.ScrapeErrors
	in, err := s.reader.Read(ctx, given, denials, &errs)
	if s.standing.Probe(readShare(in, err)) {
		s.logger.Info("coordination: this replica reads its groups again; rejoining the replicas' group",
			zap.String("group", s.cfg.Coordination.GroupID))
		s.membership.Rejoin()
	}
	return pmetric.NewMetrics(), awayErr
}

// watchExports passes the controller's sends to next and tells exported
// how they went.
func (s *timeLagScraper) watchExports(next consumer.Metrics) (consumer.Metrics, error) {
	return consumer.NewMetrics(func(ctx context.Context, md pmetric.Metrics) error {
		err := next.ConsumeMetrics(ctx, md)
		s.exported(err)
		return err
	}, consumer.WithCapabilities(next.Capabilities()))
}
