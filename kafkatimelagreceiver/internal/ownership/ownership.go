// Package ownership decides which monitored groups, and which partitions'
// gauges, a replica reports when several replicas share a cluster: a group
// belongs to the replica holding the coordination partition its id hashes
// to. It is pure: the assignment comes from Kafka's group protocol through
// kafka.Membership, and everything here is a function of it.
package ownership

import (
	"hash/fnv"
	"strings"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// PartitionOf returns the coordination partition a monitored group hashes
// to: the 32-bit FNV-1a hash of the group id modulo the partition count.
// Every replica computes it alike, so a group has exactly one owner for a
// given assignment. count must be positive.
func PartitionOf(group string, count int32) int32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(group)) // a hash.Hash never fails to write
	return int32(h.Sum32() % uint32(count))
}

// Owner is one replica's share of the monitored groups.
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

// OwnsGroup tells whether the replica reports the group.
func (o *Owner) OwnsGroup(group string) bool {
	return o.count > 0 && o.held[PartitionOf(group, o.count)]
}

// Groups returns the groups the replica reports, in their order.
func (o *Owner) Groups(groups []string) []string {
	out := make([]string, 0, len(groups))
	for _, g := range groups {
		if o.OwnsGroup(g) {
			out = append(out, g)
		}
	}
	return out
}

// Split separates what one replica reports out of the commits of every
// monitored group. owned keeps the commits of the groups it owns (committed
// itself is not changed). gauged are the partitions whose per-partition
// gauges, and whose topics' production rates, it reports: every partition
// with a commit of the topics whose first committing group (by group id,
// over all the topic's partitions) it owns. Every topic with a commit has
// exactly one such replica, so a per-topic series has one writer holding
// all of the topic's partitions. It reads the partitions that group commits
// on anyway; the topic's other partitions with commits (groups that commit
// on only some partitions) it reads for the gauges alone.
func (o *Owner) Split(committed map[string]kafka.Commits) (owned map[string]kafka.Commits, gauged map[kafka.TopicPartition]struct{}) {
	owned = make(map[string]kafka.Commits)
	first := make(map[string]string) // by topic
	for group, commits := range committed {
		if o.OwnsGroup(group) {
			owned[group] = commits
		}
		for _, c := range commits {
			if cur, ok := first[c.Topic]; !ok || strings.Compare(group, cur) < 0 {
				first[c.Topic] = group
			}
		}
	}
	gauged = make(map[kafka.TopicPartition]struct{})
	for _, commits := range committed {
		for _, c := range commits {
			if _, ok := owned[first[c.Topic]]; ok {
				gauged[c.TopicPartition] = struct{}{}
			}
		}
	}
	return owned, gauged
}
