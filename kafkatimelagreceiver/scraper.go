package kafkatimelagreceiver

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

// gapSamples is how many sampling intervals may pass between two table
// points before the stretch between them counts as unwatched.
const gapSamples = 3

// timeLagScraper reads one consistent snapshot of the cluster per scrape and
// turns it into metrics. It owns the sampler, which runs between scrapes.
type timeLagScraper struct {
	cfg      *Config
	logger   *zap.Logger
	mb       *metadata.MetricsBuilder
	groups   *nameFilter
	topics   *nameFilter
	tables   *tableStore
	records  *recordTimes
	requests *requestMetrics

	// newCluster builds the Kafka access layer; tests swap it.
	newCluster func() (cluster, error)
	cluster    cluster
	sampler    *sampler
	receiverID component.ID
	health     *healthTracker // created at the first scrape
	state      *stateStorage

	// startTime and buildVersion are what the MetricsBuilder stamps; the
	// gauges built without it (emit_direct.go) carry the same.
	startTime    pcommon.Timestamp
	buildVersion string
	telemetry    *selfTelemetry
	// push, when set, sends chunks of a large scrape's per-pair gauges to
	// the next consumer while the scrape is built (emit_direct.go).
	push pushFunc
}

func newTimeLagScraper(cfg *Config, settings receiver.Settings) (*timeLagScraper, error) {
	groups, err := newNameFilter("groups", cfg.Groups)
	if err != nil {
		return nil, err
	}
	topics, err := newNameFilter("topics", cfg.Topics)
	if err != nil {
		return nil, err
	}
	s := &timeLagScraper{
		cfg:        cfg,
		logger:     settings.Logger,
		mb:         metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, settings),
		groups:     groups,
		topics:     topics,
		tables:     newTableStore(cfg.MaxSamples),
		records:    newRecordTimes(),
		requests:   newRequestMetrics(),
		receiverID: settings.ID,

		startTime:    pcommon.NewTimestampFromTime(time.Now()),
		buildVersion: settings.BuildInfo.Version,
	}
	// Three missed samples make a gap: one late sample is noise, not an outage.
	s.tables.maxGap = int64(gapSamples * cfg.SamplingInterval)
	tb, err := metadata.NewTelemetryBuilder(settings.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("self-telemetry: %w", err)
	}
	s.telemetry = &selfTelemetry{builder: tb}
	s.requests.telemetry = tb
	s.newCluster = func() (cluster, error) {
		return newSaramaCluster(cfg, settings.Logger, s.requests)
	}
	return s, nil
}

// start builds the Kafka access layer (which connects lazily, so a cluster
// that is down does not stop the collector) and starts the sampler.
func (s *timeLagScraper) start(ctx context.Context, host component.Host) error {
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
	s.sampler = &sampler{
		cluster:   cl,
		tables:    s.tables,
		interval:  s.cfg.SamplingInterval,
		timeout:   s.cfg.requestTimeout(),
		logger:    s.logger,
		onReset:   s.records.forget,
		telemetry: s.telemetry,
	}
	s.sampler.start()
	return nil
}

func (s *timeLagScraper) shutdown(ctx context.Context) error {
	if s.sampler != nil {
		s.sampler.stop()
	}
	defer s.telemetry.shutdown()
	var errs []error
	if s.state != nil {
		errs = append(errs, s.state.stop(ctx))
	}
	if s.cluster != nil {
		errs = append(errs, s.cluster.close())
	}
	return errors.Join(errs...)
}

