package accuracy

import (
	"context"
	"slices"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// simTopic is the simulated topic's name: its partitions are the
// simulation's, by number.
const simTopic = "sim"

// simPartition is the simulated topic's partition p.
func simPartition(p int) kafka.TopicPartition {
	return kafka.TopicPartition{Topic: simTopic, Partition: int32(p)}
}

// simCluster is the cluster of the simulation, one topic of one or more
// partitions, as the receiver's Kafka layer would answer it: the groups'
// committed offsets and the end offsets of the current scrape or sample, at
// the simulation's times, and records' timestamps from the timelines, read
// as the receiver's reads are (each read answering every wanted offset its
// batches hold). It counts what it is asked (Cost).
type simCluster struct {
	kafka.Cluster // what the reader is not configured to ask panics
	// byProducer: batches of producers with an ID say which wrote them
	// (false: no batch does).
	byProducer bool
	// reads are each partition's end offset answered, and when (the same
	// instants on every partition).
	reads []Read
	// committed are each partition's groups' committed offsets; logs its
	// timeline.
	committed [][]int64
	logs      []*Timeline
	cost      Cost
	// watchedFrom is each partition's first end offset answered (-1: none
	// yet): the records before it are older than any table.
	watchedFrom []int64
}

func newSimCluster(byProducer bool, partitions int) *simCluster {
	c := &simCluster{byProducer: byProducer, watchedFrom: make([]int64, partitions)}
	for p := range c.watchedFrom {
		c.watchedFrom[p] = -1
	}
	return c
}

// sample makes the cluster answer as at a sample: reads by partition.
func (c *simCluster) sample(reads []Read) { c.reads = reads }

// scrape makes the cluster answer as at a scrape: its scrapes by
// partition.
func (c *simCluster) scrape(scrapes []Scrape) {
	c.reads, c.committed, c.logs = make([]Read, 0, len(scrapes)), make([][]int64, 0, len(scrapes)), make([]*Timeline, 0, len(scrapes))
	for _, s := range scrapes {
		c.reads = append(c.reads, s.Read)
		c.committed = append(c.committed, s.Committed)
		c.logs = append(c.logs, s.Log)
	}
}

// take returns what the cluster was asked since the last take.
func (c *simCluster) take() Cost {
	cost := c.cost
	c.cost = Cost{}
	return cost
}

// now is the simulation's clock: when the current read was answered.
func (c *simCluster) now() time.Time { return time.Unix(0, c.reads[0].Received) }

// log is partition p's timeline, nil before the first scrape.
func (c *simCluster) log(p int) *Timeline {
	if p < len(c.logs) {
		return c.logs[p]
	}
	return nil
}

func (c *simCluster) ConsumerGroups(context.Context) ([]string, error) {
	n := 0
	for _, committed := range c.committed {
		n = max(n, len(committed))
	}
	groups := make([]string, n)
	for i := range groups {
		groups[i] = groupName(i)
	}
	slices.Sort(groups)
	return groups, nil
}

// CommittedOffsets answers, for the i-th group, each partition's i-th
// committed offset (a partition's groups are those that have committed
// there).
func (c *simCluster) CommittedOffsets(_ context.Context, groups []string) (map[string]kafka.Commits, error) {
	out := make(map[string]kafka.Commits, len(groups))
	for p, committed := range c.committed {
		for i, offset := range committed {
			out[groupName(i)] = append(out[groupName(i)], kafka.Commit{TopicPartition: simPartition(p), Offset: offset})
		}
	}
	return out, nil
}

func (c *simCluster) Identify(context.Context, []string) (*kafka.Identity, error) {
	return &kafka.Identity{}, nil
}

// EndOffsets and StartOffsets count a read of each partition asked: the
// cost model's requests are rounds, each asking every partition once.
func (c *simCluster) EndOffsets(_ context.Context, partitions []kafka.TopicPartition) (kafka.OffsetRead, error) {
	c.cost.OffsetReads += int64(len(partitions))
	for _, tp := range partitions {
		if p := int(tp.Partition); c.watchedFrom[p] < 0 {
			c.watchedFrom[p] = c.reads[p].End
		}
	}
	return c.offsetRead(partitions, func(r Read) int64 { return r.End }), nil
}

// TopicRetention answers the simulated topic's configuration: records
// kept for ever but where the timeline deletes them by time, compacted
// where it is, stamped at the append where it is LogAppendTime.
func (c *simCluster) TopicRetention(_ context.Context, topics []string) (map[string]kafka.TopicRetention, error) {
	out := make(map[string]kafka.TopicRetention, len(topics))
	for _, t := range topics {
		r := kafka.TopicRetention{Delete: true, RetentionMs: -1, RetentionBytes: -1}
		if log := c.log(0); log != nil {
			r.Compact, r.LogAppendTime = log.Compacted, log.LogAppendTime
			if log.Retention.Ms > 0 {
				r.RetentionMs = log.Retention.Ms / 1e6
			}
		}
		out[t] = r
	}
	return out, nil
}

// PartitionSizes answers none: no simulated topic deletes by size.
func (c *simCluster) PartitionSizes(context.Context, []kafka.TopicPartition) (map[kafka.TopicPartition]int64, error) {
	return map[kafka.TopicPartition]int64{}, nil
}

// StartOffsets answers the log starts: 0 until retention deletes.
func (c *simCluster) StartOffsets(_ context.Context, partitions []kafka.TopicPartition) (kafka.OffsetRead, error) {
	c.cost.OffsetReads += int64(len(partitions))
	return c.offsetRead(partitions, func(r Read) int64 { return r.Start }), nil
}

func (c *simCluster) offsetRead(partitions []kafka.TopicPartition, offset func(Read) int64) kafka.OffsetRead {
	read := kafka.OffsetRead{Offsets: map[kafka.TopicPartition]int64{}, Sent: time.Unix(0, c.reads[0].Sent), Received: time.Unix(0, c.reads[0].Received)}
	for _, tp := range partitions {
		read.Offsets[tp] = offset(c.reads[tp.Partition])
	}
	return read
}

// TimestampOffsets answers from the timelines as a broker's time index
// does: for each time, the first record left below the end whose timestamp
// (in milliseconds) is at or after it, with that timestamp. Each time is a
// round of its own, as a request carries one time per partition.
func (c *simCluster) TimestampOffsets(_ context.Context, asks []kafka.PartitionTimes) (kafka.TimePoints, error) {
	out := kafka.TimePoints{}
	for _, ask := range asks {
		p := int(ask.Partition)
		times := slices.Clone(ask.Millis)
		slices.Sort(times)
		for _, at := range slices.Compact(times) {
			c.cost.IndexReads++
			tp := kafka.TimePoint{AtMillis: at, Offset: -1, TimestampMillis: -1}
			if offset, stamp, ok := c.logs[p].FirstStampedLeft(at*1e6, c.reads[p].Start, c.reads[p].End); ok {
				tp.Found, tp.Offset, tp.TimestampMillis = true, offset, stamp/1e6
			}
			out[ask.TopicPartition] = append(out[ask.TopicPartition], tp)
		}
	}
	return out, nil
}

// RecordTimestamps reads the wanted records as the receiver's reads do: a
// read from the first offset not answered yet returns the batches that fit
// in FetchMaxBytes, and answers every wanted offset, and every near one,
// they hold. The cost model's groups (CostGroups) each sit at an offset of
// their own: a record older than the tables is read for each of them, and
// the reads of records inside the watched stretch grow with them too
// (Scale).
func (c *simCluster) RecordTimestamps(_ context.Context, wanted []kafka.PartitionOffsets) (kafka.RecordReads, error) {
	out := kafka.RecordReads{}
	for _, w := range wanted {
		out[w.TopicPartition] = c.readRecords(int(w.Partition), w)
	}
	return out, nil
}

func (c *simCluster) readRecords(p int, w kafka.PartitionOffsets) []kafka.RecordRead {
	log, start := c.logs[p], c.reads[p].Start
	// The receiver's reads are read_committed: nothing at or past the last
	// stable offset comes back, and aborted transactions' records are
	// skipped as markers are.
	end := min(c.reads[p].End, log.StableAt(c.reads[p].Sent))
	reads := log.Fetched(w.Offsets, end, FetchMaxBytes)
	var found []kafka.RecordRead
	var watched []int64
	for _, o := range w.Offsets {
		if o >= c.watchedFrom[p] {
			watched = append(watched, o)
			continue
		}
		if _, bytes, ok := readRecord(log, o, start, end); ok {
			c.cost.RecordReads++
			c.cost.FetchBytes += bytes
		}
	}
	rounds, bytes := log.FetchRounds(watched, end, FetchMaxBytes)
	c.cost.NearReads += rounds
	c.cost.NearBytes += bytes
	held := func(o int64) bool {
		return slices.ContainsFunc(reads, func(r FetchedRange) bool { return r.From <= o && o < r.UpTo })
	}
	for _, o := range append(slices.Clone(w.Offsets), w.Near...) {
		if o >= end || o < start || !held(o) {
			// Past the last stable offset: nothing to read yet; below the
			// log start: out of range.
			continue
		}
		// A read skips transaction markers (and compacted gaps) to the
		// next data record.
		next, isData := log.NextData(o, end)
		if !isData {
			found = append(found, kafka.RecordRead{Wanted: o, RecordTimestamp: kafka.RecordTimestamp{Offset: end, Found: kafka.RecordNone}})
			continue
		}
		left, _ := log.NextRecord(o, end)
		ts, _, _ := readRecord(log, next, start, end)
		rec := kafka.RecordTimestamp{Offset: next, Timestamp: ts, Found: kafka.RecordTimed,
			Transactional: next != left || log.Transactional(next)}
		if identified, _ := log.Identified(next); c.byProducer && identified {
			rec.Producer, _ = log.Producer(next)
			rec.ByProducer = true
		}
		found = append(found, kafka.RecordRead{Wanted: o, RecordTimestamp: rec})
	}
	return found
}
