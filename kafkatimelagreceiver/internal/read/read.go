// Package read reads one scrape's consistent snapshot of the cluster: the
// monitored groups, their committed offsets, the end offsets (through the
// sampler's tables), the record timestamps no table can date, and the
// groups' descriptions.
package read

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/filter"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/ownership"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/retention"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/sampler"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// Reader reads the scrapes' snapshots. Its fields are set before the first
// Read; Cluster may be set last (the receiver's start).
type Reader struct {
	Cluster        kafka.Cluster
	Tables         *timetable.Store
	Records        *lag.RecordTimes
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
	// (lag.RecordTimes.ClocksOff).
	Points             int
	ClocksOff          int
	LargestClockOffset time.Duration
	// Gauged, with coordination, are the partitions whose gauges this
	// replica writes (ownership.Split); nil: all of Index's.
	Gauged map[kafka.TopicPartition]struct{}
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
}

// groupReads lists the groups reported or with commits, sorted by name,
// and counts the pairs with a commit.
func groupReads(reported []string, committed map[string]kafka.Commits, unread map[string]bool, described map[string]kafka.GroupDescription) ([]Group, int) {
	out := make([]Group, 0, len(reported)+len(committed))
	for _, g := range reported {
		d, ok := described[g]
		out = append(out, Group{Name: g, Reported: true, Unread: unread[g], Described: ok, Description: d})
	}
	pairs := 0
	for g, offsets := range committed {
		pairs += len(offsets)
		out = append(out, Group{Name: g})
	}
	// A reported group with commits is listed twice: the reported one
	// sorts first and stays.
	slices.SortStableFunc(out, func(a, b Group) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), -cmp.Compare(boolInt(a.Reported), boolInt(b.Reported)))
	})
	out = slices.CompactFunc(out, func(a, b Group) bool { return a.Name == b.Name })
	return out, pairs
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
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
// replica (nil: every group). Committed offsets are read before end
// offsets: a commit landing between the two reads can then only overstate
// the lag, never make it negative. What fails partly is added to errs; the
// error returned means nothing could be read.
func (r *Reader) Read(ctx context.Context, owner *ownership.Owner, denials *kafka.Denials, errs *scrapererror.ScrapeErrors) (*Input, error) {
	// complete is whether every group and its commits were read.
	complete := true
	allGroups, err := r.Cluster.ConsumerGroups(ctx)
	if err != nil {
		if len(allGroups) == 0 {
			return nil, fmt.Errorf("list consumer groups: %w", err)
		}
		errs.AddPartial(1, fmt.Errorf("list consumer groups: %w", err))
		complete = false
	}
	if complete {
		r.watchIncludes(r.GroupIncludes, "groups", "consumer group of the cluster", allGroups)
	}
	groups := allGroups[:0:0]
	for _, g := range allGroups {
		if r.Groups.Matches(g) {
			groups = append(groups, g)
		}
	}
	committed, err := r.Cluster.CommittedOffsets(ctx, groups)
	partlyRead := r.keptPartitions(kafka.UnreadPartitions(err))
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
	unread := r.unreadGroups(groups, committed)
	topicsSeen := r.dropExcludedTopics(committed)
	if complete {
		r.watchIncludes(r.TopicIncludes, "topics", "topic that a monitored group commits on", slices.Collect(maps.Keys(topicsSeen)))
	}
	shares := r.readShareOffsets(ctx, owner, denials, errs)
	owned := 0
	if owner != nil {
		committed, gauged = shares.split(owner, committed)
		owned = len(groups)
	}
	partitions := r.track(committed, shares.tracked(gauged), complete)

	// With nothing to read, the snapshot is of now; otherwise it is
	// stamped with the end-offset read.
	snap := &lag.Snapshot{At: r.Now().UnixNano(), Committed: committed, End: map[kafka.TopicPartition]int64{}, Start: r.Tables.StartOffsets(),
		Shares: shares.owned, CommitsUnread: ownedOnly(partlyRead, committed), SharesUnread: shares.partlyRead}
	var idx *lag.Index
	if len(partitions) > 0 {
		withStart := r.StartOffsets
		end, start, err := sampler.Read(ctx, r.Cluster, r.Tables, partitions, sampler.ReadOptions{
			WithStart: withStart,
			// Restored tables may be another cluster's until it says
			// otherwise: ask before they date anything.
			WithIdentity: !r.Tables.Identified(),
			Logger:       r.Logger,
		})
		if err = denials.Split(err); err != nil {
			missing := len(partitions) - len(end.Offsets)
			if withStart {
				missing += len(partitions) - len(start.Offsets)
			}
			errs.AddPartial(missing, err)
		}
		r.Records.Forget(r.Tables.TakeResets())
		if r.StableOffsets {
			// After the committed offsets too, so that a commit between the
			// reads can only overstate the stable lag.
			stable, err := r.Cluster.StableOffsets(ctx, partitions)
			if err = denials.Split(err); err != nil {
				errs.AddPartial(len(partitions)-len(stable.Offsets), fmt.Errorf("read last stable offsets: %w", err))
			}
			snap.Stable = stable.Offsets
		}
		snap.End = end.Offsets
		if !end.Received.IsZero() { // zero: nothing was asked (the client closed under the scrape)
			snap.At = end.Received.UnixNano()
		}
		if withStart {
			snap.Start = r.Tables.StartOffsets()
		}
		idx = r.index(snap)
		if r.Retention != nil {
			// The partitions whose end offsets were read: those a lag is
			// reported on.
			err := r.Retention.Refresh(ctx, end.Offsets, r.Now())
			if err = denials.Split(err); err != nil {
				errs.AddPartial(0, fmt.Errorf("read topics' retention: %w", err))
			}
		}
	} else {
		idx = r.index(snap)
	}

	// Described after the offset reads, so as not to widen the gap between
	// committed and end offsets that the lag is measured across.
	var described map[string]kafka.GroupDescription
	if r.Describe && len(groups) > 0 {
		described, err = r.Cluster.DescribeGroups(ctx, groups)
		if err = denials.Split(err); err != nil {
			errs.AddPartial(len(groups)-len(described), fmt.Errorf("describe consumer groups: %w", err))
		}
	}
	in := &Input{Snap: snap, Index: idx, Gauged: gauged, Owned: owned, Tracked: len(partitions)}
	in.Estimates, err = r.date(ctx, snap, idx, len(partitions) > 0)
	if err = denials.Split(err); err != nil {
		errs.AddPartial(0, err)
	}
	r.measured(in)
	if r.Retention != nil {
		in.Retention, in.StartChanges = r.Retention.Limits(), r.Tables.TakeStartChanges()
	}
	in.Groups, in.Pairs = groupReads(groups, committed, unread, described)
	in.Shares = r.describeShareGroups(ctx, shares, denials, errs)
	return in, nil
}

