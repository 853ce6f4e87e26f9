// Package tracks keeps what a tracker (health, progress) remembers of each
// (group, partition) pair from scrape to scrape, in (topic, partition)
// order, merged with each scrape's lags.
package tracks

import (
	"iter"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
)

// Tracks are what a tracker remembers of one group's partitions from scrape
// to scrape, a Track per partition, sorted by (topic, partition). A
// tracker holds one per (group, partition) pair of the cluster, so a track
// names its topic by number (in topics) rather than by name: tracks then
// hold no pointer, and the garbage collector does not scan the tracker's
// million tracks at every cycle.
type Tracks[T any] struct {
	topics []string // sorted
	tracks []Track[T]
	// aligned: the last Merge left exactly a track per lag, in the lags'
	// order, so Matched need not search.
	aligned bool
}

// Track is what a tracker remembers of one group's partition.
type Track[T any] struct {
	topic     uint32 // index in Tracks.topics
	Partition int32
	// lastSeen is the scrape that last saw the pair. Scrape numbers are
	// only ever subtracted, so they may wrap.
	lastSeen uint32
	State    T
}

// Len is the number of tracks.
func (t *Tracks[T]) Len() int { return len(t.tracks) }

// At returns the i-th track's partition and state.
func (t *Tracks[T]) At(i int) (kafka.TopicPartition, *T) {
	tr := &t.tracks[i]
	return kafka.TopicPartition{Topic: t.topics[tr.topic], Partition: tr.Partition}, &tr.State
}

// Keep marks every track seen in scrape, for a group that was listed but
// whose lags could not be read: its history is kept as it is.
func (t *Tracks[T]) Keep(scrape uint32) {
	for i := range t.tracks {
		t.tracks[i].lastSeen = scrape
	}
}

// keepSame marks the tracks seen in scrape while they are lags' partitions
// in order, and tells whether all of them are. It is one pass over the
// tracks, which at a million pairs are memory the scrape must stream
// through, not re-read. A track it marks before a difference is one of
// lags, so its mark is right whatever Merge does next.
func (t *Tracks[T]) keepSame(lags []lag.PartitionLag, scrape uint32) bool {
	if len(t.tracks) != len(lags) {
		return false
	}
	for i := range lags {
		tr := &t.tracks[i]
		if tr.Partition != lags[i].Partition || t.topics[tr.topic] != lags[i].Topic {
			return false
		}
		tr.lastSeen = scrape
	}
	return true
}

// Merge marks the tracks of lags seen in scrape, adds a track with a zero
// State for each new one and drops those missing from the last forgetAfter
// scrapes, so that a tracker's memory follows the live pairs and not their
// history. lags are sorted by (topic, partition), as Estimates.GroupLags sorts
// them; afterwards there is a track for every lag. A scrape that sees the
// same partitions as the last one, the usual case, updates in place and
// allocates nothing.
func (t *Tracks[T]) Merge(lags []lag.PartitionLag, scrape, forgetAfter uint32) {
	if t.keepSame(lags, scrape) {
		t.aligned = true
		return
	}
	out := Tracks[T]{tracks: make([]Track[T], 0, len(lags)+len(t.tracks))}
	add := func(topic string, tr Track[T]) {
		if n := len(out.topics); n == 0 || out.topics[n-1] != topic {
			out.topics = append(out.topics, topic)
		}
		tr.topic = uint32(len(out.topics) - 1)
		out.tracks = append(out.tracks, tr)
	}
	i, j := 0, 0
	for i < len(t.tracks) || j < len(lags) {
		var c int
		switch {
		case i == len(t.tracks):
			c = 1
		case j == len(lags):
			c = -1
		default:
			tp, _ := t.At(i)
			c = tp.Compare(lags[j].TopicPartition)
		}
		switch {
		case c < 0: // not seen in this scrape
			if scrape-t.tracks[i].lastSeen < forgetAfter {
				add(t.topics[t.tracks[i].topic], t.tracks[i])
			}
			i++
		case c > 0: // first seen
			add(lags[j].Topic, Track[T]{Partition: lags[j].Partition, lastSeen: scrape})
			j++
		default:
			tr := t.tracks[i]
			tr.lastSeen = scrape
			add(t.topics[tr.topic], tr)
			i++
			j++
		}
	}
	out.aligned = len(out.tracks) == len(lags)
	*t = out
}

// Matched yields each lag's index with its track's State, in the order of
// lags. There must be a track for every lag, as Merge leaves them.
func (t *Tracks[T]) Matched(lags []lag.PartitionLag) iter.Seq2[int, *T] {
	return func(yield func(int, *T) bool) {
		if t.aligned && len(t.tracks) == len(lags) {
			for i := range lags {
				if !yield(i, &t.tracks[i].State) {
					return
				}
			}
			return
		}
		j := 0
		for i := range lags {
			for t.tracks[j].Partition != lags[i].Partition || t.topics[t.tracks[j].topic] != lags[i].Topic {
				j++
			}
			if !yield(i, &t.tracks[j].State) {
				return
			}
		}
	}
}
