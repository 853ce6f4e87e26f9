package kafkatimelagreceiver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/health"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/sampler"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// gapSamples is how many sampling intervals may pass between two table
// points before the stretch between them counts as unwatched: one late
// sample is noise, not an outage.
const gapSamples = 3

// timeLagScraper is the receiver's scraper: each scrape reads one
// consistent snapshot of the cluster, computes lags and health from it and
// writes them as metrics. It owns the sampler, which runs between scrapes.
type timeLagScraper struct {
	cfg        *Config
	logger     *zap.Logger
	groups     *nameFilter
	topics     *nameFilter
	tables     *timetable.Store
	records    *lag.RecordTimes
	health     *health.Tracker // nil when no group-health metric is on
	writer     *metricWriter
	telemetry  *selfTelemetry
	receiverID component.ID

	// newCluster builds the Kafka access layer; tests swap it.
	newCluster func() (kafka.Cluster, error)
	cluster    kafka.Cluster
	sampler    *sampler.Sampler
	state      *stateStorage
	// membership, when coordination is on, says which groups are ours;
	// held is what it said at the last scrape.
	membership kafka.Membership
	held       kafka.Assignment
	status     statusReporter
}

// newTimeLagScraper builds the scraper. push, when not nil, sends chunks of
// large scrapes to the next consumer while they are built.
func newTimeLagScraper(cfg *Config, settings receiver.Settings, push pushFunc) (*timeLagScraper, error) {
	groups, err := newNameFilter("groups", cfg.Groups)
	if err != nil {
		return nil, err
	}
	topics, err := newNameFilter("topics", cfg.Topics)
	if err != nil {
		return nil, err
	}
	tb, err := metadata.NewTelemetryBuilder(settings.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("self-telemetry: %w", err)
	}
	s := &timeLagScraper{
		cfg:        cfg,
		logger:     settings.Logger,
		groups:     groups,
		topics:     topics,
		tables:     timetable.NewStore(cfg.MaxSamples, gapSamples*cfg.SamplingInterval),
		records:    lag.NewRecordTimes(),
		writer:     newMetricWriter(cfg, settings, push),
		telemetry:  &selfTelemetry{builder: tb},
		receiverID: settings.ID,
	}
	if s.writer.groupHealthEnabled() {
		s.health = health.NewTracker(cfg.Status.Window, cfg.Status.MaxTimeLag.Seconds())
	}
	s.newCluster = func() (kafka.Cluster, error) {
		return newCluster(cfg, settings.Logger, s.telemetry)
	}
	return s, nil
}

// start restores saved tables, builds the Kafka access layer (which
// connects lazily, so a cluster that is down does not stop the collector)
// and starts the sampler.
func (s *timeLagScraper) start(ctx context.Context, host component.Host) error {
	s.status = newStatusReporter(host)
	if s.cfg.Storage != nil {
		client, err := openStateStorage(ctx, host, *s.cfg.Storage, s.receiverID)
		if err != nil {
			return err
		}
		s.state = &stateStorage{client: client, tables: s.tables, interval: s.cfg.StorageInterval, logger: s.logger}
		s.state.load(ctx)
		s.state.start()
	}
	cl, err := s.newCluster()
	if err != nil {
		return err
	}
	s.cluster = cl
	if s.cfg.Coordination.enabled() {
		if s.membership, err = newMembership(s.cfg, s.logger); err != nil {
			return err
		}
	}
	s.sampler = sampler.New(cl, s.tables, sampler.Settings{
		Interval: s.cfg.SamplingInterval,
		Timeout:  s.cfg.requestTimeout(),
		Logger:   s.logger,
		Duration: s.telemetry.builder.KafkaTimeLagSamplingDuration,
	})
	s.sampler.Start()
	return nil
}

func (s *timeLagScraper) shutdown(ctx context.Context) error {
	var errs []error
	if s.membership != nil {
		// Leaving first lets the other replicas take over at once.
		errs = append(errs, s.membership.Close())
	}
	if s.sampler != nil {
		s.sampler.Stop()
	}
	defer s.telemetry.shutdown()
	if s.state != nil {
		errs = append(errs, s.state.stop(ctx))
	}
	if s.cluster != nil {
		errs = append(errs, s.cluster.Close())
	}
	return errors.Join(errs...)
}

// scrape reads a snapshot, then computes and writes it group by group. Its
// outcome is the receiver's component status.
func (s *timeLagScraper) scrape(ctx context.Context) (_ pmetric.Metrics, err error) {
	if s.cluster == nil {
		return pmetric.NewMetrics(), errors.New("scrape before start")
	}
	defer s.telemetry.scrapeDone(ctx, time.Now())
	defer func() { s.status.scraped(err) }()
	// Groups and topics an ACL denies are skipped with one warning per
	// scrape instead of failing it: a denial is a standing decision, and
	// the rest of the cluster is still worth reporting.
	denials := kafka.NewDenials()
	defer denials.Warn(s.logger, "scrape")
	var errs scrapererror.ScrapeErrors

	in, err := s.read(ctx, denials, &errs)
	if err != nil {
		return pmetric.NewMetrics(), err
	}
	md, err := s.report(ctx, in)
	if err != nil {
		// The points were read; the pipeline refused them (and counted them
		// as refused): not a failed scrape point.
		errs.AddPartial(0, err)
	}
	return md, errs.Combine()
}

// report computes each group's lags and health and writes them, group by
// group, so that only one group's lags are held at a time; then the
// per-topic aggregates and per-partition gauges.
func (s *timeLagScraper) report(ctx context.Context, in *scrapeInput) (pmetric.Metrics, error) {
	pushCtx := ctx
	if _, ok := ctx.Deadline(); !ok {
		// A pipeline that does not take a chunk (an exporter waiting on a
		// backend that is down) must not hold the scrape, and the shutdown
		// that waits for it, forever: by the next scrape the chunk is stale.
		var cancel context.CancelFunc
		pushCtx, cancel = context.WithTimeout(ctx, s.cfg.CollectionInterval)
		defer cancel()
	}
	out := s.writer.begin(pushCtx, in.snap.At, in.pairs)
	appendTime := lag.AppendTimes(s.tables, s.records, in.snap.At)
	if s.health != nil {
		s.health.BeginScrape()
	}
	var (
		lags       []lag.PartitionLag
		aggregates []lag.TopicLag
		methods    lag.MethodCounts
	)
	for _, name := range in.names {
		lags = in.idx.GroupLags(lags[:0], name, in.snap.At, appendTime)
		methods.Add(lags)
		aggregates = lag.Aggregate(aggregates, lags)
		if s.health != nil {
			d, described := in.described[name]
			gh := s.health.ObserveGroup(name, d, described, lags)
			out.partitionStatuses(lags, gh.Partitions)
			if in.reported[name] {
				out.groupHealth(gh)
			}
		}
		out.groupLags(lags)
	}
	if s.health != nil {
		s.health.EndScrape()
	}
	s.telemetry.estimates(ctx, methods)
	out.aggregates(aggregates)
	out.partitions(in.gaugedPartitions())
	return out.finish()
}
