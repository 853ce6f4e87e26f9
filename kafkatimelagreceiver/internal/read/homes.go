package read

import (
	"context"
	"hash/fnv"
	"math"
	"slices"

	"go.opentelemetry.io/collector/scraper/scrapererror"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/ownership"
)

// WholeCommitsEvery is how many scrapes apart a coordinated replica holding
// share of the coordination partitions (about 1/N of N replicas) reads
// each group's commits whole: 10/share, a share of the groups each scrape
// (by a hash of their ids), so that the replicas together read a tenth of
// every commit more than one collector would. In between, a group whose
// home topic another replica owns is read on this replica's topics only,
// on the partitions its last whole read listed there, and not at all when
// it has none. A group that starts committing on a topic it did not commit
// on before reaches that topic's replica at its next whole read: within
// 10 x N scrapes.
func WholeCommitsEvery(share float64) uint64 {
	return uint64(math.Ceil(10 / max(share, 1e-3)))
}

// groupCommits is what a coordinated replica remembers of each group from
// its last whole read: the partitions it committed on and its home topic
// (ownership.HomeTopic). Every replica remembers every group, so the
// partitions are kept compact: a topic's name once and 4 bytes a
// partition.
type groupCommits struct {
	partitions map[string][]topicPartitions
	homes      map[string]string
	scrapes    uint64
}

// topicPartitions are the partitions of one topic a group committed on.
type topicPartitions struct {
	topic      string
	partitions []int32
}

// runsOf groups commits (sorted by topic, as kafka.Commits are) by topic.
func runsOf(commits kafka.Commits) []topicPartitions {
	var runs []topicPartitions
	for i := 0; i < len(commits); {
		j := i
		for j < len(commits) && commits[j].Topic == commits[i].Topic {
			j++
		}
		run := topicPartitions{topic: commits[i].Topic, partitions: make([]int32, j-i)}
		for k := i; k < j; k++ {
			run.partitions[k-i] = commits[k].Partition
		}
		runs = append(runs, run)
		i = j
	}
	return runs
}

// readCommitted reads the groups' committed offsets: with coordination and a
// cluster that can read some partitions only (kafka.CommitsOnReader), the
// groups owner does not report whole only when due (WholeCommitsEvery) or
// never read whole, the others on owner's topics. partial are the groups
// read in part (or not at all: none of their partitions is on owner's
// topics), asked those asked at all.
func (r *Reader) readCommitted(ctx context.Context, owner *ownership.Owner, groups []string) (committed map[string]kafka.Commits, partial map[string]bool, asked []string, err error) {
	on, partial := r.known.asks(owner, groups, r.Cluster)
	if on == nil {
		committed, err = r.Cluster.CommittedOffsets(ctx, groups)
		return committed, nil, groups, err
	}
	committed, err = r.Cluster.(kafka.CommitsOnReader).CommittedOffsetsOn(ctx, on)
	asked = make([]string, 0, len(on))
	for _, g := range groups {
		if _, ok := on[g]; ok {
			asked = append(asked, g)
		}
	}
	return committed, partial, asked, err
}

// homesOf learns from the groups read whole (listed and not partial; their
// commits on excluded topics dropped) and returns the home topics of the
// groups read in part, for ownership.Owner.Split.
func (k *groupCommits) homesOf(listed []string, committed map[string]kafka.Commits, partial map[string]bool) map[string]string {
	k.learn(listed, committed, partial)
	homes := make(map[string]string, len(partial))
	for g := range partial {
		homes[g] = k.homes[g]
	}
	return homes
}

