package kafkatimelagreceiver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/compute"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/emit"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/ownership"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/read"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/sampler"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/scrapestatus"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/statestore"
)

// timeLagScraper is the receiver's scraper: each scrape reads one
// consistent snapshot of the cluster, computes lags and health from it and
// writes them as metrics. It owns the sampler, which runs between scrapes.
type timeLagScraper struct {
	cfg        *Config
	logger     *zap.Logger
	reader     *read.Reader
	computer   *compute.Computer
	wants      emit.Wants
	writer     *emit.Writer
	telemetry  *selfTelemetry
	receiverID component.ID

	// newCluster builds the Kafka access layer; tests swap it.
	newCluster func(ctx context.Context, host component.Host) (kafka.Cluster, error)
	// tokens are the cluster's OAUTHBEARER tokens, which the membership
	// shares; nil without them.
	tokens  clientsettings.TokenSource
	cluster kafka.Cluster
	shares  kafka.ShareGroups // nil when no share-group metric is on
	sampler *sampler.Sampler
	state   *statestore.State
	// membership, when coordination is on, says which groups are ours;
	// held is what it said at the last scrape.
	membership kafka.Membership
	held       kafka.Assignment
	// weighedOnce: the topics' loads were read before the first join
	// (weighBeforeJoining).
	weighedOnce bool
	// standing gives the groups up while this replica cannot serve them;
	// share is what it held at the last scrape, which the export of that
	// scrape is judged for.
	standing ownership.Standing
	share    atomic.Pointer[ownership.Owner]
	status   scrapestatus.Reporter

	// lifetime ends when shutdown begins (interrupt), ending the scrape in
	// flight. See lifecycle.go.
	lifetime          context.Context
	endLifetime       context.CancelFunc
	interruptOnce     sync.Once
	interruptErr      error
	samplerStopped    chan struct{} // closed once the sampler stopped
	membershipStopped chan error    // the membership's Close, once it returned
	stateSaved        chan struct{} // closed once the state's last save and close returned
	stateErr          error         // their error, set before stateSaved is closed
}

// scrape reads a snapshot, then computes and writes it group by group. Its
// outcome is the receiver's component status.
func (s *timeLagScraper) scrape(ctx context.Context) (_ pmetric.Metrics, err error) {
	if s.cluster == nil {
		return pmetric.NewMetrics(), errors.New("scrape before start")
	}
	defer s.telemetry.scrapeDone(ctx, time.Now())
	defer func() {
		if s.lifetime.Err() == nil {
			// A scrape cut by shutdown says nothing about the cluster.
			s.status.Scraped(err)
		}
	}()
	ctx, cancel := s.scrapeContext(ctx)
	defer cancel()
	// Groups and topics an ACL denies are skipped with one warning per
	// scrape instead of failing it: a denial is a standing decision, and
	// the rest of the cluster is still worth reporting.
	denials := kafka.NewDenials()
	defer denials.Warn(s.logger, "scrape")
	var errs scrapererror.ScrapeErrors

	owner, joined, err := s.owner(ctx)
	if err != nil {
		if given := s.standing.Away(); given != nil {
			return s.probe(ctx, given, denials, err)
		}
		return pmetric.NewMetrics(), err
	}
	var in *read.Input
	if joined {
		in, err = s.reader.Read(ctx, owner, denials, &errs)
		s.served(owner, in, err)
		if err != nil {
			return pmetric.NewMetrics(), err
		}
		if owner != nil {
			s.telemetry.coordinationGroups(ctx, in.Owned)
			// For the next rebalance this replica may lead: partitions
			// dealt out by their work, not their count.
			s.membership.Weigh(s.reader.TopicLoads())
		}
		s.telemetry.tables(ctx, in.Tracked, in.Points)
		s.telemetry.producerClocks(ctx, in.ClocksOff, in.LargestClockOffset)
	} else {
		// Not a member (yet): another replica may own any group.
		in = s.reader.Empty()
		s.weighBeforeJoining(ctx, denials)
	}
	md, err := s.report(ctx, in)
	if err != nil {
		// The points were read; the pipeline refused them (and counted them
		// as refused), or the write ran past its deadline (what was
		// written is sent): not a failed scrape point.
		errs.AddPartial(0, err)
	}
	return md, errs.Combine()
}

