// Package compute is a scrape's computation, between its read (package
// read) and its points (package emit): from the read's dated records it
// goes group by group, so that only one group's lags are held at a time,
// computing each group's lags, health, progress and retention margins and
// handing them to the writer, which only writes; then the per-(group,
// topic) aggregates and the per-partition gauges. It does no I/O, reads no
// clock and changes nothing the read returned, append times included
// (read.Input.Estimates).
package compute

import (
	"fmt"
	"slices"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/emit"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/health"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/ownership"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/progress"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/read"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/retention"
)

// Computer computes the scrapes; what it carries from one to the next is
// in its trackers. Its fields are set before the first Scrape; Retention
// may be set last (the receiver's start).
type Computer struct {
	// Health, when set, judges the groups' health (some group-health
	// metric is on).
	Health *health.Tracker
	// Progress, when set, follows the groups' consumption (some metric
	// needs it).
	Progress *progress.Tracker
	// Retention, when set, computes the retention margins from the read's
	// retention limits (some retention margin is on), following the log
	// starts' moves from scrape to scrape.
	Retention *retention.Tracker
	// Owners: the partitions' owners are written (with Health).
	Owners bool
	// ProduceRates: the topics' production rates are written (some metric
	// needs them; the read estimates the partitions').
	ProduceRates bool
}

// Tally is what a scrape's computation counted, for the receiver's own
// telemetry.
type Tally struct {
	// Methods counts the time lag estimates by method.
	Methods lag.MethodCounts
	// BeyondEnd counts the pairs committed above their partition's end
	// offset, reported as caught up (lag 0), which hides a topic recreated
	// under its groups, a truncated log, or a consumer committing what it
	// never read; BeyondEndExamples names the first MaxBeyondEndExamples.
	BeyondEnd         int64
	BeyondEndExamples []string
	// EndOffsetUnread, CommitUnread and TimeLagUnknown count the values
	// left out rather than folded over part of the partitions they name,
	// by reason: a partition's end offset not read, a group's committed
	// offset (share-partition state) on one not read, a time lag not
	// estimated.
	EndOffsetUnread, CommitUnread, TimeLagUnknown int64
	// MarginUnknown counts the (group, topic) retention margins left out:
	// a limit applies whose prediction could not be made (a time lag, a
	// partition's size, or its production rate not known; the size when
	// DescribeLogDirs was refused).
	MarginUnknown int64
}

// MaxBeyondEndExamples bounds the pairs Tally.BeyondEndExamples names.
const MaxBeyondEndExamples = 10

// Scrape computes the scrape in read and writes it to out. now is the
// clock's reading at the scrape, whose monotonic part tells the progress
// tracker of wall clock steps since the last one.
func (c *Computer) Scrape(in *read.Input, out *emit.Scrape, now time.Time) Tally {
	at := in.Snap.At
	est := in.Estimates
	if c.Retention != nil {
		c.Retention.Observe(in.StartChanges, at)
	}
	if c.Health != nil {
		c.Health.BeginScrape(at)
	}
	if c.Progress != nil {
		c.Progress.BeginScrape(now)
	}
	var (
		tally      Tally
		lags       []lag.PartitionLag
		aggregates []lag.TopicLag
		topics     []progress.Topic
		margins    margins
	)
	if c.groupsUnread(in.Groups) {
		out.GroupsUnread(false)
	}
	// all are a group's lags on every topic, for its health; mine those on
	// the topics this replica reports, with coordination.
	var all, mine []lag.PartitionLag
	for i := range in.Groups {
		g := &in.Groups[i]
		all = est.GroupLags(all[:0], g.Name, at)
		if c.Health != nil && !g.Foreign {
			c.judge(g, all, out, &tally)
		}
		lags = all
		if in.Reports != nil {
			mine = reported(mine[:0], all, in.Reports)
			lags = mine
		}
		tally.Methods.Add(lags)
		tally.addBeyondEnd(lags)
		aggregates = lag.Aggregate(aggregates, lags)
		var parts []progress.Partition
		if c.Progress != nil && g.Unread {
			c.Progress.ObserveUnread(g.Name)
		} else if c.Progress != nil {
			parts = c.Progress.ObserveGroup(g.Name, lags, at)
			out.PartitionDrains(lags, parts)
			topics = progress.Summarize(topics[:0], lags, parts)
			out.GroupProgress(topics)
		}
		if c.Retention != nil {
			tally.MarginUnknown += margins.write(c.Retention, lags, parts, in.Retention, at, out)
		}
		out.Pairs(lags)
	}
	if c.Health != nil {
		c.Health.EndScrape()
	}
	if c.Progress != nil {
		c.Progress.EndScrape()
	}
	tally.addAggregates(aggregates)
	out.Aggregates(aggregates)
	c.shareGroups(in, est, out, &tally)
	parts := est.Gauges(in.Gauged)
	out.Partitions(parts)
	if c.ProduceRates {
		out.TopicProduceRates(lag.TopicProduceRates(parts))
	}
	return tally
}

// reported appends to dst the lags of all on the topics reports owns: with
// coordination, a group's partitions on another replica's topics are read
// for its health alone, and that replica writes their series.
func reported(dst, all []lag.PartitionLag, reports *ownership.Owner) []lag.PartitionLag {
	topic, ok := "", false
	for i := range all {
		if t := all[i].Topic; i == 0 || t != topic {
			topic, ok = t, reports.OwnsTopic(t)
		}
		if ok {
			dst = append(dst, all[i])
		}
	}
	return dst
}

