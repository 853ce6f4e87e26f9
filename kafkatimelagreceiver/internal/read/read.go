// Package read reads one scrape's consistent snapshot of the cluster: the
// monitored groups, their committed offsets, the end offsets (through the
// sampler's tables), the record timestamps no table can date, and the
// groups' descriptions.
package read

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/filter"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/ownership"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/retention"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// Reader reads the scrapes' snapshots. Its fields are set before the first
// Read; Cluster may be set last (the receiver's start).
type Reader struct {
	Cluster        kafka.Cluster
	Tables         *timetable.Store
	Records        *recordcache.Cache
	Groups, Topics *filter.Filter
	// GroupIncludes and TopicIncludes, when set, watch the include regexes
	// of Groups and Topics: one that matches nothing is logged.
	GroupIncludes, TopicIncludes *filter.IncludeWatch
	// Describe: the groups are described (some group-health metric is on).
	Describe bool
	// StartOffsets and StableOffsets: the log start and last stable offsets
	// are read too.
	StartOffsets, StableOffsets bool
	// Retention, when set, is kept up to date with the retention settings
	// of the topics read and the sizes of their partitions deleting by size
	// (some retention margin is on), and the log start changes the tables
	// keep (timetable.Store.WatchStartChanges) are taken at each read.
	Retention *retention.Cache
	// MaxRecordReads is the least number of partitions whose records a
	// scrape reads (readPartitions); 0: none.
	MaxRecordReads int
	// MaxRecordReadBytes bounds the bytes a scrape's record reads (Fetch)
	// ask with TimeIndex (dating.Options.MaxReadBytes; 0: none).
	MaxRecordReadBytes int64
	// TimeIndex dates records from the brokers' time index where it can
	// (dating.Options.TimeIndex).
	TimeIndex bool
	// RateWindow, when set, is the window partitions' production rates are
	// estimated over (some metric needs them).
	RateWindow time.Duration
	// KeepUnwantedFor is how long a partial read keeps the tables of
	// partitions no group was seen committing on.
	KeepUnwantedFor time.Duration
	// Now tells when a scrape wanted each table, and when a record read
	// was received.
	Now func() time.Time
	// UntimedRecords, when set, counts the records read that give no time,
	// by why (attribute timestamp).
	UntimedRecords metric.Int64Counter
	Logger         *zap.Logger
	Shares         ShareSettings

	// readDenied are the topics whose record reads an ACL refused lately:
	// not read again for a while (readDeniedFor).
	readDenied readDenials
	// known is, with coordination, what the last whole reads of the
	// groups' commits found (readCommitted).
	known groupCommits
}

// Input is what one scrape read, and the append times dated from it:
// values that nothing changes once Read returned them. The tables and the
// records read stay the Reader's.
type Input struct {
	Snap  *lag.Snapshot
	Index *lag.Index
	// Estimates are the append times of the records the lagging groups
	// consume next, and the partitions' production rates (dating.Date).
	Estimates *lag.Estimates
	// Points is how many points the tables held once the scrape read;
	// ClocksOff and LargestClockOffset the producers' clocks measured off
	// (recordcache.Cache.ClocksOff).
	Points             int
	ClocksOff          int
	LargestClockOffset time.Duration
	// Gauged, with coordination, are the partitions whose gauges this
	// replica writes (ownership.Split); nil: all of Index's.
	Gauged map[kafka.TopicPartition]struct{}
	// Reports, with coordination, is this replica's share: it writes the
	// series of the topics it owns (ownership.Owner.OwnsTopic); nil: all.
	// Its groups' partitions on other topics are read for their health
	// alone.
	Reports *ownership.Owner
	// Groups are the groups to compute, sorted by name: the reported
	// groups and every group with commits.
	Groups []Group
	Shares []ShareGroup // the share groups reported, sorted by name
	Pairs  int          // (group, partition) pairs with a commit
	// Owned is how many groups this replica reports, with coordination;
	// Tracked how many partitions have a table.
	Owned, Tracked int
	// Retention is what is known of the retention of the partitions read,
	// and StartChanges how their log starts changed since the last read
	// (with Reader.Retention).
	Retention    retention.Limits
	StartChanges []timetable.StartChange
}

