package retention

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// RefreshInterval is how long a topic's retention settings, and the sizes
// of the partitions of topics deleting by size, are trusted before they are
// read again. Topics and partitions seen for the first time are read at
// once.
const RefreshInterval = 5 * time.Minute

// Reader is what a Cache reads through: the topics' configurations, the
// partitions' sizes, and their log start offsets at the time of the sizes.
type Reader interface {
	kafka.RetentionReader
	kafka.SizeReader
	StartOffsets(ctx context.Context, partitions []kafka.TopicPartition) (kafka.OffsetRead, error)
}

// Cache holds the retention settings of the topics in use, and the bytes
// per offset of the partitions of those deleting by size. It is not safe
// for concurrent use: a scrape's read owns it.
type Cache struct {
	reader Reader
	known  map[string]entry
	sizes  map[kafka.TopicPartition]sizeEntry
	limits Limits
}

type entry struct {
	retention kafka.TopicRetention
	ok        bool  // read; false: the read failed, retried after RefreshInterval
	readAt    int64 // unix nanoseconds
}

type sizeEntry struct {
	bytesPerOffset float64
	ok             bool
	readAt         int64 // unix nanoseconds
}

func NewCache(reader Reader) *Cache {
	return &Cache{reader: reader, known: map[string]entry{}, sizes: map[kafka.TopicPartition]sizeEntry{}}
}

// Refresh makes the cache hold the topics of ends, the partitions whose end
// offsets a scrape read, and the sizes of those of topics deleting by
// size, reading what it does not know or read more than RefreshInterval
// before now; what is no longer asked for is dropped. Configurations are
// read in one call for the topics due; sizes of every partition deleting by
// size in one call when any is due, since the call costs a request per
// broker whatever the partitions. What fails is not asked again before
// RefreshInterval either, so that what the receiver may not describe costs
// a few requests every few minutes, not a few a scrape.
func (c *Cache) Refresh(ctx context.Context, ends map[kafka.TopicPartition]int64, now time.Time) error {
	changed, err := c.refreshConfigs(ctx, topicsOf(ends), now)
	sized, sizeErr := c.refreshSizes(ctx, ends, now)
	if changed || sized {
		c.limits = c.snapshot()
	}
	return kafka.Join(err, sizeErr)
}

// Limits is what the cache holds, as plain values that later refreshes
// leave alone.
func (c *Cache) Limits() Limits {
	return c.limits
}

func (c *Cache) refreshConfigs(ctx context.Context, topics []string, now time.Time) (changed bool, err error) {
	wanted := make(map[string]struct{}, len(topics))
	var stale []string
	for _, t := range topics {
		wanted[t] = struct{}{}
		if e, ok := c.known[t]; !ok || now.UnixNano()-e.readAt >= int64(RefreshInterval) {
			stale = append(stale, t)
		}
	}
	for t := range c.known {
		if _, ok := wanted[t]; !ok {
			delete(c.known, t)
			changed = true
		}
	}
	if len(stale) == 0 {
		return changed, nil
	}
	read, err := c.reader.TopicRetention(ctx, stale)
	for _, t := range stale {
		r, ok := read[t]
		prev, had := c.known[t]
		if !ok && had && prev.ok {
			// Keep what was read before: retention rarely changes, and one
			// failed read should not blank the margin.
			prev.readAt = now.UnixNano()
			c.known[t] = prev
			continue
		}
		c.known[t] = entry{retention: r, ok: ok, readAt: now.UnixNano()}
	}
	return true, err
}

// refreshSizes reads the sizes of the partitions of topics deleting by size
// (tiered ones aside: their size is the brokers' copy only) when any is
// new or due, with their log start offsets just before. The bytes per
// offset of each is its size over the offsets from that log start to the
// end offset the scrape read just before: records appended in between
// count in the size and not in the offsets, which can only make it larger,
// and so the margin smaller.
func (c *Cache) refreshSizes(ctx context.Context, ends map[kafka.TopicPartition]int64, now time.Time) (changed bool, err error) {
	var wanted []kafka.TopicPartition
	due := false
	for tp := range ends {
		if e := c.known[tp.Topic]; !e.ok || !sizeRead(e.retention) {
			continue
		}
		wanted = append(wanted, tp)
		if s, ok := c.sizes[tp]; !ok || now.UnixNano()-s.readAt >= int64(RefreshInterval) {
			due = true
		}
	}
	for tp := range c.sizes {
		if _, ok := ends[tp]; !ok || !c.known[tp.Topic].ok || !sizeRead(c.known[tp.Topic].retention) {
			delete(c.sizes, tp)
			changed = true
		}
	}
	if !due {
		return changed, nil
	}
	kafka.SortPartitions(wanted)
	starts, startErr := c.reader.StartOffsets(ctx, wanted)
	sizes, sizeErr := c.reader.PartitionSizes(ctx, wanted)
	for _, tp := range wanted {
		s, ok := perOffset(sizes, starts.Offsets, ends, tp)
		if prev, had := c.sizes[tp]; !ok && had && prev.ok {
			prev.readAt = now.UnixNano() // as for configs
			c.sizes[tp] = prev
			continue
		}
		c.sizes[tp] = sizeEntry{bytesPerOffset: s, ok: ok, readAt: now.UnixNano()}
	}
	if startErr != nil {
		startErr = fmt.Errorf("log start offsets at the partition sizes: %w", startErr)
	}
	return true, kafka.Join(sizeErr, startErr)
}

// sizeRead tells whether the partitions of a topic with retention r have
// their size read: it deletes by size, and is not tiered.
func sizeRead(r kafka.TopicRetention) bool {
	_, bySize := r.SizeLimit()
	return bySize && !r.RemoteStorage
}

// perOffset is a partition's bytes per offset from what was read of it.
func perOffset(sizes, starts, ends map[kafka.TopicPartition]int64, tp kafka.TopicPartition) (float64, bool) {
	size, sized := sizes[tp]
	start, started := starts[tp]
	end := ends[tp]
	if !sized || !started || size <= 0 || end <= start {
		return 0, false
	}
	return float64(size) / float64(end-start), true
}

// snapshot copies what the cache holds into new Limits.
func (c *Cache) snapshot() Limits {
	l := Limits{Topics: make(map[string]kafka.TopicRetention, len(c.known)), BytesPerOffset: make(map[kafka.TopicPartition]float64, len(c.sizes))}
	for t, e := range c.known {
		if e.ok {
			l.Topics[t] = e.retention
		}
	}
	for tp, s := range c.sizes {
		if s.ok {
			l.BytesPerOffset[tp] = s.bytesPerOffset
		}
	}
	return l
}

// topicsOf lists the topics of the partitions, sorted.
func topicsOf(partitions map[kafka.TopicPartition]int64) []string {
	seen := map[string]bool{}
	for tp := range partitions {
		seen[tp.Topic] = true
	}
	return slices.Sorted(maps.Keys(seen))
}
