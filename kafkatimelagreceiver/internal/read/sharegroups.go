package read

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/ownership"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/sampler"
)

// ShareSettings say how a Reader reads share groups (KIP-932): the groups
// whose members acknowledge records one by one, whose start offset (SPSO)
// is the oldest record they have not finished. The groups and topics
// filters are the consumer groups'.
type ShareSettings struct {
	// Client reads share groups; nil: none are read.
	Client kafka.ShareGroups
	// Listed, when set, returns the share groups the cluster's consumer
	// group listing of the same scrape saw, which spares Client a listing
	// of its own (one ListGroups per broker per scrape in all).
	Listed func() []string
	// Describe: the share groups' state and members are read.
	Describe bool

	// said is the reason last logged why share groups cannot be read.
	said string
}

// ShareGroup is what a scrape read of one share group this replica
// reports.
type ShareGroup struct {
	Name string
	// Unread: its start offsets could not be read; it has no lags.
	Unread bool
	// DescribeFailed: it was to be described, and could not be: a value
	// folded over share groups (members summed) may lack its part.
	DescribeFailed bool
	Described      bool
	Description    kafka.ShareGroupDescription
}

// shareRead is what a scrape read of the share groups' offsets.
type shareRead struct {
	// all are the start offsets of every monitored share group, on the
	// topics the filter keeps: every replica reads them all, to agree on
	// who gauges each partition, as it does the consumer groups' commits.
	all map[string][]kafka.ShareOffset
	// owned are those of the groups this replica reports.
	owned map[string][]kafka.ShareOffset
	// partlyRead are, of the groups this replica reports, the partitions
	// whose state could not be read though the group's others were.
	partlyRead map[string][]kafka.TopicPartition
	// groups are the share groups this replica reports, sorted: listed,
	// matching the filter, not denied, owned.
	groups []string
	unread map[string]bool
}

// readShareOffsets lists the monitored share groups and reads their start
// offsets: one DescribeShareGroupOffsets per coordinator for all of them.
// Read before the end offsets, so that a start offset moving between the
// two reads can only overstate the lag. A cluster that cannot serve share
// groups is said once in the log, and is no error.
func (r *Reader) readShareOffsets(ctx context.Context, owner *ownership.Owner, denials *kafka.Denials, errs *scrapererror.ScrapeErrors) *shareRead {
	s := &shareRead{}
	sh := &r.Shares
	if sh.Client == nil {
		return s
	}
	var listed []string
	if sh.Listed != nil {
		listed = sh.Listed()
	} else {
		var err error
		listed, err = sh.Client.ShareGroups(ctx)
		if err = r.shareErr(denials, err); err != nil {
			errs.AddPartial(1, fmt.Errorf("list share groups: %w", err))
		}
	}
	groups := listed[:0:0]
	for _, g := range listed {
		if r.Groups.Matches(g) {
			groups = append(groups, g)
		}
	}
	if len(groups) == 0 {
		return s
	}
	offsets, err := sh.Client.ShareGroupOffsets(ctx, groups)
	if errors.Is(err, kafka.ErrShareGroupsUnsupported) {
		r.shareErr(denials, err)
		return s
	}
	partlyRead := r.keptPartitions(kafka.UnreadPartitions(err))
	if err = r.shareErr(denials, err); err != nil {
		errs.AddPartial(len(groups)-len(offsets), fmt.Errorf("read share groups' start offsets: %w", err))
	}
	groups = denials.Allowed(groups)
	other := r.ofOtherTopicIDs(ctx, offsets)
	for g, tps := range other {
		if partlyRead == nil {
			partlyRead = map[string][]kafka.TopicPartition{}
		}
		partlyRead[g] = append(partlyRead[g], tps...)
		errs.AddPartial(len(tps), fmt.Errorf("share group %q: the state of %d partitions is of an earlier topic of the same name (another topic id: deleted and created again), left out", g, len(tps)))
	}
	s.all = make(map[string][]kafka.ShareOffset, len(offsets))
	for g, o := range offsets {
		if kept := r.keptTopics(o.Partitions); len(kept) > 0 {
			s.all[g] = kept
		}
	}
	if owner != nil {
		groups = owner.Groups(groups)
	}
	s.groups = groups
	s.owned = make(map[string][]kafka.ShareOffset, len(groups))
	for _, g := range groups {
		if _, read := offsets[g]; !read {
			if s.unread == nil {
				s.unread = map[string]bool{}
			}
			s.unread[g] = true
			continue
		}
		if o, ok := s.all[g]; ok {
			s.owned[g] = o
		}
		if tps, ok := partlyRead[g]; ok {
			if s.partlyRead == nil {
				s.partlyRead = map[string][]kafka.TopicPartition{}
			}
			s.partlyRead[g] = tps
		}
	}
	if len(s.unread) > 0 {
		r.Logger.Debug("start offsets of share groups could not be read: their lags omitted from this scrape",
			zap.Int("groups_unread", len(s.unread)))
	}
	return s
}

