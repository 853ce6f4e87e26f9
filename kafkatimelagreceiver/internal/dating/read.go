package dating

import (
	"context"
	"slices"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// findings are what the searches and reads of a scrape found, in the order
// apply puts them into the record cache: values, taken without the tables'
// lock.
type findings struct {
	batches []foundBatch
	// applied is how many of batches apply put already.
	applied int
}

// foundBatch is one answer's records.
type foundBatch struct {
	reads kafka.RecordReads
	// measure: the records measure their producers' clocks against the
	// tables; counted: those that give no time are counted in the report.
	measure, counted bool
	// received is when the answer was received (unix nanoseconds): every
	// record it holds existed by then.
	received int64
}

func (f *findings) add(reads kafka.RecordReads, measure, counted bool, received time.Time) {
	if len(reads) > 0 {
		f.batches = append(f.batches, foundBatch{reads: reads, measure: measure, counted: counted, received: received.UnixNano()})
	}
}

// searchIndex searches the time index for the plan's targets, in rounds
// (indexSearch), and returns what it found and what only a record read
// answers (indexFindings).
func (d *dater) searchIndex(ctx context.Context, p plan) (found findings, reads, stillReads []kafka.PartitionOffsets) {
	search := newIndexSearch(p.searches)
	d.rep.Searched, d.rep.MarkerChecks = len(search.parts), len(p.markerChecks)
	for asks := search.asks(); len(asks) > 0; asks = search.asks() {
		d.rep.IndexRounds++
		points, err := d.src.TimestampOffsets(ctx, asks)
		d.errs = append(d.errs, err)
		search.take(asks, points)
	}
	return indexFindings(search, p, d.opt.Now(), d.snap.At, &d.rep)
}

// indexFindings are what the search found, received at readAt, for a
// scrape that read its end offsets at at: the exact points the index
// answered, which measure the partition's clock (clocks.TimeIndexClock), then
// the records dated from them. It returns, largest lags first as the plan
// wanted them, what only a record read answers: records to tell from
// transaction markers (the plan's markerChecks), the records of partitions
// the index could not search (an error: a broker or topic that cannot
// search by timestamp, a denial) or whose records retention deleted, and
// records the index dated by a stamp ahead (stampedAhead). A record that
// gives no time is counted once: with the records dated, unless a read of
// it follows.
// Of those, the reads of still partitions only a marker check wants
// (stillReads, plan.still) are apart from the others (reads): read once
// within MaxReads rather than the byte budget (splitStill).
func indexFindings(search *indexSearch, p plan, readAt time.Time, at int64, rep *Report) (found findings, reads, stillReads []kafka.PartitionOffsets) {
	points, dated, fallback := search.results()
	timedInMillis(points, readAt)
	timedInMillis(dated, readAt)
	fallback = append(fallback, stampedAhead(dated, at)...)
	rep.Unsearched = len(fallback)
	need := map[kafka.TopicPartition][]int64{}
	for _, w := range append(p.markerChecks, fallback...) {
		need[w.TopicPartition] = append(need[w.TopicPartition], w.Offsets...)
	}
	// A still partition the index could not answer is read within the
	// byte budget, as any record the index leaves.
	still := map[kafka.TopicPartition]bool{}
	for tp := range p.still {
		still[tp] = true
	}
	for _, w := range fallback {
		delete(still, w.TopicPartition)
	}
	reRead := kafka.RecordReads{}
	for tp, found := range dated {
		dated[tp] = slices.DeleteFunc(found, func(r kafka.RecordRead) bool {
			if slices.Contains(need[tp], r.Wanted) {
				reRead[tp] = append(reRead[tp], r)
				return true
			}
			return false
		})
	}
	found.add(points, true, false, readAt)
	found.add(dated, false, true, readAt)
	found.add(reRead, false, false, readAt)
	for _, w := range p.wanted {
		offsets := need[w.TopicPartition]
		if len(offsets) == 0 {
			continue
		}
		slices.Sort(offsets)
		reads = append(reads, kafka.PartitionOffsets{TopicPartition: w.TopicPartition, Offsets: slices.Compact(offsets), Near: w.Near})
	}
	reads, stillReads = splitStill(reads, still)
	return found, reads, stillReads
}

// read reads the records of wanted (those the byte budget affords when
// budgeted: affordable) into found, and returns the partitions whose
// records retention deleted (unanswered).
func (d *dater) read(ctx context.Context, wanted []kafka.PartitionOffsets, budgeted bool, found *findings) []kafka.TopicPartition {
	if budgeted {
		wanted = d.affordable(wanted)
	}
	if len(wanted) == 0 {
		return nil
	}
	d.rep.Fetched += len(wanted)
	reads, err := d.src.RecordTimestamps(ctx, wanted)
	d.errs = append(d.errs, err)
	found.add(reads, true, true, d.opt.Now())
	return unanswered(wanted, reads)
}

// affordable is the head of wanted (largest lags first) the byte budget
// reads; all of it without the time index.
func (d *dater) affordable(wanted []kafka.PartitionOffsets) []kafka.PartitionOffsets {
	if !d.opt.TimeIndex {
		return wanted
	}
	n := min(int64(len(wanted)), d.readBytes/FetchBytesPerPartition)
	d.readBytes -= n * FetchBytesPerPartition
	d.rep.OverBudget += len(wanted) - int(n)
	return wanted[:n]
}

// splitStill separates from reads those of still partitions read only to
// tell markers from data: each is read once, within MaxReads, and answers
// until the partition is written again, so that they are not left to the
// byte budget (thousands of still partitions would take a Fetch every
// scrape for hours).
func splitStill(reads []kafka.PartitionOffsets, still map[kafka.TopicPartition]bool) (budgeted, stillReads []kafka.PartitionOffsets) {
	if len(still) == 0 {
		return reads, nil
	}
	for _, w := range reads {
		if still[w.TopicPartition] {
			stillReads = append(stillReads, w)
		} else {
			budgeted = append(budgeted, w)
		}
	}
	return budgeted, stillReads
}
