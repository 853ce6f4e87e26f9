package kafkatimelagreceiver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/compute"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/emit"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/health"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/ownership"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/progress"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/read"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/retention"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/sampler"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/scrapestatus"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/statestore"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// unwantedTableLifetime is how long the table of a partition no group was
// seen committing on is kept while some group or coordinator cannot be
// read: long enough to ride out a coordinator restart or a broker outage,
// short enough that groups and topics churning meanwhile cannot grow the
// tables, the saved state and the sampler's work without bound. A group
// that comes back after it has its time lag from record timestamps until
// its table refills. Three scrapes when those are longer, so that one
// partial scrape never drops a table the previous one wanted.
const unwantedTableLifetime = time.Hour

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

// newTimeLagScraper builds the scraper. push, when not nil, sends chunks of
// large scrapes to the next consumer while they are built.
func newTimeLagScraper(cfg *Config, settings receiver.Settings, push emit.PushFunc) (*timeLagScraper, error) {
	groups, err := cfg.Groups.filter()
	if err != nil {
		return nil, fmt.Errorf("groups: %w", err)
	}
	if cfg.Coordination.enabled() {
		// The replicas' own group commits nothing: a group of this
		// receiver's making, not one an operator watches.
		groups = groups.Skipping(cfg.Coordination.GroupID)
	}
	topics, err := cfg.Topics.filter()
	if err != nil {
		return nil, fmt.Errorf("topics: %w", err)
	}
	trusted, err := trustedTimestampTopics(cfg.TrustedTimestampTopics)
	if err != nil {
		return nil, err
	}
	tb, err := metadata.NewTelemetryBuilder(settings.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("self-telemetry: %w", err)
	}
	writer, err := emit.New(emit.Settings{MetricsBuilderConfig: cfg.MetricsBuilderConfig, ClusterAlias: cfg.ClusterAlias, Replica: replicaName(), Push: push}, settings)
	if err != nil {
		return nil, err
	}
	wants := emit.WantsOf(cfg.Metrics)
	s := &timeLagScraper{
		cfg:    cfg,
		logger: settings.Logger,
		reader: &read.Reader{
			Tables:             timetable.NewStore(cfg.MaxSamples, timetable.GapSamples*cfg.SamplingInterval, time.Now),
			Records:            recordcache.New(recordcache.TrustedStamps(trusted)),
			Groups:             groups,
			Topics:             topics,
			GroupIncludes:      groups.WatchIncludes(),
			TopicIncludes:      topics.WatchIncludes(),
			Describe:           wants.GroupHealth,
			StartOffsets:       wants.StartOffsets,
			StableOffsets:      wants.StableOffsets,
			MaxRecordReads:     cfg.MaxRecordReadsPerScrape,
			TimeIndex:          cfg.TimestampSource == TimestampSourceTimeIndex,
			MaxRecordReadBytes: cfg.MaxRecordReadBytesPerScrape,
			RateWindow:         rateWindow(wants, cfg.RateWindow),
			KeepUnwantedFor:    max(unwantedTableLifetime, 3*cfg.CollectionInterval),
			Now:                time.Now,
			UntimedRecords:     tb.KafkaTimeLagUntimedRecords,
			Logger:             settings.Logger,
			Shares:             read.ShareSettings{Describe: wants.ShareGroupHealth},
		},
		computer:   &compute.Computer{ProduceRates: wants.ProduceRates, Owners: wants.Owners},
		wants:      wants,
		writer:     writer,
		telemetry:  &selfTelemetry{builder: tb},
		receiverID: settings.ID,
	}
	if s.wants.GroupHealth {
		s.computer.Health = health.NewTracker(cfg.Status.Window, cfg.Status.MaxTimeLag.Seconds())
		if s.wants.Assignments {
			s.computer.Health.SumAssignments()
		}
	}
	if s.wants.Progress {
		s.computer.Progress = progress.NewTracker(cfg.RateWindow)
	}
	if s.wants.Retention {
		s.computer.Retention = retention.NewTracker()
		s.reader.Tables.WatchStartChanges()
	}
	s.newCluster = func(ctx context.Context, host component.Host) (kafka.Cluster, error) {
		c, err := newCluster(ctx, cfg, host, settings.Logger, s.telemetry)
		if err != nil {
			return nil, err
		}
		s.tokens = c.Tokens()
		s.reader.Shares.Listed = c.ListedShareGroups
		return c, nil
	}
	s.lifetime, s.endLifetime = context.WithCancel(context.Background())
	return s, nil
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
		}
		s.telemetry.tables(ctx, in.Tracked, in.Points)
		s.telemetry.producerClocks(ctx, in.ClocksOff, in.LargestClockOffset)
	} else {
		// Not a member (yet): another replica may own any group.
		in = s.reader.Empty()
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

// rateWindow is the window partitions' production rates are estimated
// over, when some metric (or the retention margins' size prediction)
// needs them; 0 when none does.
func rateWindow(wants emit.Wants, window time.Duration) time.Duration {
	if !wants.ProduceRates && !wants.Retention {
		return 0
	}
	return window
}

// replicaName names this collector in kafka.time_lag.replica: its host
// name, which is the pod's name on Kubernetes.
func replicaName() string {
	name, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return name
}
