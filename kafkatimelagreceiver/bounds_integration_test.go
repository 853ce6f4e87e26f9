package kafkatimelagreceiver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

// unreadableGroups is a cluster on which the committed offsets of some
// groups fail to read, each with an error of its own, as when their
// coordinator stops answering.
type unreadableGroups struct {
	kafka.Cluster
	failing map[string]bool // their OffsetFetch fails
	extra   map[string]bool // listed besides the cluster's own groups, never described
}

func (u *unreadableGroups) ConsumerGroups(ctx context.Context) ([]string, error) {
	groups, err := u.Cluster.ConsumerGroups(ctx)
	for g := range u.extra {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	return groups, err
}

func (u *unreadableGroups) CommittedOffsets(ctx context.Context, groups []string) (map[string]map[kafka.TopicPartition]int64, error) {
	readable := groups[:0:0]
	var errs []error
	for _, g := range groups {
		if !u.failing[g] && !u.extra[g] {
			readable = append(readable, g)
			continue
		}
		errs = append(errs, &kafka.GroupError{Group: g, Err: fmt.Errorf("fetch committed offsets of group %q from coordinator 7: %w", g, errCoordinatorGone)})
	}
	out, err := u.Cluster.CommittedOffsets(ctx, readable)
	return out, kafka.Join(append(errs, err)...)
}

func (u *unreadableGroups) DescribeGroups(ctx context.Context, groups []string) (map[string]kafka.GroupDescription, error) {
	known := groups[:0:0]
	for _, g := range groups {
		if !u.extra[g] {
			known = append(known, g)
		}
	}
	return u.Cluster.DescribeGroups(ctx, known)
}

var errCoordinatorGone = errors.New("read tcp 10.0.0.7:9092: i/o timeout")

// startScraperWith starts a scraper for cfg logging to logger, whose Kafka
// access goes through wrap.
func startScraperWith(t *testing.T, cfg *Config, logger *zap.Logger, wrap func(kafka.Cluster) kafka.Cluster) *timeLagScraper {
	t.Helper()
	require.NoError(t, cfg.Validate())
	settings := receivertest.NewNopSettings(metadata.Type)
	settings.Logger = logger
	s, err := newTimeLagScraper(cfg, settings, nil)
	require.NoError(t, err)
	build := s.newCluster
	s.newCluster = func(ctx context.Context, host component.Host) (kafka.Cluster, error) {
		c, err := build(ctx, host)
		if err != nil {
			return nil, err
		}
		return wrap(c), nil
	}
	require.NoError(t, s.start(context.Background(), nil))
	t.Cleanup(func() { require.NoError(t, s.shutdown(context.Background())) })
	return s
}

// TestScrapeErrorOfThousandsOfFailedGroupsStaysBounded: a coordinator of
// 5,000 groups stops answering. The scrape still reports the group that
// could be read, and its error, which the collector logs every scrape, names
// a few of the failed groups and counts the others instead of listing them
// all.
func TestScrapeErrorOfThousandsOfFailedGroupsStaysBounded(t *testing.T) {
	k := newTestKafka(t, 1)
	k.CreateTopic("orders", 1)
	k.Produce("orders", 0, time.Now())
	k.Commit("readable", "orders", map[int32]int64{0: 0})
	extra := map[string]bool{}
	for i := range 5000 {
		extra[fmt.Sprintf("lost-group-%04d", i)] = true
	}
	s := startScraperWith(t, k.testConfig(), zap.NewNop(), func(c kafka.Cluster) kafka.Cluster { return &unreadableGroups{Cluster: c, extra: extra} })

	md, err := s.scrape(context.Background())
	require.Error(t, err)
	require.Contains(t, pointsOf(md, "kafka.consumer_group.lag"), pointKey{"readable", "orders", 0})
	require.Less(t, len(err.Error()), 8192, "the scrape error stays bounded: %d bytes", len(err.Error()))
	require.Contains(t, err.Error(), "lost-group-0000")
	require.Contains(t, err.Error(), "more errors")
}