func (s *timeLagScraper) scrape(ctx context.Context) (pmetric.Metrics, error) {
	if s.cluster == nil {
		return pmetric.NewMetrics(), errors.New("scrape before start")
	}
	defer s.telemetry.scrapeDone(ctx, time.Now())
	var errs scrapererror.ScrapeErrors
	// Groups and topics an ACL denies are skipped with one warning per
	// scrape instead of failing it: a denial is a standing decision, and
	// the rest of the cluster is still worth reporting.
	denied := newDeniedSet()
	defer denied.warn(s.logger, "scrape")
	// complete is whether every group and its commits were read.
	complete := true

	// Committed offsets are read before end offsets: a commit landing between
	// the two reads can then only overstate the lag, never make it negative.
	allGroups, err := s.cluster.consumerGroups(ctx)
	if err != nil {
		if len(allGroups) == 0 {
			return pmetric.NewMetrics(), fmt.Errorf("list consumer groups: %w", err)
		}
		errs.AddPartial(1, fmt.Errorf("list consumer groups: %w", err))
		complete = false
	}
	groups := allGroups[:0:0]
	for _, g := range allGroups {
		if s.groups.matches(g) {
			groups = append(groups, g)
		}
	}
	committed, err := s.cluster.committedOffsets(ctx, groups)
	if err = denied.filter(err); err != nil {
		errs.AddPartial(len(groups)-len(committed), err)
		complete = false
	}
	// What was denied is not described or judged either: nothing is known.
	groups = denied.allowedGroups(groups)
	tracked := map[topicPartition]struct{}{}
	topicOK := map[string]bool{} // the topic filter, once per topic
	for group, offsets := range committed {
		for tp := range offsets {
			ok, seen := topicOK[tp.topic]
			if !seen {
				ok = s.topics.matches(tp.topic)
				topicOK[tp.topic] = ok
			}
			if !ok {
				delete(offsets, tp)
				continue
			}
			tracked[tp] = struct{}{}
		}
		if len(offsets) == 0 {
			delete(committed, group)
		}
	}
	if !complete {
		// A partial read cannot tell a partition no group commits on any
		// more from one whose group or coordinator could not be read: keep
		// every table until a complete read says which are gone, so that
		// history survives a broker outage.
		for _, tp := range s.tables.partitions() {
			tracked[tp] = struct{}{}
		}
	}
	if dropped := s.tables.track(tracked); dropped > 0 {
		s.logger.Debug("dropped tables of partitions no longer tracked", zap.Int("tables", dropped))
	}
	partitions := make([]topicPartition, 0, len(tracked))
	for tp := range tracked {
		partitions = append(partitions, tp)
	}
	sortPartitions(partitions)

	// With nothing to read, the snapshot is of now; otherwise it is re-stamped
	// with the end-offset read below.
	snap := &snapshot{at: time.Now().UnixNano(), committed: committed, end: map[topicPartition]int64{}, start: s.tables.startOffsets()}
	var idx *partitionIndex
	if len(partitions) > 0 {
		read, err := s.cluster.endOffsets(ctx, partitions)
		if err = denied.filter(err); err != nil {
			errs.AddPartial(len(partitions)-len(read.offsets), err)
		}
		s.records.forget(s.tables.record(read))
		snap.end = read.offsets
		snap.at = read.received.UnixNano()
		if s.cfg.Metrics.KafkaPartitionOldestOffset.Enabled {
			startRead, err := s.cluster.startOffsets(ctx, partitions)
			if err = denied.filter(err); err != nil {
				errs.AddPartial(len(partitions)-len(startRead.offsets), err)
			}
			s.tables.recordStart(startRead)
			snap.start = s.tables.startOffsets()
		}
		idx, err = s.readOutOfTableRecords(ctx, snap, s.index(snap))
		if err = denied.filter(err); err != nil {
			errs.AddPartial(0, err)
		}
	}

	// Described after the offset reads, so as not to widen the gap between
	// committed and end offsets that the lag is measured across.
	described, err := s.describeGroups(ctx, groups)
	if err = denied.filter(err); err != nil {
		errs.AddPartial(len(groups)-len(described), err)
	}

	s.telemetry.tables(ctx, len(tracked), s.tables.points())
	if idx == nil {
		idx = s.index(snap)
	}
	md, err := s.report(ctx, snap, idx, groups, described)
	if err != nil {
		// The points were read; the pipeline refused them (and counted them
		// as refused): not a failed scrape point.
		errs.AddPartial(0, err)
	}
	return md, errs.Combine()
}

