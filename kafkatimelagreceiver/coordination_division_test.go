//go:build !unit

package kafkatimelagreceiver

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadatatest"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/read"
)

// newTopicFixture is a cluster laid out as most are: replicaGroups groups,
// two on each of replicaGroups/2 topics (2 partitions each, every record's
// timestamp known), each group reading its one topic.
func newTopicFixture(t *testing.T) *replicaFixture {
	k := newTestKafka(t, 3, kfake.GroupMinSessionTimeout(100*time.Millisecond))
	f := &replicaFixture{k: k, recordTime: map[kafka.TopicPartition][]time.Time{}, committed: map[string]map[kafka.TopicPartition]int64{}}
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for i := range replicaGroups / 2 {
		topic := fmt.Sprintf("topic-%02d", i)
		k.CreateTopic(topic, 2)
		for p := range int32(2) {
			tp := kafka.TopicPartition{Topic: topic, Partition: p}
			for r := range 5 {
				f.recordTime[tp] = append(f.recordTime[tp], base.Add(time.Duration(r+i)*time.Minute))
			}
			k.Produce(topic, p, f.recordTime[tp]...)
		}
		for j, offsets := range []map[int32]int64{{0: 1, 1: 3}, {0: 2, 1: 0}} {
			group := fmt.Sprintf("group-%02d", 2*i+j)
			k.Commit(group, topic, offsets)
			f.committed[group] = map[kafka.TopicPartition]int64{}
			for p, o := range offsets {
				f.committed[group][kafka.TopicPartition{Topic: topic, Partition: p}] = o
			}
		}
	}
	return f
}

// askLog records the partitions a replica asks the brokers about: end
// offsets (its samples and scrapes), and records dated from the time index
// or read.
type askLog struct {
	kafka.Cluster
	mu    sync.Mutex
	ended map[kafka.TopicPartition]int
	dated map[kafka.TopicPartition]int
	// wholes are the groups whose commits were read whole; commitsOn the
	// partitions the other groups' were read on.
	wholes    []string
	commitsOn map[kafka.TopicPartition]int
}

func (a *askLog) EndOffsets(ctx context.Context, partitions []kafka.TopicPartition) (kafka.OffsetRead, error) {
	a.mu.Lock()
	for _, tp := range partitions {
		a.ended[tp]++
	}
	a.mu.Unlock()
	return a.Cluster.EndOffsets(ctx, partitions)
}

func (a *askLog) TimestampOffsets(ctx context.Context, asks []kafka.PartitionTimes) (kafka.TimePoints, error) {
	a.mu.Lock()
	for _, ask := range asks {
		a.dated[ask.TopicPartition]++
	}
	a.mu.Unlock()
	return a.Cluster.TimestampOffsets(ctx, asks)
}

func (a *askLog) RecordTimestamps(ctx context.Context, wanted []kafka.PartitionOffsets) (kafka.RecordReads, error) {
	a.mu.Lock()
	for _, w := range wanted {
		a.dated[w.TopicPartition]++
	}
	a.mu.Unlock()
	return a.Cluster.RecordTimestamps(ctx, wanted)
}

func (a *askLog) CommittedOffsetsOn(ctx context.Context, on map[string][]kafka.TopicPartition) (map[string]kafka.Commits, error) {
	a.mu.Lock()
	for g, partitions := range on {
		if partitions == nil {
			a.wholes = append(a.wholes, g)
		}
		for _, tp := range partitions {
			a.commitsOn[tp]++
		}
	}
	a.mu.Unlock()
	return a.Cluster.(kafka.CommitsOnReader).CommittedOffsetsOn(ctx, on)
}

// take returns what was asked since the last take, and starts over.
func (a *askLog) take() (ended, dated map[kafka.TopicPartition]int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ended, dated = a.ended, a.dated
	a.ended, a.dated = map[kafka.TopicPartition]int{}, map[kafka.TopicPartition]int{}
	a.wholes, a.commitsOn = nil, map[kafka.TopicPartition]int{}
	return ended, dated
}

// takeCommits returns the groups whose commits were read whole, and the
// partitions the others' were read on, since the last take.
func (a *askLog) takeCommits() (wholes []string, on map[kafka.TopicPartition]int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	wholes, on = a.wholes, a.commitsOn
	a.wholes, a.commitsOn = nil, map[kafka.TopicPartition]int{}
	return wholes, on
}