// scrapeContext bounds one scrape: by the controller's `timeout` when set,
// else by one collection_interval (a scrape still running then is stale
// next to the one due), and by the receiver's shutdown. When it ends, the
// Kafka requests in flight are cut and nothing more is asked; what was read
// is reported.
func (s *timeLagScraper) scrapeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	cancelDeadline := context.CancelFunc(func() {})
	if _, ok := ctx.Deadline(); !ok {
		// The controller gives ctx the `timeout` deadline when it is set; a
		// caller that did not (a test) gets the same bound.
		ctx, cancelDeadline = context.WithTimeout(ctx, s.scrapeBound())
	}
	ctx, cancel := s.cutAtShutdown(ctx)
	return ctx, func() {
		cancel()
		cancelDeadline()
	}
}

// scrapeBound is how long a scrape may take: `timeout` when set, else one
// collection_interval.
func (s *timeLagScraper) scrapeBound() time.Duration {
	if s.cfg.Timeout > 0 {
		return s.cfg.Timeout
	}
	return s.cfg.CollectionInterval
}

// writeContext bounds the writing of a scrape's points on its own: one
// scrape bound from when it starts, and the receiver's shutdown. A read cut
// at the scrape's deadline (a broker that does not answer) still reports
// what it read; a write that itself runs past its bound, or a pipeline that
// takes no chunk, is cut.
func (s *timeLagScraper) writeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancelDeadline := context.WithTimeout(context.WithoutCancel(ctx), s.scrapeBound())
	ctx, cancel := s.cutAtShutdown(ctx)
	return ctx, func() {
		cancel()
		cancelDeadline()
	}
}

// cutAtShutdown is ctx, ended by the receiver's shutdown too.
func (s *timeLagScraper) cutAtShutdown(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(s.lifetime, func() { cancel(errShuttingDown) })
	return ctx, func() {
		stop()
		cancel(nil)
	}
}

// report computes the scrape and writes it (package compute).
func (s *timeLagScraper) report(ctx context.Context, in *read.Input) (pmetric.Metrics, error) {
	// The write has a deadline of its own (writeContext): a pipeline that
	// does not take a chunk (an exporter waiting on a backend that is down),
	// or a write that runs past it, holds the scrape no longer than that.
	wctx, cancel := s.writeContext(ctx)
	defer cancel()
	out := s.writer.Begin(wctx, in.Snap.At, in.Pairs)
	s.telemetry.computed(ctx, s.computer.Scrape(in, out, time.Now()), s.logger)
	if s.computer.Retention != nil {
		s.reader.Tables.WatchStartsEverySample(s.computer.Retention.Moving())
	}
	return out.Finish()
}

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

// weighBeforeJoining reads, once, every group's commits before this
// replica first joins, so that it knows the topics' loads should it lead
// the group's first plan (the membership waits for them, within a bound).
func (s *timeLagScraper) weighBeforeJoining(ctx context.Context, denials *kafka.Denials) {
	if s.weighedOnce {
		return
	}
	s.weighedOnce = true
	loads, err := s.reader.ReadLoads(ctx, denials)
	if err != nil {
		s.logger.Info("coordination: could not read the groups' commits before joining; the first deal of the coordination partitions may go by their count", zap.Error(err))
		loads = map[string]int64{} // join now, without loads
	}
	s.membership.Weigh(loads)
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
	if reason := s.standing.Read(owner, err == nil && in.Served()); reason != nil {
		s.standDown(reason)
	}
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
	if s.standing.Probe(err == nil && in.Served()) {
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