// asks is what to read of each group (nil partitions: all), or nil to read
// every group whole; partial are the groups read on some partitions only.
func (k *groupCommits) asks(owner *ownership.Owner, groups []string, cluster kafka.Cluster) (on map[string][]kafka.TopicPartition, partial map[string]bool) {
	if _, ok := cluster.(kafka.CommitsOnReader); owner == nil || !ok {
		return nil, nil
	}
	k.scrapes++
	every := WholeCommitsEvery(owner.Share())
	on = make(map[string][]kafka.TopicPartition, len(groups))
	partial = map[string]bool{}
	for _, g := range groups {
		parts, known := k.partitions[g]
		if !known || owner.OwnsTopic(k.homes[g]) || k.due(g, every) {
			on[g] = nil
			continue
		}
		var mine []kafka.TopicPartition
		for _, run := range parts {
			if owner.OwnsTopic(run.topic) {
				for _, p := range run.partitions {
					mine = append(mine, kafka.TopicPartition{Topic: run.topic, Partition: p})
				}
			}
		}
		partial[g] = true
		if len(mine) > 0 {
			on[g] = mine
		}
	}
	return on, partial
}

// due tells whether group is to be read whole this scrape, of one in every
// scrapes.
func (k *groupCommits) due(group string, every uint64) bool {
	h := fnv.New32a()
	_, _ = h.Write([]byte(group))
	return (uint64(h.Sum32())+k.scrapes)%every == 0
}

// learn remembers the groups read whole (those listed and not partial):
// their partitions and home topics; a group no longer listed is
// forgotten. A group whose read failed keeps what was known.
func (k *groupCommits) learn(listed []string, committed map[string]kafka.Commits, partial map[string]bool) {
	if k.partitions == nil {
		k.partitions, k.homes = map[string][]topicPartitions{}, map[string]string{}
	}
	seen := make(map[string]bool, len(listed))
	for _, g := range listed {
		seen[g] = true
		commits, read := committed[g]
		if !read || partial[g] {
			continue
		}
		k.partitions[g], k.homes[g] = runsOf(commits), ownership.HomeTopic(commits)
	}
	for g := range k.partitions {
		if !seen[g] {
			delete(k.partitions, g)
			delete(k.homes, g)
		}
	}
}

// reported returns the groups of listed this replica reports, in their
// order: those whose home topic it owns (home), and, of those without
// commits this scrape, those whose last known home topic it owns, or,
// without one, whose id it owns. A scrape that could not read a group's
// commits so leaves it with the replica that reported it before.
func (k *groupCommits) reported(owner *ownership.Owner, listed []string, committed map[string]kafka.Commits, home map[string]bool) []string {
	out := make([]string, 0, len(home))
	for _, g := range listed {
		if _, ok := committed[g]; ok {
			if home[g] {
				out = append(out, g)
			}
			continue
		}
		if topic := k.homes[g]; topic != "" {
			if owner.OwnsTopic(topic) {
				out = append(out, g)
			}
			continue
		}
		if owner.OwnsGroup(g) {
			out = append(out, g)
		}
	}
	return out
}

// TopicLoads are, with coordination, the work of each topic the groups
// commit on, as the last whole reads of their commits tell: its (group,
// partition) pairs, which are dated each scrape, and its partitions (the
// highest committed on, plus one), which are sampled and tabled. nil
// before any whole read.
func (r *Reader) TopicLoads() map[string]int64 {
	if len(r.known.partitions) == 0 {
		return nil
	}
	pairs := map[string]int64{}
	partitions := map[string]int32{}
	for _, runs := range r.known.partitions {
		for _, run := range runs {
			pairs[run.topic] += int64(len(run.partitions))
			partitions[run.topic] = max(partitions[run.topic], slices.Max(run.partitions)+1)
		}
	}
	for topic, n := range partitions {
		pairs[topic] += int64(n)
	}
	return pairs
}

// ReadLoads reads every monitored group's commits whole (as a scrape
// without coordination does), as a replica does once before it joins the
// replicas' group, remembers them as a whole read and returns the topics'
// loads (TopicLoads). A group it could not read is left out.
func (r *Reader) ReadLoads(ctx context.Context, denials *kafka.Denials) (map[string]int64, error) {
	p := &pass{denials: denials, errs: &scrapererror.ScrapeErrors{}, complete: true}
	if err := r.readCommits(ctx, p); err != nil {
		return nil, err
	}
	r.known.learn(p.groups, p.committed, nil)
	if loads := r.TopicLoads(); loads != nil {
		return loads, nil
	}
	return map[string]int64{}, nil // no commits: nothing to weigh
}
