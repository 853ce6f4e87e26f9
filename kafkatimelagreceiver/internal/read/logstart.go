package read

import (
	"context"
	"fmt"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// readStartsBehind reads, at the scrape, the log start of the partitions
// where a lagging group may sit on a record retention deleted since the
// log start was last read (every sampler.FullSampleEvery samples): one at
// or below that log start, whose date is the oldest record left's and so
// that log start's (retention may have deleted the next segment too), and,
// on a topic deleting by time, one on a record the tables say may be older
// than its retention.ms (olderThanRetention). Dated from a log start gone,
// or from its own deleted record, the group would show a record's age
// that is no longer in the log, a segment too old. Only those partitions
// are asked, so a cluster whose groups keep up pays nothing; the index's
// log starts are raised to what is read.
func (r *Reader) readStartsBehind(ctx context.Context, p *pass) {
	var behind []kafka.TopicPartition
	r.Tables.Locked(func(v timetable.View) {
		older := r.olderThanRetention(v, p.snap.At)
		p.idx.EachLowestLagging(func(part lag.Partition, from int64) {
			if part.HasStart && from <= part.Start || older(part, from) {
				behind = append(behind, part.TopicPartition)
			}
		})
	})
	if len(behind) == 0 {
		return
	}
	start, err := r.Cluster.StartOffsets(ctx, behind)
	if err = p.denials.Split(err); err != nil {
		p.errs.AddPartial(len(behind)-len(start.Offsets), fmt.Errorf("read the log start of partitions whose groups may sit on deleted records: %w", err))
	}
	r.Tables.RecordStart(start)
	p.snap.Start = r.Tables.StartOffsets()
	p.idx.SetStarts(start.Offsets)
}

// olderThanRetention tells whether the record at offset from of a
// partition, of a topic deleting by time, may have been appended more than
// its retention.ms before at (unix nanoseconds): Kafka deletes a segment
// once its newest record is that old, so such a record may be gone though
// the log start last read is below it. A record in its table may have been
// appended as early as its bracket's line less its spread; one older than
// its table was appended before the table's oldest point, and counts once
// that point is older than retention.ms. tables is the View of the caller's lock.
func (r *Reader) olderThanRetention(tables timetable.View, at int64) func(part lag.Partition, from int64) bool {
	if r.Retention == nil {
		return func(lag.Partition, int64) bool { return false }
	}
	topics := r.Retention.Limits().Topics
	return func(part lag.Partition, from int64) bool {
		limits, known := topics[part.Topic]
		if !known || !limits.Delete || limits.RetentionMs < 0 || !part.HasEnd {
			return false
		}
		ref := tables.Refs([]kafka.TopicPartition{part.TopicPartition})[0]
		b, _ := tables.Bracket(ref, from, timetable.Sample{Offset: part.End, At: at})
		appendedFrom := b.Hi.At
		if b.Lo.At != 0 {
			appendedFrom = lag.ExpectedAppend(b.Lo, b.Hi, from) - b.Spread
		}
		cutoff := at - limits.RetentionMs*int64(time.Millisecond)
		return appendedFrom != 0 && appendedFrom < cutoff
	}
}