// ofOtherTopicIDs drops from offsets the states of a topic id other than
// the topic's (a topic deleted and created again under the same name,
// whose old state the coordinator still gave) and returns them by group:
// their partitions were not read. The ids the tables do not know yet are
// asked of the cluster, once a topic.
func (r *Reader) ofOtherTopicIDs(ctx context.Context, offsets map[string]kafka.ShareGroupOffsets) map[string][]kafka.TopicPartition {
	var topics []string
	for _, o := range offsets {
		for _, so := range o.Partitions {
			if !so.TopicID.IsZero() {
				topics = append(topics, so.Topic)
			}
		}
	}
	if len(topics) == 0 {
		return nil
	}
	slices.Sort(topics)
	topics = slices.Compact(topics)
	known := r.Tables.TopicIDs(topics)
	var unknown []string
	for _, topic := range topics {
		if _, ok := known[topic]; !ok {
			unknown = append(unknown, topic)
		}
	}
	if len(unknown) > 0 {
		if err := sampler.Identify(ctx, r.Cluster, r.Tables, unknown, r.Logger); err != nil {
			r.Logger.Debug("topic ids of share groups' topics not read: their states are taken as the topics'", zap.Error(err))
		}
		known = r.Tables.TopicIDs(topics)
	}
	var other map[string][]kafka.TopicPartition
	for g, o := range offsets {
		kept := o.Partitions[:0]
		for _, so := range o.Partitions {
			if id, ok := known[so.Topic]; ok && !so.TopicID.IsZero() && !id.IsZero() && id != so.TopicID {
				if other == nil {
					other = map[string][]kafka.TopicPartition{}
				}
				other[g] = append(other[g], so.TopicPartition)
				continue
			}
			kept = append(kept, so)
		}
		o.Partitions = kept
		offsets[g] = o
	}
	return other
}

// keptPartitions returns, by group, the partitions on the topics the
// filter keeps; nil when there are none.
func (r *Reader) keptPartitions(byGroup map[string][]kafka.TopicPartition) map[string][]kafka.TopicPartition {
	var out map[string][]kafka.TopicPartition
	for g, tps := range byGroup {
		var kept []kafka.TopicPartition
		for _, tp := range tps {
			if r.Topics.Matches(tp.Topic) {
				kept = append(kept, tp)
			}
		}
		if len(kept) == 0 {
			continue
		}
		if out == nil {
			out = map[string][]kafka.TopicPartition{}
		}
		out[g] = kept
	}
	return out
}

// keptTopics returns the offsets on the topics the filter keeps.
func (r *Reader) keptTopics(offsets []kafka.ShareOffset) []kafka.ShareOffset {
	var kept []kafka.ShareOffset
	for _, o := range offsets {
		if r.Topics.Matches(o.Topic) {
			kept = append(kept, o)
		}
	}
	return kept
}

// split is ownership's Split over the consumer groups' commits and the
// share groups' start offsets together: a topic read by share groups only
// is gauged by its owner too. The commits and home groups returned are the
// consumer groups'.
func (s *shareRead) split(owner *ownership.Owner, committed map[string]kafka.Commits, homes map[string]string) ownership.Share {
	if len(s.all) == 0 {
		return owner.Split(committed, homes)
	}
	both := maps.Clone(committed)
	for g, offsets := range s.all {
		if _, consumer := both[g]; consumer {
			continue // group ids are one namespace; a consumer group's commits win
		}
		commits := make(kafka.Commits, len(offsets))
		for i, o := range offsets {
			commits[i] = kafka.Commit{TopicPartition: o.TopicPartition, Offset: o.StartOffset}
		}
		commits.Sort()
		both[g] = commits
	}
	share := owner.Split(both, homes)
	for g := range s.all {
		if _, consumer := committed[g]; !consumer {
			delete(share.Committed, g)
			delete(share.Home, g)
		}
	}
	return share
}

// tracked is gauged with the partitions of the share groups this replica
// reports, whose end offsets and tables it needs; gauged itself is not
// changed. nil gauged stays nil when there are none.
func (s *shareRead) tracked(gauged map[kafka.TopicPartition]struct{}) map[kafka.TopicPartition]struct{} {
	if len(s.owned) == 0 {
		return gauged
	}
	out := maps.Clone(gauged)
	if out == nil {
		out = map[kafka.TopicPartition]struct{}{}
	}
	for _, offsets := range s.owned {
		for _, o := range offsets {
			out[o.TopicPartition] = struct{}{}
		}
	}
	return out
}

// describeShareGroups describes the reported share groups, when asked
// to, after the offset reads (as the consumer groups are), and returns
// what the scrape read of each.
func (r *Reader) describeShareGroups(ctx context.Context, s *shareRead, denials *kafka.Denials, errs *scrapererror.ScrapeErrors) []ShareGroup {
	if len(s.groups) == 0 {
		return nil
	}
	var described map[string]kafka.ShareGroupDescription
	if r.Shares.Describe {
		var err error
		described, err = r.Shares.Client.DescribeShareGroups(ctx, s.groups)
		if err = r.shareErr(denials, err); err != nil {
			errs.AddPartial(len(s.groups)-len(described), fmt.Errorf("describe share groups: %w", err))
		}
	}
	out := make([]ShareGroup, 0, len(s.groups))
	for _, g := range s.groups {
		d, ok := described[g]
		out = append(out, ShareGroup{Name: g, Unread: s.unread[g], DescribeFailed: r.Shares.Describe && !ok, Described: ok, Description: d})
	}
	return out
}

// shareErr is err, less what ACLs denied (Denials) and less the cluster's
// not serving share groups, which it says once in the log instead of
// failing every scrape for it; it says so again only when the reason
// changes, or after share groups were read.
func (r *Reader) shareErr(denials *kafka.Denials, err error) error {
	sh := &r.Shares
	if !errors.Is(err, kafka.ErrShareGroupsUnsupported) {
		if err == nil {
			sh.said = ""
		}
		return denials.Split(err)
	}
	if reason := err.Error(); reason != sh.said {
		sh.said = reason
		r.Logger.Info("share groups are not monitored; consumer groups are", zap.String("reason", reason))
	}
	return nil
}