// Group is what a scrape read of one group.
type Group struct {
	Name string
	// Reported: listed, matching the filter and not denied; its health is
	// reported.
	Reported bool
	// Unread: reported, but its committed offsets could not be read; its
	// status is not known.
	Unread      bool
	Described   bool
	Description kafka.GroupDescription
	// Foreign, with coordination: another replica reports the group; only
	// its commits on this replica's topics were read.
	Foreign bool
}

// Served tells, with coordination, whether the read got any of the share
// it was asked for: some of its groups' commits, when it has groups, and
// some of their partitions' end offsets, when they commit on any.
func (in *Input) Served() bool {
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

// Read reads the scrape's snapshot, of the groups owner gives this
// replica (nil: every group), in steps: the groups and their commits, the
// share groups' start offsets, the partitions to track, their offsets,
// the groups' descriptions, and the records no table dates. Committed
// offsets are read before end offsets: a commit landing between the two
// reads can then only overstate the lag, never make it negative. What
// fails partly is added to errs; the error returned means nothing could be
// read.
func (r *Reader) Read(ctx context.Context, owner *ownership.Owner, denials *kafka.Denials, errs *scrapererror.ScrapeErrors) (*Input, error) {
	p := &pass{owner: owner, denials: denials, errs: errs, complete: true}
	if err := r.readCommits(ctx, p); err != nil {
		return nil, err
	}
	r.readShares(ctx, p)
	p.partitions = r.track(p.committed, p.shares.tracked(p.gauged), p.complete)
	r.readOffsets(ctx, p)
	r.describeGroups(ctx, p)
	in := &Input{Snap: p.snap, Index: p.idx, Gauged: p.gauged, Owned: p.owned, Tracked: len(p.partitions)}
	if p.reports != nil {
		in.Reports = p.owner
	}
	in.Estimates = r.dateRecords(ctx, p)
	r.measured(in)
	if r.Retention != nil {
		in.Retention, in.StartChanges = r.Retention.Limits(), r.Tables.TakeStartChanges()
	}
	in.Groups, in.Pairs = groupReads(p.groups, p.committedPairs, p.unread, p.described, p.foreign)
	in.Shares = r.describeShareGroups(ctx, p.shares, denials, errs)
	return in, nil
}

// pass is what one Read carries from step to step.
type pass struct {
	owner   *ownership.Owner
	denials *kafka.Denials
	errs    *scrapererror.ScrapeErrors
	// complete: every group and its commits were read.
	complete bool
	// groups are the groups this replica reports; committed their
	// commits on the topics watched, partlyRead the partitions of a group
	// whose commits could not all be read, unread the reported groups
	// whose commits were not read at all.
	groups     []string
	committed  map[string]kafka.Commits
	partlyRead map[string][]kafka.TopicPartition
	// committedPairs is how many partitions each group of committed has,
	// kept once the index holds the commits (index).
	committedPairs map[string]int
	unread         map[string]bool
	shares         *shareRead
	// gauged, with coordination, are the partitions whose gauges this
	// replica writes; owned how many groups it reports; reports tells
	// the topics whose series it writes (nil: all); foreign are the groups
	// another replica reports whose commits on its topics it computes;
	// partial the groups whose commits it read on its topics only.
	gauged     map[kafka.TopicPartition]struct{}
	owned      int
	reports    func(topic string) bool
	foreign    map[string]bool
	partial    map[string]bool
	partitions []kafka.TopicPartition
	snap       *lag.Snapshot
	idx        *lag.Index
	described  map[string]kafka.GroupDescription
}

// readCommits lists the groups, keeps those the filter and the owner give
// this replica, and reads their committed offsets on the topics watched.
func (r *Reader) readCommits(ctx context.Context, p *pass) error {
	allGroups, err := r.Cluster.ConsumerGroups(ctx)
	if err != nil {
		if len(allGroups) == 0 {
			return fmt.Errorf("list consumer groups: %w", err)
		}
		p.errs.AddPartial(1, fmt.Errorf("list consumer groups: %w", err))
		p.complete = false
	}
	if p.complete {
		r.watchIncludes(r.GroupIncludes, "groups", "consumer group of the cluster", allGroups)
	}
	groups := allGroups[:0:0]
	for _, g := range allGroups {
		if r.Groups.Matches(g) {
			groups = append(groups, g)
		}
	}
	committed, partial, asked, err := r.readCommitted(ctx, p.owner, groups)
	p.partlyRead, p.partial = r.keptPartitions(kafka.UnreadPartitions(err)), partial
	if err = p.denials.Split(err); err != nil {
		p.errs.AddPartial(len(asked)-len(committed), err)
		p.complete = false
	}
	// What was denied is not described or judged either: nothing is known.
	groups = p.denials.Allowed(groups)
	// Before the topic filter empties groups: a group left without commits
	// by it was read.
	p.unread = r.unreadGroups(p.denials.Allowed(asked), committed)
	topicsSeen := r.dropExcludedTopics(committed)
	if p.complete {
		r.watchIncludes(r.TopicIncludes, "topics", "topic that a monitored group commits on", slices.Collect(maps.Keys(topicsSeen)))
	}
	p.groups, p.committed = groups, committed
	return nil
}

// readShares reads the share groups' start offsets and, with
// coordination, keeps the commits and share groups this replica reports.
func (r *Reader) readShares(ctx context.Context, p *pass) {
	p.shares = r.readShareOffsets(ctx, p.owner, p.denials, p.errs)
	if p.owner == nil {
		return
	}
	// Every replica reads the commits of the groups it reports whole, and
	// the others' on its own topics (readCommitted); from here on only its
	// own topics, and its own groups, are read and computed.
	share := p.shares.split(p.owner, p.committed, r.known.homesOf(p.groups, p.committed, p.partial))
	p.groups = r.known.reported(p.owner, p.groups, p.committed, share.Home)
	p.foreign = make(map[string]bool, len(share.Committed))
	for g := range share.Committed {
		if !share.Home[g] {
			p.foreign[g] = true
		}
	}
	p.committed, p.gauged, p.reports = share.Committed, share.Gauged, p.owner.OwnsTopic
	p.owned = len(p.groups)
}

// describeGroups describes the groups reported, when their health is. It
// runs after the offset reads, so as not to widen the gap between
// committed and end offsets that the lag is measured across.
func (r *Reader) describeGroups(ctx context.Context, p *pass) {
	if !r.Describe || len(p.groups) == 0 {
		return
	}
	described, err := r.Cluster.DescribeGroups(ctx, p.groups)
	if err = p.denials.Split(err); err != nil {
		p.errs.AddPartial(len(p.groups)-len(described), fmt.Errorf("describe consumer groups: %w", err))
	}
	p.described = described
}

// dateRecords dates the scrape's lagging records (date).
func (r *Reader) dateRecords(ctx context.Context, p *pass) *lag.Estimates {
	est, err := r.date(ctx, p.snap, p.idx, len(p.partitions) > 0, p.reports)
	if err = p.denials.Split(err); err != nil {
		p.errs.AddPartial(0, err)
	}
	return est
}

// Empty is the input of a scrape that read nothing: a snapshot of now.
func (r *Reader) Empty() *Input {
	snap := &lag.Snapshot{At: r.Now().UnixNano()}
	idx := lag.NewIndex(snap)
	in := &Input{Snap: snap, Index: idx, Estimates: lag.Estimate(idx, nil)}
	r.measured(in)
	return in
}

// measured sets what in says of the tables and the producers' clocks.
func (r *Reader) measured(in *Input) {
	in.Points = r.Tables.Points()
	in.ClocksOff, in.LargestClockOffset = r.Records.ClocksOff()
}
