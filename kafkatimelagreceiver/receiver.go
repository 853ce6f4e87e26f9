package kafkatimelagreceiver

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/progress"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/retention"
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
	cfg      *Config
	logger   *zap.Logger
	groups   *nameFilter
	topics   *nameFilter
	tables   *timetable.Store
	records  *lag.RecordTimes
	health   *health.Tracker   // nil when no group-health metric is on
	progress *progress.Tracker // nil when no metric needs it
	// retention holds the topics' retention settings once started; nil
	// when no retention margin is on.
	retention  *retention.Cache
	writer     *metricWriter
	telemetry  *selfTelemetry
	receiverID component.ID

	// newCluster builds the Kafka access layer; tests swap it.
	newCluster func(ctx context.Context, host component.Host) (kafka.Cluster, error)
	// now tells when a scrape wanted each table; tests swap it.
	now     func() time.Time
	cluster kafka.Cluster
	sampler *sampler.Sampler
	state   *stateStorage
	// membership, when coordination is on, says which groups are ours;
	// held is what it said at the last scrape.
	membership kafka.Membership
	held       kafka.Assignment
	status     statusReporter

	// lifetime ends when shutdown begins (interrupt), ending the scrape in
	// flight. See lifecycle.go.
	lifetime          context.Context
	endLifetime       context.CancelFunc
	interruptOnce     sync.Once
	interruptErr      error
	samplerStopped    chan struct{} // closed once the sampler stopped
	membershipStopped chan error    // the membership's Close, once it returned
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
		tables:     timetable.NewStore(cfg.MaxSamples, gapSamples*cfg.SamplingInterval, time.Now),
		records:    lag.NewRecordTimes(),
		writer:     newMetricWriter(cfg, settings, push),
		telemetry:  &selfTelemetry{builder: tb},
		receiverID: settings.ID,
		now:        time.Now,
	}
	if s.writer.groupHealthEnabled() {
		s.health = health.NewTracker(cfg.Status.Window, cfg.Status.MaxTimeLag.Seconds())
	}
	if s.writer.progressEnabled() {
		s.progress = progress.NewTracker(cfg.RateWindow)
	}
	s.newCluster = func(ctx context.Context, host component.Host) (kafka.Cluster, error) {
		return newCluster(ctx, cfg, host, settings.Logger, s.telemetry)
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
			s.status.scraped(err)
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

// report computes each group's lags, health and progress and writes them,
// group by group, so that only one group's lags are held at a time; then
// the per-topic aggregates and per-partition gauges.
func (s *timeLagScraper) report(ctx context.Context, in *scrapeInput) (pmetric.Metrics, error) {
	// ctx has the scrape's deadline (scrapeContext): a pipeline that does
	// not take a chunk (an exporter waiting on a backend that is down) holds
	// the scrape no longer than that.
	out := s.writer.begin(ctx, in.snap.At, in.pairs)
	appendTime := lag.AppendTimes(s.tables, s.records, in.snap.At)
	if s.writer.produceRatesNeeded() {
		in.idx.ResolveProduceRates(s.tables, s.cfg.RateWindow)
	}
	if s.health != nil {
		s.health.BeginScrape(in.snap.At)
	}
	if s.progress != nil {
		s.progress.BeginScrape()
	}
	var (
		lags       []lag.PartitionLag
		aggregates []lag.TopicLag
		topics     []progress.Topic
		margins    []retention.TopicMargin
		methods    lag.MethodCounts
		beyondEnd  commitsBeyondEnd
	)
	for _, name := range in.names {
		lags = in.idx.GroupLags(lags[:0], name, in.snap.At, appendTime)
		methods.Add(lags)
		beyondEnd.add(lags)
		aggregates = lag.Aggregate(aggregates, lags)
		if s.health != nil {
			d, described := in.described[name]
			var gh health.GroupHealth
			if in.unread[name] {
				gh = s.health.ObserveUnread(name, d, described)
			} else {
				gh = s.health.ObserveGroup(name, d, described, lags)
				out.partitionStatuses(lags, gh.Partitions)
			}
			if in.reported[name] {
				out.groupHealth(gh)
			}
		}
		if s.progress != nil {
			parts := s.progress.ObserveGroup(name, lags, in.snap.At)
			out.partitionDrains(lags, parts)
			topics = progress.Summarize(topics[:0], lags, parts)
			out.groupProgress(topics)
		}
		if s.retention != nil {
			margins = out.retentionMargins(lags, s.retention, margins)
		}
		out.groupLags(lags)
	}
	if s.health != nil {
		s.health.EndScrape()
	}
	if s.progress != nil {
		s.progress.EndScrape()
	}
	s.telemetry.estimates(ctx, methods)
	beyondEnd.report(ctx, s.telemetry, s.logger)
	out.aggregates(aggregates)
	out.partitions(in.gaugedPartitions())
	return out.finish()
}
