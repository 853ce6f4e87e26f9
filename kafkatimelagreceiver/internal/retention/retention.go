// Package retention tells how long the records a group has not consumed
// have before time-based retention may delete them: a topic's retention.ms
// minus the age of the oldest such record (its time lag). Topic configs
// are read through a kafka.RetentionReader and cached, since they change
// rarely.
package retention

import (
	"context"
	"slices"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
)

// RefreshInterval is how long a topic's retention settings are trusted
// before they are read again. Topics seen for the first time are read at
// once.
const RefreshInterval = 5 * time.Minute

// Cache holds the retention settings of the topics in use. It is not safe
// for concurrent use: a scrape owns it.
type Cache struct {
	reader kafka.RetentionReader
	known  map[string]entry
}

type entry struct {
	retention kafka.TopicRetention
	ok        bool  // read; false: the read failed, retried after RefreshInterval
	readAt    int64 // unix nanoseconds
}

func NewCache(reader kafka.RetentionReader) *Cache {
	return &Cache{reader: reader, known: map[string]entry{}}
}

// Refresh makes the cache hold the topics, reading those it does not know
// or read more than RefreshInterval before now, in one call; topics no
// longer asked for are dropped. A topic whose read fails is not asked again
// before RefreshInterval either, so that a topic the receiver may not
// describe costs one request every few minutes, not one a scrape.
func (c *Cache) Refresh(ctx context.Context, topics []string, now time.Time) error {
	wanted := make(map[string]struct{}, len(topics))
	var stale []string
	for _, t := range topics {
		if _, dup := wanted[t]; dup {
			continue
		}
		wanted[t] = struct{}{}
		if e, ok := c.known[t]; !ok || now.UnixNano()-e.readAt >= int64(RefreshInterval) {
			stale = append(stale, t)
		}
	}
	for t := range c.known {
		if _, ok := wanted[t]; !ok {
			delete(c.known, t)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	slices.Sort(stale)
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
	return err
}

// Limit is the time-based retention of the topic, when it has one and it
// is known.
func (c *Cache) Limit(topic string) (time.Duration, bool) {
	e, ok := c.known[topic]
	if !ok || !e.ok {
		return 0, false
	}
	return e.retention.TimeLimit()
}

// Margin is how long, in seconds, the oldest record the group has not
// consumed on the partition has before retention may delete it: limit
// minus its age (the time lag). It is negative when retention is overdue
// (Kafka deletes whole segments, every log.retention.check.interval.ms).
// There is none when the group has nothing left to consume, or its time
// lag is not known.
func Margin(pl *lag.PartitionLag, limit time.Duration) (float64, bool) {
	if !pl.HasEnd || !pl.HasTimeLag || pl.CaughtUp || pl.Lag == 0 {
		return 0, false
	}
	return limit.Seconds() - pl.TimeLag, true
}

// TopicMargin is the smallest margin of a group on one topic.
type TopicMargin struct {
	Group, Topic string
	Seconds      float64
}

// TopicMargins appends to out the smallest margin of each (group, topic)
// of lags, which must be sorted by group, then topic, as lag.GroupLags
// returns them. Pairs with nothing left to consume have no margin and are
// passed over; a topic with a pair whose margin is unknown (its end offset
// or time lag not known) gets none, since the smallest of the others could
// be far from the truth.
func (c *Cache) TopicMargins(out []TopicMargin, lags []lag.PartitionLag) []TopicMargin {
	var limit time.Duration
	var limited bool
	for start := 0; start < len(lags); {
		end := start + 1
		for end < len(lags) && lags[end].Group == lags[start].Group && lags[end].Topic == lags[start].Topic {
			end++
		}
		// Lags are sorted by topic: its limit is looked up once per run.
		if start == 0 || lags[start].Topic != lags[start-1].Topic {
			limit, limited = c.Limit(lags[start].Topic)
		}
		if limited {
			if m, ok := smallestMargin(lags[start:end], limit); ok {
				out = append(out, TopicMargin{Group: lags[start].Group, Topic: lags[start].Topic, Seconds: m})
			}
		}
		start = end
	}
	return out
}

// smallestMargin is the smallest margin of one group's pairs on one topic;
// none when no pair has one or some pair's is unknown.
func smallestMargin(lags []lag.PartitionLag, limit time.Duration) (float64, bool) {
	smallest, found := 0.0, false
	for i := range lags {
		pl := &lags[i]
		m, ok := Margin(pl, limit)
		switch {
		case ok && (!found || m < smallest):
			smallest, found = m, true
		case !ok && marginUnknown(pl):
			return 0, false
		}
	}
	return smallest, found
}

// marginUnknown: the pair may have records at risk, but what is not known
// of it (its end offset or time lag) gives it no margin.
func marginUnknown(pl *lag.PartitionLag) bool {
	return !pl.HasEnd || (!pl.HasTimeLag && !pl.CaughtUp && pl.Lag > 0)
}