// margins are the buffers of one scrape's retention margins, reused from
// group to group.
type margins struct {
	pairs  []retention.Margin
	topics []retention.TopicMargin
}

// write computes one group's retention margins, per pair and per topic,
// and writes those known; an unknown one withholds the points reduced over
// it, and is counted in what it returns. parts are the group's progress in
// the order of lags (nil: not followed).
func (m *margins) write(tracker *retention.Tracker, lags []lag.PartitionLag, parts []progress.Partition, limits retention.Limits, at int64, out *emit.Scrape) (unknown int64) {
	m.pairs = tracker.Margins(m.pairs[:0], lags, parts, limits, at)
	for i, pm := range m.pairs {
		switch pm.Outcome {
		case retention.Known:
			out.PartitionRetentionMargin(&lags[i], pm.Seconds, pm.Basis.String())
		case retention.Unknown:
			out.PartitionRetentionMarginUnknown(&lags[i])
		}
	}
	m.topics = retention.TopicMargins(m.topics[:0], lags, m.pairs)
	for _, tm := range m.topics {
		if tm.Outcome == retention.Known {
			out.RetentionMargin(tm.Group, tm.Topic, tm.Seconds, tm.Basis.String())
		} else {
			out.RetentionMarginUnknown(tm.Group, tm.Topic)
			unknown++
		}
	}
	return unknown
}

// groupsUnread tells whether a reported group was not read whole: its
// committed offsets, or its description when group health is computed.
func (c *Computer) groupsUnread(groups []read.Group) bool {
	for i := range groups {
		g := &groups[i]
		if g.Reported && (g.Unread || c.Health != nil && !g.Described) {
			return true
		}
	}
	return false
}

// judge observes one group's health and writes its statuses; a group with
// lags whose status the tracker left unjudged is a status withheld.
func (c *Computer) judge(g *read.Group, lags []lag.PartitionLag, out *emit.Scrape, tally *Tally) {
	var gh health.GroupHealth
	if g.Unread {
		gh = c.Health.ObserveUnread(g.Name, g.Description, g.Described)
	} else {
		gh = c.Health.ObserveGroup(g.Name, g.Description, g.Described, lags)
		out.PartitionStatuses(lags, gh.Partitions)
		if gh.Unjudged && len(lags) > 0 {
			if slices.ContainsFunc(lags, func(pl lag.PartitionLag) bool { return pl.CommitUnread }) {
				tally.CommitUnread++
			} else {
				tally.EndOffsetUnread++
			}
		}
	}
	if g.Reported {
		if c.Owners && gh.Described && gh.Description.State != kafka.GroupStateUnknown {
			gh.Owners = health.PartitionOwners(gh.Description)
		}
		out.GroupHealth(gh)
	}
}

// shareGroups writes each reported share group's per-partition gauges,
// state and members, then the per-(share group, topic) aggregates, which
// are over every partition of the group on the topic or left out (and
// counted in tally).
func (c *Computer) shareGroups(in *read.Input, est *lag.Estimates, out *emit.Scrape, tally *Tally) {
	var (
		lags       []lag.SharePartitionLag
		aggregates []lag.TopicLag
	)
	for _, g := range in.Shares {
		if g.Unread || g.DescribeFailed {
			out.GroupsUnread(true)
		}
		if g.Described {
			out.ShareGroup(g.Name, g.Description)
		}
		if g.Unread {
			continue
		}
		lags = est.ShareGroupLags(lags[:0], g.Name, in.Snap.At)
		tally.Methods.AddShares(lags)
		tally.addSharesBeyondEnd(lags)
		aggregates = lag.AggregateShares(aggregates, lags)
		out.SharePairs(lags)
	}
	tally.addAggregates(aggregates)
	out.ShareAggregates(aggregates)
}

func (t *Tally) addBeyondEnd(lags []lag.PartitionLag) {
	for i := range lags {
		pl := &lags[i]
		if !pl.HasEnd || pl.Committed <= pl.End {
			continue
		}
		t.BeyondEnd++
		if len(t.BeyondEndExamples) < MaxBeyondEndExamples {
			t.BeyondEndExamples = append(t.BeyondEndExamples, fmt.Sprintf("%s %s/%d committed %d, end %d", pl.Group, pl.Topic, pl.Partition, pl.Committed, pl.End))
		}
	}
}

// addSharesBeyondEnd counts the share-group pairs whose start offset is
// above their partition's end offset, as commits beyond the end are.
func (t *Tally) addSharesBeyondEnd(lags []lag.SharePartitionLag) {
	for i := range lags {
		sl := &lags[i]
		if !sl.BeyondEnd {
			continue
		}
		t.BeyondEnd++
		if len(t.BeyondEndExamples) < MaxBeyondEndExamples {
			t.BeyondEndExamples = append(t.BeyondEndExamples, fmt.Sprintf("share group %s %s/%d start offset %d, end %d", sl.Group, sl.Topic, sl.Partition, sl.StartOffset, sl.End))
		}
	}
}

func (t *Tally) addAggregates(aggs []lag.TopicLag) {
	for i := range aggs {
		switch {
		case aggs[i].CommitsUnread > 0:
			t.CommitUnread++
		case !aggs[i].HasLag:
			t.EndOffsetUnread++
		case !aggs[i].HasTimeLag:
			t.TimeLagUnknown++
		}
	}
}
