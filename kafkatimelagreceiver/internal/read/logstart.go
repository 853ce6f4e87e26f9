package read

import (
	"context"
	"fmt"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
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
func (r *Reader) readStartsBehind(ctx context.Context, p *pass) {
	behind := atTheirLogStart(p.committed, p.snap.Start, p.snap.End)
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