// report turns the snapshot into metrics, group by group, so that only one
// group's lags are held at a time: the per-pair gauges (pushed to the next
// consumer in chunks when the scrape is large), the group health and the
// per-topic aggregates. What is not pushed is returned, to go out with the
// scrape.
func (s *timeLagScraper) report(ctx context.Context, snap *snapshot, idx *partitionIndex, groups []string, described map[string]groupDescription) (pmetric.Metrics, error) {
	total := 0
	names := append([]string(nil), groups...)
	for group, offsets := range snap.committed {
		total += len(offsets)
		names = append(names, group)
	}
	names = dedupeStrings(names)
	reported := make(map[string]bool, len(groups))
	for _, g := range groups {
		reported[g] = true
	}

	pushCtx := ctx
	if _, ok := ctx.Deadline(); !ok {
		// A pipeline that does not take a chunk (an exporter waiting on a
		// backend that is down) must not hold the scrape, and the shutdown
		// that waits for it, forever: by the next scrape the chunk is stale.
		var cancel context.CancelFunc
		pushCtx, cancel = context.WithTimeout(ctx, s.cfg.CollectionInterval)
		defer cancel()
	}
	pairs := s.newPairEmitter(pushCtx, snap, total)
	healthOn := s.groupHealthEnabled()
	var onStatus func(partitionLag, healthStatus)
	if healthOn {
		if s.health == nil {
			s.health = newHealthTracker(s.cfg.Status.Window, s.cfg.Status.MaxTimeLag.Seconds())
		}
		s.health.beginScrape()
		if s.cfg.Metrics.KafkaConsumerGroupPartitionStatus.Enabled {
			onStatus = pairs.addStatus
		}
	}
	appendTime := s.appendTimeFunc(snap)
	var (
		lags       []partitionLag
		aggregates []topicLag
		health     []groupHealth
		methods    methodCounts
	)
	for _, name := range names {
		lags = groupLags(lags[:0], name, idx, snap.at, appendTime)
		methods.add(lags)
		aggregates = aggregateLags(aggregates, lags)
		if healthOn {
			d, ok := described[name]
			gh := s.health.observeGroup(name, d, ok, lags, onStatus)
			if reported[name] {
				health = append(health, gh)
			}
		}
		for _, pl := range lags {
			pairs.add(pl)
		}
	}
	if healthOn {
		s.health.endScrape()
	}
	s.telemetry.estimates(ctx, methods)
	s.recordGroupHealth(snap, health)
	s.emit(snap, aggregates)
	direct := pmetric.NewMetricSlice()
	err := pairs.finish(direct)
	s.emitPartitions(direct, snap.at, idx.parts)
	return s.withDirect(s.mb.Emit(), direct), err
}

// index indexes the snapshot's partitions, each with its table.
func (s *timeLagScraper) index(snap *snapshot) *partitionIndex {
	idx := indexSnapshot(snap)
	s.tables.resolveTables(idx.parts)
	return idx
}

func (s *timeLagScraper) appendTimeFunc(snap *snapshot) appendTimeFunc {
	return func(p *indexedPartition, c int64) (int64, estimateMethod, bool) {
		// The scrape's own end-offset read is the newest point there is.
		upper := offsetSample{offset: p.end, at: snap.at}
		at, inTable, gap := s.tables.estimateIn(p.table, c, upper)
		if inTable && !gap {
			return at, methodTable, true
		}
		if ts, ok := s.records.get(recordAt{p.topicPartition, c}); ok {
			return ts.timestamp, methodRecord, true
		}
		if inTable {
			// An unwatched stretch, and no record read this time (capped):
			// the straight line is still the best guess there is.
			return at, methodTable, true
		}
		return 0, methodNone, false
	}
}

