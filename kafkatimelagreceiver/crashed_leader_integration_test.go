package kafkatimelagreceiver

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// crash stops broker node the way a crashed broker does: every open
// connection to it is dropped (kfake's RemoveNode alone only closes its
// listener, and goes on serving the connections already open), its
// listener closes and its partitions get new leaders.
func (k *testKafka) crash(t *testing.T, node int32) {
	t.Helper()
	k.Cluster.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		k.Cluster.KeepControl()
		if k.Cluster.CurrentNode() == node {
			return nil, errors.New("broker crashed"), true
		}
		return nil, nil, false
	})
	require.NoError(t, k.Cluster.RemoveNode(node))
}

// TestCrashedLeaderPartitionsReadFromNewLeaders: a broker that led a third
// of the partitions crashes. The first request to it fails at the
// transport; that refreshes the metadata, and its partitions are read from
// their new leaders in the same scrape and sample, not after the
// background refresh (10 min by default).
func TestCrashedLeaderPartitionsReadFromNewLeaders(t *testing.T) {
	requireNoLeakedGoroutines(t)
	k := newTestKafka(t, 3)
	const partitions = 6
	k.CreateTopic("orders", partitions)
	for p := range int32(partitions) {
		require.NoError(t, k.Cluster.MoveTopicPartition("orders", p, p%3))
	}
	base := time.Now().Add(-time.Minute)
	offsets := map[int32]int64{}
	for p := range int32(partitions) {
		k.Produce("orders", p, base, base.Add(time.Second))
		offsets[p] = 1
	}
	// Coordinated by brokers that stay: a coordinator's move is a
	// different fault.
	groups := groupsCoordinatedBy(t, k, 2, 0)
	for _, g := range groups {
		k.Commit(g, "orders", offsets)
	}
	s := startScraper(t, faultConfig(k))
	want := len(groups) * partitions
	got, _, err := lagCount(s)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.NoError(t, s.sampler.Sample(t.Context(), false))
	points := s.tables.Points()

	k.crash(t, 2)
	for p := range int32(partitions) {
		require.NotEqual(t, int32(2), k.Cluster.LeaderFor("orders", p))
	}
	for p := range int32(partitions) {
		k.Produce("orders", p, time.Now())
	}
	require.NoError(t, s.sampler.Sample(t.Context(), false), "the sample reads the crashed broker's partitions from their new leaders")
	require.Equal(t, points+partitions, s.tables.Points(), "a point for every partition")
	got, md, err := lagCount(s)
	require.Equal(t, want, got, "every partition's lag in the first scrape after the crash: %v", err)
	for key, p := range pointsOf(md, "kafka.consumer_group.lag") {
		require.Equal(t, int64(2), p.intValue, "%v", key)
	}
}
