package timetable

import (
	"slices"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// StartChange is a partition's log start offset read different from the
// read before: records were deleted between the two reads (by retention,
// or DeleteRecords), or the log was replaced.
type StartChange struct {
	kafka.TopicPartition
	// Offset is the log start now; From the one before.
	Offset, From int64
	// Since and At bracket the change, in unix nanoseconds: the receipt of
	// the last read that found From (0 when unknown: a start restored from
	// the saved state) and of the one that found Offset.
	Since, At int64
	// Restart: the partition's log was replaced (its table reset: the topic
	// was recreated, or the cluster is another): what was known of its log
	// start says nothing of the new one. Only TopicPartition is set.
	Restart bool
}

// startChangesKept bounds the changes kept per partition until taken: a
// scrape that does not come (a replica not in its coordination group) must
// not let them grow, and a rate needs only the last few.
const startChangesKept = 4

// startWatch keeps the changes of the log starts a Store reads until
// TakeStartChanges takes them. It watches nothing until on.
type startWatch struct {
	on bool
	// everySample are the partitions whose log starts are read at every
	// sample, not only the full ones (WatchStartsEverySample).
	everySample map[kafka.TopicPartition]struct{}
	// readAt is when each partition's log start was last read.
	readAt  map[kafka.TopicPartition]int64
	pending map[kafka.TopicPartition][]StartChange
}

// record notes a log start read at at (unix nanoseconds) for a partition
// whose start was prev (had: one was known).
func (w *startWatch) record(tp kafka.TopicPartition, prev int64, had bool, offset, at int64) {
	if !w.on {
		return
	}
	if had && offset != prev {
		changes := append(w.pending[tp], StartChange{TopicPartition: tp, Offset: offset, From: prev, Since: w.readAt[tp], At: at})
		if len(changes) > startChangesKept {
			changes = slices.Delete(changes, 0, len(changes)-startChangesKept)
		}
		w.pending[tp] = changes
	}
	w.readAt[tp] = at
}

// forget drops what is known of a partition's log start; restart: its log
// was replaced, which the taker is told.
func (w *startWatch) forget(tp kafka.TopicPartition, restart bool) {
	if !w.on {
		return
	}
	delete(w.readAt, tp)
	delete(w.pending, tp)
	if restart {
		w.pending[tp] = []StartChange{{TopicPartition: tp, Restart: true}}
	}
}

// WatchStartChanges makes the store keep the changes of the log starts it
// reads from now on, for TakeStartChanges.
func (s *Store) WatchStartChanges() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.startWatch = startWatch{on: true, readAt: map[kafka.TopicPartition]int64{}, pending: map[kafka.TopicPartition][]StartChange{}}
}

// TakeStartChanges returns the log start changes read since the last call
// (at most the last few of each partition), in (topic, partition) order
// and oldest first within a partition, and forgets them.
func (s *Store) TakeStartChanges() []StartChange {
	s.mu.Lock()
	if len(s.startWatch.pending) == 0 {
		s.mu.Unlock()
		return nil
	}
	var out []StartChange
	for _, changes := range s.startWatch.pending {
		out = append(out, changes...)
	}
	clear(s.startWatch.pending)
	s.mu.Unlock()
	slices.SortStableFunc(out, func(a, b StartChange) int { return a.Compare(b.TopicPartition) })
	return out
}

// unixNanos is t in unix nanoseconds; 0 for the zero time.
func unixNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// WatchStartsEverySample makes the sampler read the log starts of
// partitions (those whose log start moves while a group stands still on
// them: retention.Tracker.Moving) at every sample, not only at the full
// ones: a prediction from the log start's advance is then early by at most
// one sampling interval, not by the FullSampleEvery intervals between two
// full samples. It replaces the partitions set before.
func (s *Store) WatchStartsEverySample(partitions []kafka.TopicPartition) {
	set := make(map[kafka.TopicPartition]struct{}, len(partitions))
	for _, tp := range partitions {
		set[tp] = struct{}{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.startWatch.everySample = set
}

// StartsEverySample are the tracked partitions whose log starts are read at
// every sample (WatchStartsEverySample), sorted.
func (s *Store) StartsEverySample() []kafka.TopicPartition {
	s.mu.Lock()
	out := make([]kafka.TopicPartition, 0, len(s.startWatch.everySample))
	for tp := range s.startWatch.everySample {
		if _, tracked := s.tables[tp]; tracked {
			out = append(out, tp)
		}
	}
	s.mu.Unlock()
	kafka.SortPartitions(out)
	return out
}