// startLoggedReplica starts a replica of f whose requests asks records.
func (f *replicaFixture) startLoggedReplica(t *testing.T, name string) (*replica, *askLog) {
	t.Helper()
	cfg := f.replicaConfig(name)
	require.NoError(t, cfg.Validate())
	tt := componenttest.NewTelemetry()
	s, err := newTimeLagScraper(cfg, metadatatest.NewSettings(tt), nil)
	require.NoError(t, err)
	asks := &askLog{ended: map[kafka.TopicPartition]int{}, dated: map[kafka.TopicPartition]int{}, commitsOn: map[kafka.TopicPartition]int{}}
	build := s.newCluster
	s.newCluster = func(ctx context.Context, host component.Host) (kafka.Cluster, error) {
		c, err := build(ctx, host)
		if err != nil {
			return nil, err
		}
		asks.Cluster = c
		return asks, nil
	}
	require.NoError(t, s.start(context.Background(), nil))
	r := &replica{name: name, scraper: s, telemetry: tt}
	t.Cleanup(func() {
		if !r.killed {
			require.NoError(t, s.shutdown(context.Background()))
		}
		require.NoError(t, tt.Shutdown(context.Background()))
	})
	return r, asks
}

// topicsBy maps each replica to the topics whose partitions it gauged in
// round r.
func topicsBy(r round) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for tp, by := range r.gauges {
		for _, name := range by {
			if out[name] == nil {
				out[name] = map[string]bool{}
			}
			out[name][tp.Topic] = true
		}
	}
	return out
}

