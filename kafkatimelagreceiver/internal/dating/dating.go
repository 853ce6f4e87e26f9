// Package dating dates one scrape's lagging records: it chooses the records
// no table dates well (lag.OutOfTable), dates them from the brokers' time
// index (ListOffsets by timestamp, search.go) or, where the index cannot
// answer, reads them under a byte budget, applies what was found
// (lag.RecordTimes: their timestamps and their producers' clocks), and
// estimates when the record each lagging group consumes next was appended
// (lag.Estimate). The scrape and the accuracy evaluation both date through
// Date: what the evaluation measures is what ships.
package dating

import (
	"context"
	"slices"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// Source is what dating reads of Kafka: the time index, records'
// timestamps, and the log start of partitions whose record retention
// deleted. kafka.Cluster is one.
type Source interface {
	TimestampOffsets(ctx context.Context, asks []kafka.PartitionTimes) (kafka.TimePoints, error)
	RecordTimestamps(ctx context.Context, wanted []kafka.PartitionOffsets) (kafka.RecordReads, error)
	StartOffsets(ctx context.Context, partitions []kafka.TopicPartition) (kafka.OffsetRead, error)
}

// FetchBytesPerPartition is what a record read of one partition is counted
// against the byte budget (Options.MaxReadBytes): the bytes its first Fetch
// asks of the partition. A broker sends a whole batch however large, so a
// read of batches larger than this costs more.
const FetchBytesPerPartition = 64 << 10

// Options say how much a scrape reads and what it estimates.
type Options struct {
	// MaxReads is how many partitions' records a scrape dates, from the
	// time index or by reading them (0: none).
	MaxReads int
	// TimeIndex dates records from the brokers' time index, reading them
	// (Fetch) only where it cannot answer; off, every record is read.
	TimeIndex bool
	// MaxReadBytes bounds, with TimeIndex, the bytes a scrape's record
	// reads ask, counted FetchBytesPerPartition a partition; 0: none.
	// The time index is not counted against it. Without TimeIndex, MaxReads
	// alone bounds the reads.
	MaxReadBytes int64
	// RateWindow, when set, is the window each partition's production
	// rate is estimated over (lag.Estimates.ResolveProduceRates).
	RateWindow time.Duration
	// Now tells when a record read was received.
	Now func() time.Time
	// Unread: the scrape read no end offset, so the index says nothing of
	// which records are still in use: none is read, and none forgotten.
	Unread bool
}

// Report is what dating read, for the scrape's telemetry and log.
type Report struct {
	// Untimed counts the records read that give no time, by why.
	Untimed lag.Untimed
	// Wanted and Read count the partitions whose records dating wanted,
	// and dated within MaxReads.
	Wanted, Read int
	// IndexRounds counts the rounds of time-index requests; Fetched the
	// partitions whose records were read, and OverBudget those the byte
	// budget left unread.
	IndexRounds, Fetched, OverBudget int
	// Searched counts the partitions searched in the time index; of those
	// it sent to be read, MarkerChecks are those whose records only a read
	// dates right (where transaction markers may stand, or producers'
	// clocks were measured apart), and Unsearched those the index did not
	// answer: it could not be searched, retention deleted the records, or
	// a search was left open. They tell an operator why a scrape with the
	// time index read records.
	Searched, MarkerChecks, Unsearched int
}

// Date dates the lagging records of idx, a scrape's index of snap, with
// tables and records: the tables are read under their lock, once to choose
// the records to read and once to apply them and estimate, and never
// across a read. A record retention deleted raises its partition's log
// start in snap, idx and the tables, and the oldest record left is read
// instead. The estimates returned are the scrape's, and change no more;
// the error says what could not be read.
func Date(ctx context.Context, src Source, tables *timetable.Store, records *lag.RecordTimes, snap *lag.Snapshot, idx *lag.Index, opt Options) (*lag.Estimates, Report, error) {
	var (
		rep     Report
		errs    []error
		missing []kafka.PartitionOffsets
		used    lag.UsedRecords
	)
	if opt.Unread {
		var est *lag.Estimates
		tables.Locked(func(v timetable.View) { est = lag.Estimate(idx, lag.AppendTimes(v, records, snap.At)) })
		return est, Report{}, nil
	}
	budget := opt.MaxReads
	fetchBudget := opt.MaxReadBytes
	plan := func() []kafka.PartitionOffsets {
		var wanted []kafka.PartitionOffsets
		var usedNow lag.UsedRecords
		tables.Locked(func(v timetable.View) { wanted, usedNow = lag.OutOfTable(idx, snap.At, v, records) })
		if used == nil {
			used = usedNow
		} else {
			used.Merge(usedNow)
		}
		rep.Wanted += len(wanted)
		wanted = wanted[:min(len(wanted), budget)]
		budget -= len(wanted)
		rep.Read += len(wanted)
		return wanted
	}
	// affordable is the head of wanted (largest lags first) the byte
	// budget reads.
	affordable := func(wanted []kafka.PartitionOffsets) []kafka.PartitionOffsets {
		if !opt.TimeIndex {
			return wanted
		}
		n := min(int64(len(wanted)), fetchBudget/FetchBytesPerPartition)
		fetchBudget -= n * FetchBytesPerPartition
		rep.OverBudget += len(wanted) - int(n)
		return wanted[:n]
	}
	read := func(wanted []kafka.PartitionOffsets) kafka.RecordReads {
		rep.Fetched += len(wanted)
		found, err := src.RecordTimestamps(ctx, wanted)
		errs = append(errs, err)
		put(tables, records, found, snap, idx, opt, &rep, true)
		return found
	}
	fetch := func(wanted []kafka.PartitionOffsets) {
		if wanted = affordable(wanted); len(wanted) == 0 {
			return
		}
		found := read(wanted)
		if gone := unanswered(wanted, found); len(gone) > 0 {
			starts, err := src.StartOffsets(ctx, gone)
			errs = append(errs, err)
			tables.RecordStart(starts)
			for tp, start := range starts.Offsets {
				snap.Start[tp] = start
			}
			idx.SetStarts(starts.Offsets)
			if retry := affordable(plan()); len(retry) > 0 {
				read(retry)
			}
		}
	}
	if missing = plan(); len(missing) > 0 {
		if opt.TimeIndex {
			fetch(dateFromIndex(ctx, src, tables, records, snap, idx, opt, missing, &rep, &errs))
		} else {
			fetch(missing)
		}
	}
	var est *lag.Estimates
	tables.Locked(func(v timetable.View) {
		records.Retain(used)
		est = lag.Estimate(idx, lag.AppendTimes(v, records, snap.At))
		if opt.RateWindow > 0 {
			est.ResolveProduceRates(v, opt.RateWindow)
		}
	})
	return est, rep, kafka.Join(errs...)
}

// dateFromIndex dates the wanted records from the time index, in at most
// MaxIndexRounds rounds, and applies what it found: the exact points the
// index answered measure the partition's clock (lag.TimeIndexClock), then
// the records dated from them are remembered. It returns what only a
// record read answers, largest lags first as wanted lists them: records to
// tell from transaction markers on idle partitions (lag.IndexTargets), and
// the records of partitions the index could not search (an error: a broker
// or topic that cannot search by timestamp, a denial), or whose records
// retention deleted.
func dateFromIndex(ctx context.Context, src Source, tables *timetable.Store, records *lag.RecordTimes, snap *lag.Snapshot, idx *lag.Index, opt Options, wanted []kafka.PartitionOffsets, rep *Report, errs *[]error) []kafka.PartitionOffsets {
	var (
		targets      []lag.IndexTarget
		markerChecks []kafka.PartitionOffsets
	)
	tables.Locked(func(v timetable.View) { targets, markerChecks = lag.IndexTargets(idx, snap.At, v, records, wanted) })
	search := newIndexSearch(targets)
	rep.Searched, rep.MarkerChecks = len(search.parts), len(markerChecks)
	for range MaxIndexRounds {
		asks := search.asks()
		if len(asks) == 0 {
			break
		}
		rep.IndexRounds++
		points, err := src.TimestampOffsets(ctx, asks)
		*errs = append(*errs, err)
		search.take(asks, points)
	}
	points, dated, fallback := search.results()
	readAt := opt.Now()
	timedInMillis(points, readAt)
	timedInMillis(dated, readAt)
	rep.Unsearched = len(fallback)
	need := map[kafka.TopicPartition][]int64{}
	for _, w := range append(markerChecks, fallback...) {
		need[w.TopicPartition] = append(need[w.TopicPartition], w.Offsets...)
	}
	// The points measure the clock. A record that gives no time is counted
	// once: with the records dated, unless a read of it follows.
	put(tables, records, points, snap, idx, opt, &Report{}, true)
	reRead := kafka.RecordReads{}
	for tp, found := range dated {
		kept := slices.DeleteFunc(found, func(r kafka.RecordRead) bool {
			if slices.Contains(need[tp], r.Wanted) {
				reRead[tp] = append(reRead[tp], r)
				return true
			}
			return false
		})
		dated[tp] = kept
	}
	put(tables, records, dated, snap, idx, opt, rep, false)
	put(tables, records, reRead, snap, idx, opt, &Report{}, false)
	var reads []kafka.PartitionOffsets
	for _, w := range wanted {
		offsets := need[w.TopicPartition]
		if len(offsets) == 0 {
			continue
		}
		slices.Sort(offsets)
		reads = append(reads, kafka.PartitionOffsets{TopicPartition: w.TopicPartition, Offsets: slices.Compact(offsets), Near: w.Near})
	}
	return reads
}

// put remembers the records found, measuring their producers' clocks
// (measure) by the brackets the tables prove.
func put(tables *timetable.Store, records *lag.RecordTimes, found kafka.RecordReads, snap *lag.Snapshot, idx *lag.Index, opt Options, rep *Report, measure bool) {
	if len(found) == 0 {
		return
	}
	existed := lag.Existed{End: snap.End, EndAt: snap.At, Received: opt.Now().UnixNano()}
	tables.Locked(func(v timetable.View) {
		proof := lag.Proof{}
		if measure {
			proof = lag.Proof{Index: idx, Tables: v, At: snap.At}
		}
		u := records.PutAll(found, existed, proof)
		rep.Untimed.Future += u.Future
		rep.Untimed.Invalid += u.Invalid
	})
}

// unanswered are the partitions of wanted whose offsets found does not
// answer: their records are gone (retention deleted them), sorted.
func unanswered(wanted []kafka.PartitionOffsets, found kafka.RecordReads) []kafka.TopicPartition {
	var gone []kafka.TopicPartition
	for _, w := range wanted {
		if !w.Answered(found[w.TopicPartition]) {
			gone = append(gone, w.TopicPartition)
		}
	}
	kafka.SortPartitions(gone)
	return gone
}
