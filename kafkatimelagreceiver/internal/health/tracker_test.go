package health

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
)

// partitionHealth is one group's status on one partition after a scrape.
type partitionHealth struct {
	group string
	kafka.TopicPartition
	status Status
}

// healthInput is what one scrape observed.
type healthInput struct {
	groups    []string                          // the groups the scrape reports on
	described map[string]kafka.GroupDescription // the groups described in the scrape
	lags      []lag.PartitionLag                // sorted by group, topic, partition
}

// observe runs one scrape through the tracker as the scraper does: group by
// group in name order, every group of in.groups and of in.lags, returning
// the health of in.groups.
func (t *Tracker) observe(in healthInput) ([]GroupHealth, []partitionHealth) {
	names := append([]string(nil), in.groups...)
	byGroup := map[string][]lag.PartitionLag{}
	for _, pl := range in.lags {
		byGroup[pl.Group] = append(byGroup[pl.Group], pl)
		names = append(names, pl.Group)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	reported := map[string]bool{}
	for _, g := range in.groups {
		reported[g] = true
	}
	var groups []GroupHealth
	var partitions []partitionHealth
	t.BeginScrape(int64(t.scrapes + 1))
	for _, name := range names {
		d, ok := in.described[name]
		lags := byGroup[name]
		gh := t.ObserveGroup(name, d, ok, lags)
		for i, st := range gh.Partitions {
			partitions = append(partitions, partitionHealth{lags[i].Group, lags[i].TopicPartition, st})
		}
		// The buffer is the tracker's: the next group reuses it.
		gh.Partitions = slices.Clone(gh.Partitions)
		if reported[name] {
			groups = append(groups, gh)
		}
	}
	t.EndScrape()
	return groups, partitions
}

func TestTrackerStatuses(t *testing.T) {
	tr := NewTracker(2, 0)
	pl := func(group, topic string, p int32, committed, end int64) lag.PartitionLag {
		return lag.PartitionLag{
			Group: group, TopicPartition: kafka.TopicPartition{Topic: topic, Partition: p},
			Committed: committed, HasEnd: true, End: end, Lag: max(0, end-committed),
		}
	}
	observe := func(lags []lag.PartitionLag, described map[string]kafka.GroupDescription) (map[string]GroupHealth, map[partitionHealth]bool) {
		groups, partitions := tr.observe(healthInput{groups: []string{"gone", "live", "idle"}, described: described, lags: lags})
		byName := map[string]GroupHealth{}
		for _, g := range groups {
			byName[g.Group] = g
		}
		set := map[partitionHealth]bool{}
		for _, p := range partitions {
			set[p] = true
		}
		return byName, set
	}
	tp := func(topic string, p int32) kafka.TopicPartition {
		return kafka.TopicPartition{Topic: topic, Partition: p}
	}
	described := map[string]kafka.GroupDescription{
		"gone": *classicGroup(kafka.GroupStateEmpty),
		"live": *classicGroup(kafka.GroupStateStable, testMember("a", "", 0, 1)),
	}
	observe([]lag.PartitionLag{pl("gone", "t", 0, 5, 9), pl("gone", "t", 1, 9, 9), pl("live", "t", 0, 5, 9), pl("live", "t", 1, 1, 9)}, described)
	groups, partitions := observe([]lag.PartitionLag{
		pl("gone", "t", 0, 5, 10), pl("gone", "t", 1, 9, 9),
		pl("live", "t", 0, 5, 10), pl("live", "t", 1, 0, 9),
	}, described)
	require.Equal(t, StatusStop, groups["gone"].Status, "the worst partition decides")
	require.Equal(t, StatusRewind, groups["live"].Status)
	require.False(t, groups["idle"].StatusKnown, "a group without partitions is not judged")
	require.Equal(t, StatusUnknown, groups["idle"].Status)
	require.False(t, groups["idle"].Described)
	require.True(t, partitions[partitionHealth{"gone", tp("t", 0), StatusStop}])
	require.True(t, partitions[partitionHealth{"gone", tp("t", 1), StatusOK}])
	require.True(t, partitions[partitionHealth{"live", tp("t", 0), StatusStall}])
	require.True(t, partitions[partitionHealth{"live", tp("t", 1), StatusRewind}])

	// A partition whose end offset could not be read keeps its window.
	unread := pl("gone", "t", 0, 5, 0)
	unread.HasEnd, unread.Lag = false, 0
	groups, _ = observe([]lag.PartitionLag{unread}, described)
	require.False(t, groups["gone"].StatusKnown, "nothing read: not judged")
	groups, _ = observe([]lag.PartitionLag{pl("gone", "t", 0, 5, 10)}, described)
	require.Equal(t, StatusStop, groups["gone"].Status, "the window is not reset by a missing read")
	require.True(t, groups["gone"].Rebalances == 0)
}

func TestTrackerForgets(t *testing.T) {
	tr := NewTracker(3, 0)
	tp := kafka.TopicPartition{Topic: "t", Partition: 0}
	stuck := lag.PartitionLag{Group: "g", TopicPartition: tp, Committed: 1, HasEnd: true, End: 5, Lag: 4}
	empty := map[string]kafka.GroupDescription{"g": *classicGroup(kafka.GroupStateEmpty)}
	stable := map[string]kafka.GroupDescription{"g": *classicGroup(kafka.GroupStateStable, testMember("a", "", 0))}

	tr.observe(healthInput{groups: []string{"g"}, described: empty, lags: []lag.PartitionLag{stuck}})
	tr.observe(healthInput{groups: []string{"g"}, described: stable, lags: []lag.PartitionLag{stuck}})
	// Missing from one scrape: kept.
	tr.observe(healthInput{groups: []string{"other"}})
	groups, partitions := tr.observe(healthInput{groups: []string{"g"}, described: stable, lags: []lag.PartitionLag{stuck}})
	require.Equal(t, int64(1), groups[0].Rebalances)
	require.Equal(t, StatusStall, partitions[0].status, "three points survived a scrape without the group")

	// Missing from two: dropped, so it starts over.
	tr.observe(healthInput{groups: []string{"other"}})
	tr.observe(healthInput{groups: []string{"other"}})
	require.NotContains(t, tr.groups, "g")
	groups, partitions = tr.observe(healthInput{groups: []string{"g"}, described: stable, lags: []lag.PartitionLag{stuck}})
	require.Equal(t, int64(0), groups[0].Rebalances)
	require.Equal(t, StatusOK, partitions[0].status)

	// A partition the group stopped committing on goes too.
	other := lag.PartitionLag{Group: "g", TopicPartition: kafka.TopicPartition{Topic: "u", Partition: 0}, HasEnd: true}
	tr.observe(healthInput{groups: []string{"g"}, lags: []lag.PartitionLag{other}})
	tr.observe(healthInput{groups: []string{"g"}, lags: []lag.PartitionLag{other}})
	pairs := tr.groups["g"].pairs
	for i := range pairs.Len() {
		kept, _ := pairs.At(i)
		require.NotEqual(t, tp, kept)
	}

	// Churn does not grow it: every scrape has new groups and partitions.
	tr = NewTracker(3, 0)
	for i := range 1000 {
		name := fmt.Sprintf("churn-%d", i)
		tr.observe(healthInput{
			groups:    []string{name},
			described: map[string]kafka.GroupDescription{name: *classicGroup(kafka.GroupStateStable, testMember("m", "", 0))},
			lags:      []lag.PartitionLag{{Group: name, TopicPartition: kafka.TopicPartition{Topic: name, Partition: 0}, HasEnd: true}},
		})
		require.LessOrEqual(t, len(tr.groups), forgetAfter)
	}
}

// A scrape goes through every (group, partition) pair of the cluster: once
// a group's partitions are known, observing it again must not allocate.
func TestObserveGroupDoesNotAllocate(t *testing.T) {
	tr := NewTracker(3, 0)
	lags := make([]lag.PartitionLag, 100)
	for i := range lags {
		lags[i] = lag.PartitionLag{Group: "g", TopicPartition: kafka.TopicPartition{Topic: "t", Partition: int32(i)}, Committed: 1, HasEnd: true, End: 5, Lag: 4}
	}
	scrape := func() {
		tr.BeginScrape(0)
		tr.ObserveGroup("g", kafka.GroupDescription{}, false, lags)
		tr.EndScrape()
	}
	scrape()
	require.Zero(t, testing.AllocsPerRun(10, scrape))
}

// TestUnreadGroupKeepsItsWindowUntouched: a group's committed offsets go
// unread for more scrapes than a missing group is kept. It has no status
// meanwhile, its rebalances are still counted from its descriptions, and its
// window neither loses its points nor gains any: the first scrape that reads
// it again completes the window with one real point.
func TestUnreadGroupKeepsItsWindowUntouched(t *testing.T) {
	const window = 3
	tr := NewTracker(window, 0)
	stuck := []lag.PartitionLag{{Group: "g", TopicPartition: kafka.TopicPartition{Topic: "t", Partition: 0}, Committed: 1, HasEnd: true, End: 5, Lag: 4}}
	stable := *classicGroup(kafka.GroupStateStable, testMember("a", "", 0))
	rebalancing := *classicGroup(kafka.GroupStatePreparingRebalance, testMember("a", "", 0))
	scrape := func(observe func() GroupHealth) GroupHealth {
		tr.BeginScrape(0)
		defer tr.EndScrape()
		return observe()
	}
	for range window - 1 {
		gh := scrape(func() GroupHealth { return tr.ObserveGroup("g", stable, true, stuck) })
		require.Equal(t, StatusOK, gh.Status, "the window is not full yet")
	}
	for i := range forgetAfter + 2 {
		d := stable
		if i == 0 {
			d = rebalancing
		}
		gh := scrape(func() GroupHealth { return tr.ObserveUnread("g", d, true) })
		require.False(t, gh.StatusKnown)
		require.Empty(t, gh.Partitions)
		require.Equal(t, int64(1), gh.Rebalances, "a rebalance seen while the offsets were unread counts")
	}
	gh := scrape(func() GroupHealth { return tr.ObserveGroup("g", stable, true, stuck) })
	require.True(t, gh.StatusKnown)
	require.Equal(t, StatusStall, gh.Status, "two points before, one now: a full window")
	require.Equal(t, int64(1), gh.Rebalances)
}

// TestRebalanceCountRestartsWithItsStartTime: groups seen by the first
// scrape count from the tracker's start; a group first seen later, or seen
// again after being forgotten (its count back at 0), counts from the scrape
// before the one that saw it, never from an instant its old count covered.
func TestRebalanceCountRestartsWithItsStartTime(t *testing.T) {
	tr := NewTracker(2, 0)
	scrape := func(at int64, groups ...string) map[string]GroupHealth {
		tr.BeginScrape(at)
		defer tr.EndScrape()
		out := map[string]GroupHealth{}
		for _, g := range groups {
			out[g] = tr.ObserveGroup(g, kafka.GroupDescription{}, false, nil)
		}
		return out
	}
	require.Zero(t, scrape(100, "old")["old"].RebalancesSince, "counted since the start")
	require.Equal(t, int64(100), scrape(200, "old", "new")["new"].RebalancesSince)
	scrape(300, "new")
	scrape(400, "new") // "old" is forgotten
	back := scrape(500, "old", "new")
	require.Equal(t, int64(400), back["old"].RebalancesSince, "after its last point at 200")
	require.Equal(t, int64(100), back["new"].RebalancesSince)
}
