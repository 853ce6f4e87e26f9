package timetable

import (
	"slices"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// IdentityChange reports what Identify reset.
type IdentityChange struct {
	// FromCluster, when set, is the cluster the tables were sampled from,
	// which is not the one that answered: every table was emptied.
	FromCluster string
	// Recreated are the topics whose id changed, sorted: deleted and
	// created again, their tables were reset.
	Recreated []string
}

// Identified tells whether Identify was called since the store was made or
// last restored: until then, restored tables may be another cluster's.
func (s *Store) Identified() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.identified
}

// Identify checks the tables against what the cluster says it is. Tables
// sampled from another cluster are emptied, and so are those of a topic
// whose id changed (a topic deleted and created again whose new log grew
// past the old end offset before a read saw it go backwards). An id the
// cluster does not give (old brokers) leaves the tables as they are; the
// first one given is adopted. TakeResets reports the partitions reset.
func (s *Store) Identify(id kafka.Identity) IdentityChange {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.identified = true
	var change IdentityChange
	if id.ClusterID != "" {
		if s.clusterID != "" && s.clusterID != id.ClusterID {
			change.FromCluster = s.clusterID
			for tp := range s.tables {
				s.resetTable(tp)
			}
			clear(s.topicIDs)
		}
		s.clusterID = id.ClusterID
	}
	recreated := map[string]bool{}
	for topic, topicID := range id.Topics {
		if topicID.IsZero() {
			continue
		}
		if old, ok := s.topicIDs[topic]; ok && old != topicID {
			recreated[topic] = true
			change.Recreated = append(change.Recreated, topic)
		}
		s.topicIDs[topic] = topicID
	}
	if len(recreated) > 0 {
		for tp := range s.tables {
			if recreated[tp.Topic] {
				s.resetTable(tp)
			}
		}
		slices.Sort(change.Recreated)
	}
	return change
}

// TopicIDs returns the ids the tables hold of topics, those they know.
func (s *Store) TopicIDs(topics []string) map[string]kafka.TopicID {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]kafka.TopicID, len(topics))
	for _, topic := range topics {
		if id, ok := s.topicIDs[topic]; ok {
			out[topic] = id
		}
	}
	return out
}

// resetTable empties a partition's table, which describes a log that is not
// the partition's any more. Called with s.mu held.
func (s *Store) resetTable(tp kafka.TopicPartition) {
	s.tables[tp].clear()
	delete(s.starts, tp)
	s.startWatch.forget(tp, true)
	s.resets[tp] = struct{}{}
}

// forgetUntrackedTopicIDs keeps the topic ids bounded by the tracked
// topics. Called with s.mu held.
func (s *Store) forgetUntrackedTopicIDs() {
	tracked := make(map[string]bool, len(s.topicIDs))
	for tp := range s.tables {
		tracked[tp.Topic] = true
	}
	for topic := range s.topicIDs {
		if !tracked[topic] {
			delete(s.topicIDs, topic)
		}
	}
}
