package read_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/filter"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/read"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

var errClosed = errors.New("kafka: tried to use a client that was closed")

// newReader reads cluster with empty tables, every group, the topics
// excludeTopics does not exclude, and no record read.
func newReader(t *testing.T, cluster kafka.Cluster, excludeTopics []string) *read.Reader {
	all, err := filter.New(nil, nil)
	require.NoError(t, err)
	topics, err := filter.New(nil, excludeTopics)
	require.NoError(t, err)
	return &read.Reader{
		Cluster: cluster,
		Tables:  timetable.NewStore(100, time.Hour, nil),
		Records: recordcache.New(),
		Groups:  all, Topics: topics,
		KeepUnwantedFor: time.Minute,
		Now:             time.Now,
		Logger:          zap.NewNop(),
	}
}

// closedUnderScrape is a cluster whose client was closed between the
// committed-offset read and the end-offset read (a shutdown racing the
// scrape): the end-offset read asks nothing and returns no times. Any
// other call panics on the nil Cluster.
type closedUnderScrape struct {
	kafka.Cluster
}

func (closedUnderScrape) ConsumerGroups(context.Context) ([]string, error) {
	return []string{"billing"}, nil
}

func (closedUnderScrape) CommittedOffsets(context.Context, []string) (map[string]kafka.Commits, error) {
	return map[string]kafka.Commits{"billing": {{TopicPartition: kafka.TopicPartition{Topic: "orders", Partition: 0}, Offset: 5}}}, nil
}

func (closedUnderScrape) Identify(context.Context, []string) (*kafka.Identity, error) {
	return nil, errClosed
}

func (closedUnderScrape) EndOffsets(context.Context, []kafka.TopicPartition) (kafka.OffsetRead, error) {
	return kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{}}, errClosed
}

// TestClosedClientDoesNotStampYearOne: an end-offset read that asked
// nothing (zero Received) leaves the snapshot stamped with the time of the
// scrape, not with the zero time (year 1, or an overflowed UnixNano), which
// every point of the scrape would carry.
func TestClosedClientDoesNotStampYearOne(t *testing.T) {
	r := newReader(t, closedUnderScrape{}, nil)
	var errs scrapererror.ScrapeErrors
	before := time.Now()
	in, err := r.Read(t.Context(), nil, kafka.NewDenials(), &errs)
	after := time.Now()
	require.NoError(t, err)
	require.ErrorContains(t, errs.Combine(), errClosed.Error(), "the failed read is reported")
	require.Empty(t, in.Snap.End)
	at := time.Unix(0, in.Snap.At)
	require.False(t, at.Before(before) || at.After(after), "snapshot at %v, scrape between %v and %v", at, before, after)
}

// filteredTopics is a cluster with one group committed on an included
// topic and two excluded ones, and a group committed only on excluded
// ones; every end offset is 10. Any other call panics on the nil Cluster.
type filteredTopics struct {
	kafka.Cluster
	asked []kafka.TopicPartition // the end offsets asked for
}

func (*filteredTopics) ConsumerGroups(context.Context) ([]string, error) {
	return []string{"billing", "internal"}, nil
}

func (*filteredTopics) CommittedOffsets(context.Context, []string) (map[string]kafka.Commits, error) {
	return kafka.CommitsByGroup(map[string]map[kafka.TopicPartition]int64{
		"billing": {
			{Topic: "__internal", Partition: 0}: 1,
			{Topic: "audit", Partition: 0}:      2,
			{Topic: "audit", Partition: 1}:      2,
			{Topic: "orders", Partition: 0}:     3,
			{Topic: "orders", Partition: 1}:     4,
			{Topic: "zebra.dlq", Partition: 0}:  5,
		},
		"internal": {{Topic: "__internal", Partition: 1}: 1},
	}), nil
}

func (*filteredTopics) Identify(context.Context, []string) (*kafka.Identity, error) {
	return &kafka.Identity{ClusterID: "c"}, nil
}

