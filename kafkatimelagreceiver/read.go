package kafkatimelagreceiver

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/sampler"
)

// scrapeInput is what one scrape read from Kafka.
type scrapeInput struct {
	snap *lag.Snapshot
	idx  *lag.Index
	// gauged, with coordination, are the partitions whose gauges this
	// replica writes (ownership.Split); nil: all of idx's.
	gauged map[kafka.TopicPartition]struct{}
	// names are the groups to compute, sorted: the reported groups and
	// every group with commits.
	names []string
	// reported are the groups whose health is reported: listed, matching
	// the filter and not denied.
	reported map[string]bool
	// unread are the reported groups whose committed offsets could not be
	// read: their status is not known.
	unread    map[string]bool
	described map[string]kafka.GroupDescription
	pairs     int // (group, partition) pairs with a commit
}

// read reads the scrape's snapshot. Committed offsets are read before end
// offsets: a commit landing between the two reads can then only overstate
// the lag, never make it negative. What fails partly is added to errs; the
// error returned means nothing could be read.
func (s *timeLagScraper) read(ctx context.Context, denials *kafka.Denials, errs *scrapererror.ScrapeErrors) (*scrapeInput, error) {
	owner, joined, err := s.owner(ctx)
	if err != nil {
		return nil, err
	}
	if !joined {
		// Not a member (yet): another replica may own any group.
		snap := &lag.Snapshot{At: time.Now().UnixNano()}
		idx := s.index(snap)
		return &scrapeInput{snap: snap, idx: idx}, nil
	}
	// complete is whether every group and its commits were read.
	complete := true
	allGroups, err := s.cluster.ConsumerGroups(ctx)
	if err != nil {
		if len(allGroups) == 0 {
			return nil, fmt.Errorf("list consumer groups: %w", err)
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
	committed, err := s.cluster.CommittedOffsets(ctx, groups)
	if err = denials.Split(err); err != nil {
		errs.AddPartial(len(groups)-len(committed), err)
		complete = false
	}
	// What was denied is not described or judged either: nothing is known.
	groups = denials.Allowed(groups)
	var gauged map[kafka.TopicPartition]struct{} // nil: all
	if owner != nil {
		// Every replica reads every group's commits (one request per
		// coordinator either way) to agree on who gauges each partition;
		// from here on only its own groups are read and computed.
		groups = owner.Groups(groups)
	}
	// Before the topic filter empties groups: a group left without commits
	// by it was read.
	unread := s.unreadGroups(groups, committed)
	s.dropExcludedTopics(committed)
	if owner != nil {
		committed, gauged = owner.Split(committed)
		s.telemetry.coordinationGroups(ctx, len(groups))
	}
	partitions := s.track(committed, complete)

	// With nothing to read, the snapshot is of now; otherwise it is
	// stamped with the end-offset read.
	snap := &lag.Snapshot{At: time.Now().UnixNano(), Committed: committed, End: map[kafka.TopicPartition]int64{}, Start: s.tables.StartOffsets()}
	var idx *lag.Index
	if len(partitions) > 0 {
		withStart := s.cfg.Metrics.KafkaPartitionOldestOffset.Enabled
		end, start, err := sampler.Read(ctx, s.cluster, s.tables, partitions, sampler.ReadOptions{
			WithStart: withStart,
			// Restored tables may be another cluster's until it says
			// otherwise: ask before they date anything.
			WithIdentity: !s.tables.Identified(),
			Logger:       s.logger,
		})
		if err = denials.Split(err); err != nil {
			missing := len(partitions) - len(end.Offsets)
			if withStart {
				missing += len(partitions) - len(start.Offsets)
			}
			errs.AddPartial(missing, err)
		}
		s.records.Forget(s.tables.TakeResets())
		if s.cfg.Metrics.KafkaConsumerGroupStableLag.Enabled {
			// After the committed offsets too, so that a commit between the
			// reads can only overstate the stable lag.
			stable, err := s.cluster.StableOffsets(ctx, partitions)
			if err = denials.Split(err); err != nil {
				errs.AddPartial(len(partitions)-len(stable.Offsets), fmt.Errorf("read last stable offsets: %w", err))
			}
			snap.Stable = stable.Offsets
		}
		snap.End = end.Offsets
		snap.At = end.Received.UnixNano()
		if withStart {
			snap.Start = s.tables.StartOffsets()
		}
		idx, err = s.readOutOfTableRecords(ctx, snap)
		if err = denials.Split(err); err != nil {
			errs.AddPartial(0, err)
		}
		if s.retention != nil {
			// The topics whose end offsets were read: those a lag is
			// reported on.
			err := s.retention.Refresh(ctx, topicsOf(end.Offsets), s.now())
			if err = denials.Split(err); err != nil {
				errs.AddPartial(0, fmt.Errorf("read topics' retention: %w", err))
			}
		}
	} else {
		idx = s.index(snap)
	}

	// Described after the offset reads, so as not to widen the gap between
	// committed and end offsets that the lag is measured across.
	var described map[string]kafka.GroupDescription
	if s.health != nil && len(groups) > 0 {
		described, err = s.cluster.DescribeGroups(ctx, groups)
		if err = denials.Split(err); err != nil {
			errs.AddPartial(len(groups)-len(described), fmt.Errorf("describe consumer groups: %w", err))
		}
	}
	s.telemetry.tables(ctx, len(partitions), s.tables.Points())

	in := &scrapeInput{snap: snap, idx: idx, gauged: gauged, reported: make(map[string]bool, len(groups)), unread: unread, described: described}
	in.names = append([]string(nil), groups...)
	for group, offsets := range committed {
		in.pairs += len(offsets)
		in.names = append(in.names, group)
	}
	slices.Sort(in.names)
	in.names = slices.Compact(in.names)
	for _, g := range groups {
		in.reported[g] = true
	}
	return in, nil
}

// unreadGroups returns the groups whose committed offsets were not read (a
// group read with no commit at all is in committed, empty) and says so in
// the debug log: their lags and status are left out of this scrape.
func (s *timeLagScraper) unreadGroups(groups []string, committed map[string]map[kafka.TopicPartition]int64) map[string]bool {
	var names []string
	for _, g := range groups {
		if _, ok := committed[g]; !ok {
			names = append(names, g)
		}
	}
	if len(names) == 0 {
		return nil
	}
	s.logger.Debug("committed offsets of consumer groups could not be read: their lags and status omitted from this scrape",
		zap.Int("groups_unread", len(names)), zap.Strings("groups", kafka.TruncateNames(names)))
	unread := make(map[string]bool, len(names))
	for _, g := range names {
		unread[g] = true
	}
	return unread
}

// unwantedTableLifetime is how long the table of a partition no group was
// seen committing on is kept while some group or coordinator cannot be
// read: long enough to ride out a coordinator restart or a broker outage,
// short enough that groups and topics churning meanwhile cannot grow the
// tables, the saved state and the sampler's work without bound. A group
// that comes back after it has its time lag from record timestamps until
// its table refills.
const unwantedTableLifetime = time.Hour

// keepUnwantedFor is unwantedTableLifetime, or three scrapes when those
// are longer, so that one partial scrape never drops a table the previous
// one wanted.
func (s *timeLagScraper) keepUnwantedFor() time.Duration {
	return max(unwantedTableLifetime, 3*s.cfg.CollectionInterval)
}

// dropExcludedTopics drops the commits on topics the filter excludes, and
// the groups left without commits.
func (s *timeLagScraper) dropExcludedTopics(committed map[string]map[kafka.TopicPartition]int64) {
	topicOK := map[string]bool{} // the topic filter, once per topic
	for group, offsets := range committed {
		for tp := range offsets {
			ok, seen := topicOK[tp.Topic]
			if !seen {
				ok = s.topics.matches(tp.Topic)
				topicOK[tp.Topic] = ok
			}
			if !ok {
				delete(offsets, tp)
			}
		}
		if len(offsets) == 0 {
			delete(committed, group)
		}
	}
}

// track makes the committed partitions the tables' tracked set and returns
// them, sorted.
func (s *timeLagScraper) track(committed map[string]map[kafka.TopicPartition]int64, complete bool) []kafka.TopicPartition {
	tracked := map[kafka.TopicPartition]struct{}{}
	for _, offsets := range committed {
		for tp := range offsets {
			tracked[tp] = struct{}{}
		}
	}
	// A partial read cannot tell a partition no group commits on any more
	// from one whose group or coordinator could not be read: the tables of
	// partitions it does not name are kept for a while, so that history
	// survives an outage, but not for ever.
	var keep time.Duration
	if !complete {
		keep = s.keepUnwantedFor()
	}
	partitions, dropped := s.tables.Track(tracked, s.now(), keep)
	if dropped > 0 {
		s.logger.Debug("dropped tables of partitions no longer tracked", zap.Int("tables", dropped), zap.Bool("complete_read", complete))
	}
	return partitions
}

// index indexes the snapshot's partitions, each with its table.
func (s *timeLagScraper) index(snap *lag.Snapshot) *lag.Index {
	idx := lag.NewIndex(snap)
	idx.ResolveTables(s.tables)
	return idx
}

// readOutOfTableRecords reads the timestamps of the records no table can
// date (lag.OutOfTable), at most max_record_reads_per_scrape of them. A
// record that is gone was deleted by retention: the partition's log start
// is read and the oldest record still there is read instead. It returns the
// snapshot's index, rebuilt when log starts were read.
func (s *timeLagScraper) readOutOfTableRecords(ctx context.Context, snap *lag.Snapshot) (*lag.Index, error) {
	idx := s.index(snap)
	budget := s.cfg.MaxRecordReadsPerScrape
	missing, used := lag.OutOfTable(idx, snap.At, s.tables, s.records)
	if len(missing) > budget {
		s.logger.Debug("record reads capped for this scrape", zap.Int("wanted", len(missing)), zap.Int("cap", budget))
		missing = missing[:budget]
	}
	var errs []error
	if len(missing) > 0 {
		found, err := s.cluster.RecordTimestamps(ctx, missing)
		errs = append(errs, err)
		budget -= len(missing)
		s.records.PutAll(found)
		var gone []kafka.TopicPartition
		for _, at := range missing {
			if _, ok := found[at]; !ok {
				gone = append(gone, at.TopicPartition)
			}
		}
		if len(gone) > 0 {
			kafka.SortPartitions(gone)
			startRead, err := s.cluster.StartOffsets(ctx, slices.Compact(gone))
			errs = append(errs, err)
			s.tables.RecordStart(startRead)
			for tp, start := range startRead.Offsets {
				snap.Start[tp] = start
			}
			idx = s.index(snap)
			retry, usedNow := lag.OutOfTable(idx, snap.At, s.tables, s.records)
			for at := range usedNow {
				used[at] = struct{}{}
			}
			if len(retry) > budget {
				retry = retry[:budget]
			}
			if len(retry) > 0 {
				found, err := s.cluster.RecordTimestamps(ctx, retry)
				errs = append(errs, err)
				s.records.PutAll(found)
			}
		}
	}
	s.records.Retain(used)
	return idx, kafka.Join(errs...)
}

// topicsOf lists the topics of the partitions, sorted.
func topicsOf(partitions map[kafka.TopicPartition]int64) []string {
	seen := map[string]bool{}
	var topics []string
	for tp := range partitions {
		if !seen[tp.Topic] {
			seen[tp.Topic] = true
			topics = append(topics, tp.Topic)
		}
	}
	slices.Sort(topics)
	return topics
}