// outOfTable lists the records whose append time no table can tell well: the
// oldest unconsumed record of a lagging group, older than its table or inside
// a stretch of it that was not watched (the collector or Kafka was down).
func (s *timeLagScraper) outOfTable(snap *snapshot, idx *partitionIndex) (missing []recordAt, used map[recordAt]struct{}) {
	used = map[recordAt]struct{}{}
	for _, commits := range idx.commits {
		for _, rc := range commits {
			p := &idx.parts[rc.rank]
			if !p.hasEnd {
				continue
			}
			from := consumeFrom(rc.committed, p.start, p.hasStart)
			if from >= p.end {
				continue
			}
			if _, ok, gap := s.tables.estimateIn(p.table, from, offsetSample{offset: p.end, at: snap.at}); ok && !gap {
				continue
			}
			at := recordAt{p.topicPartition, from}
			if _, seen := used[at]; seen {
				continue
			}
			used[at] = struct{}{}
			if _, ok := s.records.get(at); !ok {
				missing = append(missing, at)
			}
		}
	}
	// The furthest behind first: when the cap bites, the worst lags are the
	// ones worth knowing.
	sort.Slice(missing, func(i, j int) bool {
		li, lj := snap.end[missing[i].topicPartition]-missing[i].offset, snap.end[missing[j].topicPartition]-missing[j].offset
		if li != lj {
			return li > lj
		}
		if missing[i].topic != missing[j].topic {
			return missing[i].topic < missing[j].topic
		}
		return missing[i].partition < missing[j].partition
	})
	return missing, used
}

// readOutOfTableRecords reads the timestamps of out-of-table records, at most
// max_record_reads_per_scrape of them. A record that is gone was deleted by
// retention: the partition's log start is read and the oldest record still
// there is read instead.
//
// It returns the index of the snapshot, rebuilt when log starts were read.
func (s *timeLagScraper) readOutOfTableRecords(ctx context.Context, snap *snapshot, idx *partitionIndex) (*partitionIndex, error) {
	budget := s.cfg.MaxRecordReadsPerScrape
	missing, used := s.outOfTable(snap, idx)
	if len(missing) > budget {
		s.logger.Debug("record reads capped for this scrape", zap.Int("wanted", len(missing)), zap.Int("cap", budget))
		missing = missing[:budget]
	}
	var errs []error
	if len(missing) > 0 {
		found, err := s.cluster.recordTimestamps(ctx, missing)
		errs = append(errs, err)
		budget -= len(missing)
		s.records.putAll(found)
		var gone []topicPartition
		for _, at := range missing {
			if _, ok := found[at]; !ok {
				gone = append(gone, at.topicPartition)
			}
		}
		if len(gone) > 0 {
			startRead, err := s.cluster.startOffsets(ctx, dedupePartitions(gone))
			errs = append(errs, err)
			s.tables.recordStart(startRead)
			for tp, start := range startRead.offsets {
				snap.start[tp] = start
			}
			idx = s.index(snap)
			retry, usedNow := s.outOfTable(snap, idx)
			for at := range usedNow {
				used[at] = struct{}{}
			}
			if len(retry) > budget {
				retry = retry[:budget]
			}
			if len(retry) > 0 {
				found, err := s.cluster.recordTimestamps(ctx, retry)
				errs = append(errs, err)
				s.records.putAll(found)
			}
		}
	}
	s.records.retain(used)
	return idx, errors.Join(errs...)
}

func dedupePartitions(tps []topicPartition) []topicPartition {
	seen := make(map[topicPartition]struct{}, len(tps))
	out := tps[:0:0]
	for _, tp := range tps {
		if _, ok := seen[tp]; !ok {
			seen[tp] = struct{}{}
			out = append(out, tp)
		}
	}
	sortPartitions(out)
	return out
}

// emit records the per-topic aggregates and flushes the builder; all points
// carry the instant the end offsets were read.
func (s *timeLagScraper) emit(snap *snapshot, aggregates []topicLag) {
	ts := pcommon.Timestamp(snap.at)
	for _, agg := range aggregates {
		if agg.hasLag {
			s.mb.RecordKafkaConsumerGroupLagSumDataPoint(ts, agg.lagSum, agg.group, agg.topic)
			s.mb.RecordKafkaConsumerGroupLagMaxDataPoint(ts, agg.lagMax, agg.group, agg.topic)
		}
		if agg.hasTimeLag {
			s.mb.RecordKafkaConsumerGroupTimeLagMaxDataPoint(ts, agg.timeLagMax, agg.group, agg.topic)
		}
	}
	rb := s.mb.NewResourceBuilder()
	if s.cfg.ClusterAlias != "" {
		rb.SetKafkaClusterAlias(s.cfg.ClusterAlias)
	}
	s.mb.EmitForResource(metadata.WithResource(rb.Emit()))
}