// TestReplicasDivideTopics: two replicas split the topics, and with them the
// work on their partitions. Each samples, searches and reads only the
// partitions of the topics it reports (counted at the Kafka client), the
// two together asking each partition's end offsets as often as one replica
// alone; every series (a group's own, each pair's, each partition's) comes
// from exactly one of them. When one leaves, the other asks for every
// partition and reports everything from its next rounds; when it comes
// back, they divide again.
func TestReplicasDivideTopics(t *testing.T) {
	f := newTopicFixture(t)
	partitions := f.partitionsWithCommits()
	started := time.Now()
	a, asksA := f.startLoggedReplica(t, "a")
	b, asksB := f.startLoggedReplica(t, "b")
	live := []*replica{a, b}
	settled := f.settle(t, started, live, 30, "starting")
	last := settled[len(settled)-1]
	require.Equal(t, 2, countReplicas(last), "%s: both replicas report groups", last)
	// One group reads a partition of a topic of the other replica too, on
	// fewer partitions than of its own: its home stays its own topic,
	// whose owner samples that partition for the group's health without
	// dating its records.
	home := last.groups["group-00"][0]
	var second kafka.TopicPartition
	for topic := range topicsBy(last)[map[string]string{"a": "b", "b": "a"}[home]] {
		second = kafka.TopicPartition{Topic: topic, Partition: 0}
		break
	}
	// What the two ask is counted from here: the new pair's first dating
	// included.
	asksA.take()
	asksB.take()
	f.k.Commit("group-00", second.Topic, map[int32]int64{0: 2})
	f.committed["group-00"][second] = 2
	// The other replica reads group-00 on its own topics only, as its last
	// whole read of it listed them: the new pair appears at its next whole
	// read, within WholeCommitsEvery (20 of two replicas) scrapes.
	n := len(settled)
	for newPair := 0; ; n++ {
		require.Less(t, newPair, int(read.WholeCommitsEvery(0.5))+2, "group-00's pair on %v never reported", second)
		time.Sleep(time.Until(started.Add(time.Duration(n) * replicaInterval)))
		r := f.scrapeRound(t, n, started, live)
		r.note = "group-00 reads a second topic"
		t.Log(r)
		newPair++
		if once(r, partitions) && f.allPairs(r) {
			require.Equal(t, home, r.groups["group-00"][0], "group-00 keeps its home")
			n++
			break
		}
	}

	asksA.takeCommits()
	asksB.takeCommits()
	var rounds []round
	for range 3 {
		time.Sleep(time.Until(started.Add(time.Duration(n) * replicaInterval)))
		r := f.scrapeRound(t, n, started, live)
		r.note = "divided"
		t.Log(r)
		f.requireExactlyOnce(t, r, partitions)
		rounds = append(rounds, r)
		n++
	}
	topics := topicsBy(rounds[len(rounds)-1])
	require.Len(t, topics, 2, "both replicas report topics")
	// The topics weigh alike (two partitions, two groups each): the
	// group's leader deals them out by load, half each, wherever their
	// names hash.
	require.Len(t, topics["a"], replicaGroups/4, "a's topics: %v, b's: %v", topics["a"], topics["b"])
	require.Len(t, topics["b"], replicaGroups/4, "a's topics: %v, b's: %v", topics["a"], topics["b"])
	// Committed offsets: each replica reads whole the groups it reports
	// (and a twentieth of the others a scrape, to find topics they start
	// committing on), the others on its own topics only, and those with
	// none there not at all.
	divided := rounds[len(rounds)-1]
	wholeReads := 0
	for name, asks := range map[string]*askLog{"a": asksA, "b": asksB} {
		wholes, on := asks.takeCommits()
		if name != home {
			// group-00 read whole only when its turn came.
			whole := 0
			for _, g := range wholes {
				if g == "group-00" {
					whole++
				}
			}
			require.Equal(t, 3, on[second]+whole, "replica %s reads group-00, which the other reports, on its own partition every round", name)
			require.Len(t, on, min(1, on[second]), "replica %s reads no other partition of groups it does not report", name)
		}
		for tp := range on {
			require.True(t, topics[name][tp.Topic], "replica %s read commits on %v, a topic it does not report", name, tp)
		}
		for _, g := range wholes {
			if divided.groups[g][0] != name {
				wholeReads++
			}
		}
	}
	require.Equal(t, uint64(20), read.WholeCommitsEvery(0.5), "two replicas read each group whole every 20 scrapes")
	require.LessOrEqual(t, wholeReads, 3*(1+replicaGroups/20),
		"3 rounds read whole a twentieth of the groups another replica reports, a scrape")
	ended := map[string]map[kafka.TopicPartition]int{}
	for name, asks := range map[string]*askLog{"a": asksA, "b": asksB} {
		e, dated := asks.take()
		ended[name] = e
		require.NotEmpty(t, e, "replica %s sampled", name)
		for tp := range e {
			// The one exception: the partition of a second topic its group
			// reads, sampled for the group's health.
			require.True(t, topics[name][tp.Topic] || tp == second && name == home,
				"replica %s asked the end offset of %v, a topic it does not report", name, tp)
		}
		for tp := range dated {
			require.True(t, topics[name][tp.Topic], "replica %s dated records of %v, a topic it does not report", name, tp)
		}
		for g, by := range rounds[len(rounds)-1].groups {
			if by[0] == name {
				require.True(t, topics[name][fmt.Sprintf("topic-%02d", g2i(g)/2)], "group %s reported by %s, which owns its home topic", g, name)
			}
		}
	}
	// Disjoint and complete: each partition's end offsets asked by its
	// topic's owner only (but the one above).
	for tp := range partitions {
		byA, byB := ended["a"][tp] > 0, ended["b"][tp] > 0
		if tp == second {
			require.True(t, byA && byB, "%v asked by its owner and by group-00's", tp)
			continue
		}
		require.True(t, byA != byB, "%v asked by exactly one replica", tp)
	}

	// b leaves: a takes everything.
	b.killed = true
	require.NoError(t, b.scraper.shutdown(context.Background()))
	live = []*replica{a}
	left := time.Now()
	var after []round
	for time.Since(left) < replicaSession+4*replicaInterval {
		time.Sleep(time.Until(started.Add(time.Duration(n) * replicaInterval)))
		r := f.scrapeRound(t, n, started, live)
		r.note = "after b left"
		t.Log(r)
		after = append(after, r)
		n++
	}
	// A replica that leaves (SIGTERM) hands over within a heartbeat: a
	// series is missing from at most one round, and never reported twice.
	missingRounds := 0
	for _, r := range after {
		require.Empty(t, r.twice(), "%s: no group reported twice", r)
		for pair, by := range r.pairs {
			require.Len(t, by, 1, "%s: %s reported by %v", r, pair, by)
		}
		if !once(r, partitions) || !f.allPairs(r) {
			missingRounds++
		}
	}
	require.LessOrEqual(t, missingRounds, 1, "b's topics and groups are back within a round of its leaving")
	asksA.take()
	time.Sleep(time.Until(started.Add(time.Duration(n) * replicaInterval)))
	r := f.scrapeRound(t, n, started, live)
	n++
	f.requireExactlyOnce(t, r, partitions)
	alone, _ := asksA.take()
	require.Equal(t, sortedPartitions(partitions), sortedPartitions(alone), "alone, a samples every partition")

	// b again: they divide again.
	b2, asksB2 := f.startLoggedReplica(t, "b2")
	live = []*replica{a, b2}
	rejoined := f.settle(t, started.Add(time.Duration(n)*replicaInterval), live, 30, "b2 joined")
	final := rejoined[len(rejoined)-1]
	require.Equal(t, 2, countReplicas(final), "%s: both replicas report groups again", final)
	asksA.take()
	asksB2.take()
	time.Sleep(replicaInterval)
	f.requireExactlyOnce(t, f.scrapeRound(t, n, started, live), partitions)
	endedA, _ := asksA.take()
	endedB, _ := asksB2.take()
	require.NotEmpty(t, endedA)
	require.NotEmpty(t, endedB)
	for tp := range endedA {
		if tp != second {
			require.Zero(t, endedB[tp], "%v asked by both replicas after the rejoin", tp)
		}
	}
}

func sortedPartitions[V any](m map[kafka.TopicPartition]V) []kafka.TopicPartition {
	out := slices.Collect(maps.Keys(m))
	kafka.SortPartitions(out)
	return out
}

// g2i is the number of a fixture group.
func g2i(group string) int {
	var i int
	_, _ = fmt.Sscanf(group, "group-%d", &i)
	return i
}

// allPairs tells whether every pair of f was reported in r.
func (f *replicaFixture) allPairs(r round) bool {
	pairs := 0
	for _, offsets := range f.committed {
		pairs += len(offsets)
	}
	return len(r.pairs) == pairs
}
