package read

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// readStartsBehind reads, at the scrape, the log start of the partitions
// where a group sits at or below the log start last read: such a group is
// dated by the oldest record left (the one it reads next), and the log
// start the sampler read up to sampler.FullSampleEvery samples ago may be
// gone since, retention having deleted the next segment too; dated from
// it, the group would show the age of a deleted record, a segment too old.
// Only those partitions are asked, and only where the group has a lag (a
// group caught up on a log retention emptied dates nothing), so a cluster
// whose groups keep up pays nothing.
//
// So are the partitions where a lagging group sits above that log start on
// a record retention may have deleted since (olderThanRetention): one
// appended, as the tables bound it, before its topic's retention.ms.
func (r *Reader) readStartsBehind(ctx context.Context, p *pass) {
	behind := atTheirLogStart(p.committed, p.snap.Start, p.snap.End)
	if r.Retention != nil {
		behind = append(behind, r.olderThanRetention(p.committed, p.snap.Start, p.snap.End, p.snap.At)...)
		kafka.SortPartitions(behind)
		behind = slices.Compact(behind)
	}
	if len(behind) == 0 {
		return
	}
	start, err := r.Cluster.StartOffsets(ctx, behind)
	if err = p.denials.Split(err); err != nil {
		p.errs.AddPartial(len(behind)-len(start.Offsets), fmt.Errorf("read the log start of partitions whose groups sit at it: %w", err))
	}
	r.Tables.RecordStart(start)
	p.snap.Start = r.Tables.StartOffsets()
}

// atTheirLogStart are the partitions, sorted, on which a group committed
// at or below the log start known (starts) and below the end (ends).
func atTheirLogStart(committed map[string]kafka.Commits, starts, ends map[kafka.TopicPartition]int64) []kafka.TopicPartition {
	seen := map[kafka.TopicPartition]bool{}
	var out []kafka.TopicPartition
	for _, commits := range committed {
		for _, c := range commits {
			start, known := starts[c.TopicPartition]
			end, read := ends[c.TopicPartition]
			if known && read && c.Offset <= start && c.Offset < end && !seen[c.TopicPartition] {
				seen[c.TopicPartition] = true
				out = append(out, c.TopicPartition)
			}
		}
	}
	kafka.SortPartitions(out)
	return out
}

// olderThanRetention are the partitions, of topics deleting by time, whose
// lowest lagging group above the log start known (starts) sits on a record
// the tables say may have been appended more than retention.ms before at
// (unix nanoseconds): Kafka deletes a segment once its newest record is
// that old, so the record may be gone though the log start last read is
// below it. A record in its table may have been appended as early as its
// bracket's line less its spread; one older than its table was appended
// before the table's oldest point, and counts once that point is older
// than retention.ms.
func (r *Reader) olderThanRetention(committed map[string]kafka.Commits, starts, ends map[kafka.TopicPartition]int64, at int64) []kafka.TopicPartition {
	topics := r.Retention.Limits().Topics
	lowest := map[kafka.TopicPartition]int64{}
	for _, commits := range committed {
		for _, c := range commits {
			limits, known := topics[c.Topic]
			end, read := ends[c.TopicPartition]
			start, started := starts[c.TopicPartition]
			if !known || !limits.Delete || limits.RetentionMs < 0 || !read || c.Offset >= end || started && c.Offset <= start {
				continue
			}
			if o, ok := lowest[c.TopicPartition]; !ok || c.Offset < o {
				lowest[c.TopicPartition] = c.Offset
			}
		}
	}
	if len(lowest) == 0 {
		return nil
	}
	tps := make([]kafka.TopicPartition, 0, len(lowest))
	for tp := range lowest {
		tps = append(tps, tp)
	}
	var out []kafka.TopicPartition
	r.Tables.Locked(func(v timetable.View) {
		refs := v.Refs(tps)
		for i, tp := range tps {
			b, _ := v.Bracket(refs[i], lowest[tp], timetable.Sample{Offset: ends[tp], At: at})
			appendedFrom := b.Hi.At
			if b.Lo.At != 0 {
				appendedFrom = lag.ExpectedAppend(b.Lo, b.Hi, lowest[tp]) - b.Spread
			}
			cutoff := at - topics[tp.Topic].RetentionMs*int64(time.Millisecond)
			if appendedFrom != 0 && appendedFrom < cutoff {
				out = append(out, tp)
			}
		}
	})
	return out
}
