package kafkatimelagreceiver

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kafkacount"
)

// TestRequestsPerScrapeByAPI counts the Kafka requests of one steady-state
// scrape, by API, with every committed offset inside its table and with every
// group committed at records older than any table point (cold). 3 brokers,
// 300 partitions, 20 groups = 6,000 group-partitions. With health metrics on,
// DescribeGroups adds one request per coordinator. On partitions whose end
// offset stands still, the records at lagging groups' offsets are read once
// (a transaction marker is not data).
func TestRequestsPerScrapeByAPI(t *testing.T) {
	const (
		partitions = 300
		groups     = 20
	)
	k := newTestKafka(t, 3)
	k.CreateTopic("wide", partitions)
	old := time.Now().Add(-time.Hour)
	for p := range int32(partitions) {
		k.Produce("wide", p, old, old.Add(time.Second))
	}
	commitAll := func(offset int64) {
		offsets := map[int32]int64{}
		for p := range int32(partitions) {
			offsets[p] = offset
		}
		for g := range groups {
			k.Commit(fmt.Sprintf("group-%02d", g), "wide", offsets)
		}
	}

	measure := func(name string, s *timeLagScraper) kafkacount.Counts {
		before := k.Counts.Snapshot()
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		counts := k.Counts.Snapshot().Since(before)
		t.Logf("%-42s %s (time lag points: %d)", name, counts, len(pointsOf(md, "kafka.consumer_group.time_lag")))
		return counts
	}

	// Cold: every group is at offset 0, a record an hour old.
	commitAll(0)
	s := startScraper(t, k.testConfig())
	first := measure("cold, first scrape:", s)
	require.LessOrEqual(t, first.Of(kmsg.ListOffsets), int64(3))
	require.LessOrEqual(t, first.Of(kmsg.OffsetFetch), int64(3), "one batched OffsetFetch per coordinator")
	require.LessOrEqual(t, first.Of(kmsg.Fetch), int64(3), "one record Fetch per broker")
	require.LessOrEqual(t, first.Of(kmsg.DescribeGroups), int64(3))
	require.Zero(t, first.Of(kmsg.FindCoordinator), "the listing names every group's coordinator")
	steadyCold := measure("cold, steady (commits unchanged):", s)
	require.Zero(t, steadyCold.Of(kmsg.Fetch), "record timestamps are cached")
	require.Zero(t, steadyCold.Of(kmsg.FindCoordinator), "coordinators are cached")
	// The counter also sees the test's own franz-go client, which may
	// refresh its metadata at any time; the receiver's is cached.
	require.LessOrEqual(t, steadyCold.Of(kmsg.Metadata), int64(1))

	// Warm: commits inside the table (the scrapes above put end offset 2
	// into it), so no record is read.
	commitAll(2)
	for p := range int32(partitions) {
		k.Produce("wide", p, time.Now())
	}
	require.NoError(t, s.sampler.Sample(context.Background(), false))
	for p := range int32(partitions) {
		k.Produce("wide", p, time.Now()) // still producing at the scrape
	}
	warm := measure("in table:", s)
	require.Zero(t, warm.Of(kmsg.Fetch))
	require.LessOrEqual(t, warm.Of(kmsg.ListOffsets), int64(3))
	require.LessOrEqual(t, warm.Of(kmsg.OffsetFetch), int64(3))
	t.Logf("%d group-partitions on 3 brokers: %d requests per steady scrape", partitions*groups, warm.Total())

	// Production stops with the groups behind: whether what is left is data
	// or transaction markers, only a read tells; one Fetch per broker, then
	// cached while the commits stand.
	idle := measure("in table, idle:", s)
	require.LessOrEqual(t, idle.Of(kmsg.Fetch), int64(3))
	require.Zero(t, measure("in table, idle, steady:", s).Of(kmsg.Fetch))
}

// TestCoordinatorFromListing: every broker lists the groups it coordinates,
// so the listing a scrape sends anyway places every group and no
// FindCoordinator is sent, first scrape included. A group whose coordinator
// then answers NOT_COORDINATOR is looked up the usual way (FindCoordinator)
// and is whole again on the next scrape.
func TestCoordinatorFromListing(t *testing.T) {
	k := newTestKafka(t, 3)
	k.CreateTopic("orders", 6)
	groups := []string{"g-0", "g-1", "g-2", "g-3", "g-4", "g-5"}
	for _, g := range groups {
		k.Commit(g, "orders", map[int32]int64{0: 0, 1: 0})
	}
	s := startScraper(t, k.testConfig())
	scrape := func() (kafkacount.Counts, map[pointKey]int64, error) {
		before := k.Counts.Snapshot()
		md, err := s.scrape(context.Background())
		return k.Counts.Snapshot().Since(before), intValues(pointsOf(md, "kafka.consumer_group.offset")), err
	}

	first, offsets, err := scrape()
	require.NoError(t, err)
	require.Len(t, offsets, 2*len(groups))
	require.Zero(t, first.Of(kmsg.FindCoordinator), "the listing placed every group")

	k.Cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetFetch}, Group: "g-1", Err: kerr.NotCoordinator, Count: 1})
	moved, offsets, err := scrape()
	require.ErrorContains(t, err, "g-1")
	require.Len(t, offsets, 2*(len(groups)-1), "the other groups are still reported")
	require.Positive(t, moved.Of(kmsg.FindCoordinator), "the group the listing misplaced is looked up")

	again, offsets, err := scrape()
	require.NoError(t, err)
	require.Len(t, offsets, 2*len(groups))
	require.Zero(t, again.Of(kmsg.FindCoordinator))
}
