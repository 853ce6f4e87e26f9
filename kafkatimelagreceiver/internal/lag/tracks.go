package lag

import (
	"iter"
	"strings"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// Track is what a tracker remembers of one group's partition from scrape to
// scrape. A tracker holds one per (group, partition) pair of the cluster,
// so the partition is kept unwrapped: a kafka.TopicPartition field would
// pad to 24 bytes before the scrape number could follow it.
type Track[T any] struct {
	Topic     string
	Partition int32
	// lastSeen is the scrape that last saw the pair. Scrape numbers are
	// only ever subtracted, so they may wrap.
	lastSeen uint32
	State    T
}

// TopicPartition is the track's partition.
func (t *Track[T]) TopicPartition() kafka.TopicPartition {
	return kafka.TopicPartition{Topic: t.Topic, Partition: t.Partition}
}

func (t *Track[T]) compare(tp kafka.TopicPartition) int {
	if c := strings.Compare(t.Topic, tp.Topic); c != 0 {
		return c
	}
	return int(t.Partition) - int(tp.Partition)
}

// KeepTracks marks every track seen in scrape, for a group that was listed
// but whose lags could not be read: its history is kept as it is.
func KeepTracks[T any](tracks []Track[T], scrape uint32) {
	for i := range tracks {
		tracks[i].lastSeen = scrape
	}
}

// MergeTracks marks the tracks of lags seen in scrape, adds a track with a
// zero State for each new one and drops those missing from the last
// forgetAfter scrapes, so that a tracker's memory follows the live pairs
// and not their history. tracks and lags are sorted by (topic, partition),
// as Index.GroupLags sorts them; so is the result, which has a track for
// every lag. A scrape that sees the same partitions as the last one, the
// usual case, updates in place and allocates nothing.
func MergeTracks[T any](tracks []Track[T], lags []PartitionLag, scrape, forgetAfter uint32) []Track[T] {
	if len(tracks) == len(lags) {
		same := true
		for i := range lags {
			if tracks[i].compare(lags[i].TopicPartition) != 0 {
				same = false
				break
			}
		}
		if same {
			for i := range tracks {
				tracks[i].lastSeen = scrape
			}
			return tracks
		}
	}
	out := make([]Track[T], 0, len(lags)+len(tracks))
	i, j := 0, 0
	for i < len(tracks) || j < len(lags) {
		var c int
		switch {
		case i == len(tracks):
			c = 1
		case j == len(lags):
			c = -1
		default:
			c = tracks[i].compare(lags[j].TopicPartition)
		}
		switch {
		case c < 0: // not seen in this scrape
			if scrape-tracks[i].lastSeen < forgetAfter {
				out = append(out, tracks[i])
			}
			i++
		case c > 0: // first seen
			out = append(out, Track[T]{Topic: lags[j].Topic, Partition: lags[j].Partition, lastSeen: scrape})
			j++
		default:
			t := tracks[i]
			t.lastSeen = scrape
			out = append(out, t)
			i++
			j++
		}
	}
	return out
}

// Matched yields each lag's index with its track's State, in the order of
// lags. tracks hold a track for every lag, sorted as lags are: what
// MergeTracks returns.
func Matched[T any](tracks []Track[T], lags []PartitionLag) iter.Seq2[int, *T] {
	return func(yield func(int, *T) bool) {
		j := 0
		for i := range lags {
			for tracks[j].Topic != lags[i].Topic || tracks[j].Partition != lags[i].Partition {
				j++
			}
			if !yield(i, &tracks[j].State) {
				return
			}
		}
	}
}