// track makes the committed and gauged partitions the tables' tracked set
// and returns them, sorted.
func (r *Reader) track(committed map[string]kafka.Commits, gauged map[kafka.TopicPartition]struct{}, complete bool) []kafka.TopicPartition {
	tracked := maps.Clone(gauged)
	if tracked == nil {
		tracked = map[kafka.TopicPartition]struct{}{}
	}
	for _, tp := range lag.Partitions(committed) {
		tracked[tp] = struct{}{}
	}
	// A partial read cannot tell a partition no group commits on any more
	// from one whose group or coordinator could not be read: the tables of
	// partitions it does not name are kept for a while, so that history
	// survives an outage, but not for ever.
	var keep time.Duration
	if !complete {
		keep = r.KeepUnwantedFor
	}
	partitions, dropped := r.Tables.Track(tracked, r.Now(), keep)
	if dropped > 0 {
		r.Logger.Debug("dropped tables of partitions no longer tracked", zap.Int("tables", dropped), zap.Bool("complete_read", complete))
	}
	return partitions
}

// index indexes the snapshot's partitions, each with its table.
func (r *Reader) index(snap *lag.Snapshot) *lag.Index {
	idx := lag.NewIndex(snap)
	idx.ResolveTables(r.Tables)
	return idx
}

// Empty is the input of a scrape that read nothing: a snapshot of now.
func (r *Reader) Empty() *Input {
	snap := &lag.Snapshot{At: r.Now().UnixNano()}
	idx := r.index(snap)
	in := &Input{Snap: snap, Index: idx, Estimates: lag.Estimate(idx, nil)}
	r.measured(in)
	return in
}

// measured sets what in says of the tables and the producers' clocks.
func (r *Reader) measured(in *Input) {
	in.Points = r.Tables.Points()
	in.ClocksOff, in.LargestClockOffset = r.Records.ClocksOff()
}
