package kafka

import (
	"cmp"
	"slices"
)

// Commit is a group's committed offset on one partition.
type Commit struct {
	TopicPartition
	Offset int64
}

// Commits are one group's committed offsets, one per partition, sorted by
// (topic, partition). A scrape holds one per group of the cluster, so they
// are a slice and not a map: at 1,000,000 pairs a map per group costs a
// hash and a map slot per pair, and every later step would hash each pair
// again to find its partition.
type Commits []Commit

// CommitsOf sorts offsets into Commits.
func CommitsOf(offsets map[TopicPartition]int64) Commits {
	out := make(Commits, 0, len(offsets))
	for tp, o := range offsets {
		out = append(out, Commit{TopicPartition: tp, Offset: o})
	}
	out.Sort()
	return out
}

// Sort sorts by (topic, partition). The commits of one topic are usually
// together already (a response lists them by topic), and they are usually
// on every partition of it: those are put in place by partition number,
// in one pass, and the others sorted.
func (c Commits) Sort() {
	if !slices.IsSortedFunc(c, compareTopic) {
		slices.SortStableFunc(c, compareTopic)
	}
	for start := 0; start < len(c); {
		end := start + 1
		for end < len(c) && c[end].Topic == c[start].Topic {
			end++
		}
		sortByPartition(c[start:end])
		start = end
	}
}

// sortByPartition sorts one topic's commits.
func sortByPartition(c Commits) {
	lo, hi := c[0].Partition, c[0].Partition
	for _, e := range c {
		lo, hi = min(lo, e.Partition), max(hi, e.Partition)
	}
	if int64(hi)-int64(lo)+1 != int64(len(c)) {
		slices.SortFunc(c, comparePartition)
		return
	}
	// Every partition from lo to hi, once: each swap puts one in its place
	// for good.
	for i := range c {
		for want := int(c[i].Partition - lo); want != i; want = int(c[i].Partition - lo) {
			if c[want].Partition == c[i].Partition {
				// A partition listed twice, so another is missing.
				slices.SortFunc(c, comparePartition)
				return
			}
			c[i], c[want] = c[want], c[i]
		}
	}
}

func compareTopic(a, b Commit) int { return cmp.Compare(a.Topic, b.Topic) }

func comparePartition(a, b Commit) int { return cmp.Compare(a.Partition, b.Partition) }

// Map returns the commits keyed by partition.
func (c Commits) Map() map[TopicPartition]int64 {
	out := make(map[TopicPartition]int64, len(c))
	for _, e := range c {
		out[e.TopicPartition] = e.Offset
	}
	return out
}

// CommitsByGroup sorts each group's offsets into Commits.
func CommitsByGroup(offsets map[string]map[TopicPartition]int64) map[string]Commits {
	out := make(map[string]Commits, len(offsets))
	for group, o := range offsets {
		out[group] = CommitsOf(o)
	}
	return out
}
