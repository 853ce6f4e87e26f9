// Package ownership decides what a replica reads and reports when several
// replicas share a cluster. Topics and groups hash to the partitions of a
// coordination topic, and a replica holds some of them through Kafka's
// group protocol:
//
//   - a topic belongs to the replica holding the partition its name hashes
//     to: that replica samples, dates and reads its partitions, and writes
//     every series that names the topic (per partition, per (group, topic),
//     the partitions' gauges and production rates), for every group;
//   - a group's own series (state, members, rebalances, status) belong to
//     the owner of its home topic (HomeTopic), which judges its health over
//     all its partitions: those on other replicas' topics it samples too,
//     and dates from its tables alone. A group with no commit belongs to
//     the replica holding the partition its id hashes to.
//
// A topic is never split: its partitions' series, and the (group, topic)
// aggregates over them, have one writer. It is pure: the assignment comes
// from Kafka's group protocol through kafka.Membership, and everything
// here is a function of it.
package ownership

import (
	"hash/fnv"
	"strings"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// PartitionOf returns the coordination partition a monitored group or a
// topic hashes to: the 32-bit FNV-1a hash of its name modulo the partition
// count. Every replica computes it alike, so each has exactly one owner for
// a given assignment. count must be positive.
func PartitionOf(name string, count int32) int32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name)) // a hash.Hash never fails to write
	return int32(h.Sum32() % uint32(count))
}

// Owner is one replica's share of the monitored topics and groups.
type Owner struct {
	held  []bool // by coordination partition
	count int32
}

// New returns the share of a replica holding the coordination partitions
// of a topic with count partitions. Partitions out of range are ignored.
func New(partitions []int32, count int32) *Owner {
	o := &Owner{held: make([]bool, max(count, 0)), count: count}
	for _, p := range partitions {
		if p >= 0 && p < count {
			o.held[p] = true
		}
	}
	return o
}

// Share is the fraction of the coordination partitions the replica holds:
// about 1/N of N replicas.
func (o *Owner) Share() float64 {
	held := 0
	for _, h := range o.held {
		if h {
			held++
		}
	}
	return float64(held) / float64(max(o.count, 1))
}

// OwnsGroup tells whether the replica holds the partition the group's id
// hashes to: it reports a group with no commit (and a share group) then.
func (o *Owner) OwnsGroup(group string) bool {
	return o.count > 0 && o.held[PartitionOf(group, o.count)]
}

// OwnsTopic tells whether the replica reads and reports the topic.
func (o *Owner) OwnsTopic(topic string) bool {
	return o.count > 0 && o.held[PartitionOf(topic, o.count)]
}

// Groups returns the groups whose id the replica owns (OwnsGroup), in their
// order.
func (o *Owner) Groups(groups []string) []string {
	out := make([]string, 0, len(groups))
	for _, g := range groups {
		if o.OwnsGroup(g) {
			out = append(out, g)
		}
	}
	return out
}

// HomeTopic is the topic a group's own series go with: the one it commits
// on the most partitions of, the first by name of those tied. A group
// reading one topic is then reported whole by that topic's owner, and needs
// nothing of another replica's topics. "" when it has no commit.
func HomeTopic(commits kafka.Commits) string {
	home, most := "", 0
	for i := 0; i < len(commits); {
		topic, n := commits[i].Topic, 0
		for ; i < len(commits) && commits[i].Topic == topic; i++ {
			n++
		}
		if n > most || n == most && strings.Compare(topic, home) < 0 {
			home, most = topic, n
		}
	}
	return home
}

// Share is what one replica reads and reports of the monitored groups'
// commits.
type Share struct {
	// Committed are the commits it computes: every commit of the groups it
	// reports (Home), whose health is judged over all their partitions,
	// and the commits of each other group on its own topics.
	Committed map[string]kafka.Commits
	// Home are the groups whose own series it writes: those whose home
	// topic it owns.
	Home map[string]bool
	// Gauged are the partitions of its topics with a commit: it writes
	// their gauges and its topics' production rates.
	Gauged map[kafka.TopicPartition]struct{}
}

// Split separates what one replica reads and reports out of the commits of
// every monitored group (sorted by topic and partition, as kafka.Commits
// are; committed itself is not changed). homes are the home topics of the
// groups whose commits were read on some partitions only (those of this
// replica's topics); the others' are their commits'. Every topic with a
// commit and every group with one has exactly one replica for a given
// assignment.
func (o *Owner) Split(committed map[string]kafka.Commits, homes map[string]string) Share {
	s := Share{Committed: map[string]kafka.Commits{}, Home: map[string]bool{}, Gauged: map[kafka.TopicPartition]struct{}{}}
	for group, commits := range committed {
		home, known := homes[group]
		if !known {
			home = HomeTopic(commits)
		}
		if o.OwnsTopic(home) {
			s.Home[group] = true
			s.Committed[group] = commits
		}
		var mine kafka.Commits
		for i, c := range commits {
			if !o.OwnsTopic(c.Topic) {
				continue
			}
			s.Gauged[c.TopicPartition] = struct{}{}
			if !s.Home[group] {
				if mine == nil {
					mine = make(kafka.Commits, 0, len(commits)-i)
				}
				mine = append(mine, c)
			}
		}
		if len(mine) > 0 {
			s.Committed[group] = mine
		}
	}
	return s
}
