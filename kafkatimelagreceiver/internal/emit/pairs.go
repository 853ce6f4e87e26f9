package emit

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
)

// chunkPairs is how many (group, partition) pairs go into one pushed chunk:
// about 15,000 points, 1.2 MB of OTLP.
const chunkPairs = 5000

// pairChunks holds the per-pair gauges of a scrape. A scrape of more than
// chunkPairs pairs, when a consumer is wired (push), is sent in chunks as it
// is built, so that the collector holds one chunk's points at a time rather
// than every point of the scrape. Smaller scrapes, and scrapes without push,
// come out as one piece with the rest of the scrape.
type pairChunks struct {
	w        *Writer
	ctx      context.Context
	push     PushFunc // nil: everything in one chunk, returned by finish
	capacity int      // pairs of a chunk to allocate for

	chunk   *section // nil before the first pair
	pairs   int      // in the current chunk
	written int      // in the scrape
	// stopped says why the scrape stopped writing: its context ended.
	stopped                   error
	omitted                   int // pairs without a time lag estimate
	refusedPoints, sentPoints int
	errs                      []error
}

// proceed says whether to write one more pair. Every chunkPairs pairs it
// checks the scrape's context: a scrape past its deadline (or cut by
// shutdown) stops building points nobody waits for.
func (c *pairChunks) proceed() bool {
	if c.stopped != nil {
		return false
	}
	if c.written%chunkPairs == 0 && c.ctx.Err() != nil {
		c.stopped = fmt.Errorf("stopped writing after %d pairs: %w", c.written, context.Cause(c.ctx))
		return false
	}
	c.written++
	return true
}

// next makes room for one more pair's gauges: the first chunk, or a new
// one once the current one is full and sent.
func (c *pairChunks) next() *section {
	if c.chunk == nil {
		c.chunk = newSection(c.w.m)
	} else if c.push != nil && c.pairs >= chunkPairs {
		c.send()
		c.chunk, c.pairs = newSection(c.w.m), 0
	}
	c.pairs++
	return c.chunk
}

// current is the chunk a pair's other gauges go to.
func (c *pairChunks) current() *section {
	if c.chunk == nil {
		c.chunk = newSection(c.w.m)
	}
	return c.chunk
}

// capacityOf is how many points of d to allocate for in a chunk.
func (c *pairChunks) capacityOf(d *metric) int {
	if d.everyPair {
		return c.capacity
	}
	return 0
}

// send pushes the current chunk to the next consumer. A refusal (a
// memory_limiter, a full queue) is reported with the scrape's error; the
// other chunks are still sent.
func (c *pairChunks) send() {
	if c.chunk.ms.Len() == 0 {
		return
	}
	md := c.w.withDirect(pmetric.NewMetrics(), c.chunk.ms)
	points := md.DataPointCount()
	if err := c.push(c.ctx, md); err != nil {
		c.refusedPoints += points
		// Chunks refused for the same reason say it once.
		if !slices.ContainsFunc(c.errs, func(seen error) bool { return seen.Error() == err.Error() }) {
			c.errs = append(c.errs, err)
		}
		return
	}
	c.sentPoints += points
}

// finish sends the last chunk, or, when nothing was pushed, moves the one
// chunk into out. The error says what the next consumer refused.
func (c *pairChunks) finish(out pmetric.MetricSlice) error {
	if c.omitted > 0 {
		c.w.logger.Debug("time lag omitted: no table point or record brackets the committed offset", zap.Int("partitions", c.omitted))
	}
	if c.chunk == nil {
		return nil
	}
	if c.push != nil {
		c.send()
	} else {
		c.chunk.ms.MoveAndAppendTo(out)
	}
	if len(c.errs) == 0 {
		return nil
	}
	return fmt.Errorf("send per-pair metrics: %d of %d points refused: %w", c.refusedPoints, c.refusedPoints+c.sentPoints, errors.Join(c.errs...))
}

// write writes one pair's point of p.
func (p pairMetric[V]) write(s *Scrape, chunk *section, pl *lag.PartitionLag, v V) {
	switch {
	case p.direct:
		putPair(point(chunk, p.metric, s.pairs.capacityOf(p.metric), s.w.start, s.ts, v), p.metric, pl)
	case p.on:
		reduce(s.reduced, p.metric, s.w.start, s.ts, v, pairValues(pl))
	}
}

// write writes one pair's point of p with label as its last attribute.
func (p pairLabelMetric[V]) write(s *Scrape, chunk *section, pl *lag.PartitionLag, v V, label string) {
	switch {
	case p.direct:
		attrs := point(chunk, p.metric, s.pairs.capacityOf(p.metric), s.w.start, s.ts, v)
		putPair(attrs, p.metric, pl)
		attrs.PutStr(p.keys[3], label)
	case p.on:
		a := pairValues(pl)
		a.strs[3] = label
		reduce(s.reduced, p.metric, s.w.start, s.ts, v, a)
	}
}

// withhold drops the reduced point of p that pl would fold into: pl has no
// value of p this scrape.
func (p pairMetric[V]) withhold(s *Scrape, pl *lag.PartitionLag) {
	if p.on && !p.direct {
		s.reduced.withhold(p.metric, pairValues(pl))
	}
}

// withhold drops the reduced point of p that part would fold into.
func (p partitionMetric[V]) withhold(s *Scrape, part *lag.Partition) {
	if p.on && !p.direct {
		s.reduced.withhold(p.metric, partitionValues(part))
	}
}

// write writes one partition's point of p.
func (p partitionMetric[V]) write(s *Scrape, part *lag.Partition, capacity int, v V) {
	switch {
	case p.direct:
		attrs := point(s.partitions, p.metric, capacity, s.w.start, s.ts, v)
		attrs.PutStr(p.keys[0], part.Topic)
		attrs.PutInt(p.keys[1], int64(part.Partition))
	case p.on:
		reduce(s.reduced, p.metric, s.w.start, s.ts, v, partitionValues(part))
	}
}

// partitionValues are a partition's topic and number.
func partitionValues(part *lag.Partition) attrValues {
	return attrValues{strs: [6]string{part.Topic}, num: int64(part.Partition), numAt: 1}
}

// pairValues are a pair's group, topic and partition.
func pairValues(pl *lag.PartitionLag) attrValues {
	return attrValues{strs: [6]string{pl.Group, pl.Topic}, num: int64(pl.Partition), numAt: 2}
}

// putPair puts a pair's group, topic and partition under d's first keys.
func putPair(attrs pcommon.Map, d *metric, pl *lag.PartitionLag) {
	attrs.PutStr(d.keys[0], pl.Group)
	attrs.PutStr(d.keys[1], pl.Topic)
	attrs.PutInt(d.keys[2], int64(pl.Partition))
}