func (f *filteredTopics) EndOffsets(_ context.Context, partitions []kafka.TopicPartition) (kafka.OffsetRead, error) {
	f.asked = append(f.asked, partitions...)
	now := time.Now()
	read := kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{}, Sent: now, Received: now}
	for _, tp := range partitions {
		read.Offsets[tp] = 10
	}
	return read, nil
}

// TestExcludedTopicsAreNotRead: commits on topics the filter excludes are
// dropped before anything else is read, whichever run of a group's sorted
// commits they are in; a group left with none is not computed.
func TestExcludedTopicsAreNotRead(t *testing.T) {
	cluster := &filteredTopics{}
	r := newReader(t, cluster, []string{"^__", "^audit$", `\.dlq$`})
	var errs scrapererror.ScrapeErrors
	in, err := r.Read(t.Context(), nil, kafka.NewDenials(), &errs)
	require.NoError(t, err)
	require.NoError(t, errs.Combine())
	orders := []kafka.TopicPartition{{Topic: "orders", Partition: 0}, {Topic: "orders", Partition: 1}}
	require.Equal(t, orders, cluster.asked, "only the included topic's end offsets are read")
	require.Equal(t, 2, in.Pairs)
	var indexed []kafka.TopicPartition
	for _, p := range in.Index.Parts {
		indexed = append(indexed, p.TopicPartition)
	}
	require.Equal(t, orders, indexed)
	require.Equal(t, []read.Group{{Name: "billing", Reported: true}, {Name: "internal", Reported: true}}, in.Groups,
		"both listed groups are reported; internal has nothing left to compute")
	lags := in.Estimates.GroupLags(nil, "billing", in.Snap.At)
	require.Len(t, lags, 2)
	require.Equal(t, []int64{7, 6}, []int64{lags[0].Lag, lags[1].Lag})
	require.Empty(t, in.Estimates.GroupLags(nil, "internal", in.Snap.At))
	require.Nil(t, in.Snap.Committed, "the index holds the commits: the scrape lets them go")
}

// A replica's read served its share when it read some of its groups'
// commits (if it owns any) and some of their partitions' end offsets (if
// they commit on any).
func TestServed(t *testing.T) {
	read1 := []read.Group{{Name: "a", Reported: true}, {Name: "b", Reported: true, Unread: true}}
	unread := []read.Group{{Name: "a", Reported: true, Unread: true}, {Name: "b", Reported: true, Unread: true}}
	ends := map[kafka.TopicPartition]int64{{Topic: "t", Partition: 0}: 5}
	for _, tc := range []struct {
		name string
		in   read.Input
		want bool
	}{
		{"owns no group", read.Input{Snap: &lag.Snapshot{}}, true},
		{"no group's commits read", read.Input{Snap: &lag.Snapshot{End: ends}, Groups: unread, Owned: 2, Pairs: 0}, false},
		{"commits but no end offset read", read.Input{Snap: &lag.Snapshot{}, Groups: read1, Owned: 2, Pairs: 3}, false},
		{"commits and end offsets read", read.Input{Snap: &lag.Snapshot{End: ends}, Groups: read1, Owned: 2, Pairs: 3}, true},
		{"groups read with no commit", read.Input{Snap: &lag.Snapshot{}, Groups: read1, Owned: 2}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.in.Served())
		})
	}
}

// A replica whose share is share groups only has read it when it read the
// start offsets of one of them; reading none is not serving it.
func TestServedCountsShareGroups(t *testing.T) {
	snap := &lag.Snapshot{End: map[kafka.TopicPartition]int64{}}
	unread := &read.Input{Snap: snap, Shares: []read.ShareGroup{{Name: "a", Unread: true}, {Name: "b", Unread: true}}}
	require.False(t, unread.Served(), "no share group read")
	someRead := &read.Input{Snap: snap, Shares: []read.ShareGroup{{Name: "a", Unread: true}, {Name: "b"}}}
	require.True(t, someRead.Served(), "part of the share is worth keeping")
	require.True(t, (&read.Input{Snap: snap}).Served(), "no group to read")
}
