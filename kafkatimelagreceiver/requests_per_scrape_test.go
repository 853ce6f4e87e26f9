package kafkatimelagreceiver

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestCounts snapshots the cluster's per-API request counters.
func (k *testKafka) requestCounts() map[int16]int64 {
	out := map[int16]int64{}
	k.counts.Range(func(key, _ any) bool {
		out[key.(int16)] = k.requests(key.(int16))
		return true
	})
	return out
}

func diffCounts(before, after map[int16]int64) map[string]int64 {
	out := map[string]int64{}
	for key, n := range after {
		if d := n - before[key]; d > 0 {
			out[kmsg.NameForKey(key)] = d
		}
	}
	return out
}

func formatCounts(c map[string]int64) string {
	names := make([]string, 0, len(c))
	for n := range c {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s=%d", n, c[n])
	}
	return strings.Join(parts, " ")
}

// TestRequestsPerScrapeByAPI counts the Kafka requests of one steady-state
// scrape, by API, with every committed offset inside its table and with every
// group committed at records older than any table point (cold). 3 brokers,
// 300 partitions, 20 groups = 6,000 group-partitions. With health metrics on,
// DescribeGroups adds one request per coordinator.
func TestRequestsPerScrapeByAPI(t *testing.T) {
	const (
		partitions = 300
		groups     = 20
	)
	k := newTestKafka(t, 3)
	k.createTopic("wide", partitions)
	old := time.Now().Add(-time.Hour)
	for p := range int32(partitions) {
		k.produce("wide", p, old, old.Add(time.Second))
	}
	commitAll := func(offset int64) {
		offsets := map[int32]int64{}
		for p := range int32(partitions) {
			offsets[p] = offset
		}
		for g := range groups {
			k.commit(fmt.Sprintf("group-%02d", g), "wide", offsets)
		}
	}

	measure := func(name string, s *timeLagScraper) map[string]int64 {
		before := k.requestCounts()
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		counts := diffCounts(before, k.requestCounts())
		t.Logf("%-42s %s (time lag points: %d)", name, formatCounts(counts), len(pointsOf(md, "kafka.consumer_group.time_lag")))
		return counts
	}

	// Cold: every group is at offset 0, a record an hour old.
	commitAll(0)
	s := startScraper(t, k.testConfig())
	first := measure("cold, first scrape:", s)
	require.LessOrEqual(t, first["ListOffsets"], int64(3))
	require.LessOrEqual(t, first["OffsetFetch"], int64(3), "one batched OffsetFetch per coordinator")
	require.LessOrEqual(t, first["Fetch"], int64(3), "one record Fetch per broker")
	require.LessOrEqual(t, first["DescribeGroups"], int64(3))
	steadyCold := measure("cold, steady (commits unchanged):", s)
	require.Zero(t, steadyCold["Fetch"], "record timestamps are cached")
	require.Zero(t, steadyCold["FindCoordinator"], "coordinators are cached")
	// The counter also sees the test's own franz-go client, which may
	// refresh its metadata at any time; the receiver's is cached.
	require.LessOrEqual(t, steadyCold["Metadata"], int64(1))

	// Warm: commits inside the table (the scrapes above put end offset 2
	// into it), so no record is read.
	commitAll(2)
	for p := range int32(partitions) {
		k.produce("wide", p, time.Now())
	}
	require.NoError(t, s.sampler.sampleOnce(context.Background(), false))
	warm := measure("in table:", s)
	require.Zero(t, warm["Fetch"])
	require.LessOrEqual(t, warm["ListOffsets"], int64(3))
	require.LessOrEqual(t, warm["OffsetFetch"], int64(3))
	total := int64(0)
	for _, n := range warm {
		total += n
	}
	t.Logf("%d group-partitions on 3 brokers: %d requests per steady scrape", partitions*groups, total)
}
