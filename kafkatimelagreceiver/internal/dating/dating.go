// Package dating dates one scrape's lagging records, in three phases:
//
//   - plan (plan.go), under the tables' lock once: the records no table
//     dates well (lag.OutOfTable), within the scrape's budget, and the
//     searches of the time index for them (targets.go), copied into a
//     value;
//   - search and read, without the lock: the brokers' time index (ListOffsets
//     by timestamp) searched in rounds by a pure search (search.go: answers
//     in, asks out), and the records it cannot answer read under a byte
//     budget (read.go); what they found is a value (findings);
//   - apply (apply.go), under the lock once: the findings put into the
//     record cache (their timestamps and producers' clocks), and the record
//     each lagging group consumes next dated (lag.Estimate).
//
// Where retention deleted a record wanted, the log start is read and the
// oldest record left is read instead: what was found so far is applied and
// the retry planned under the lock once more. The scrape and the accuracy
// evaluation both date through Date: what the evaluation measures is what
// ships.
package dating

import (
	"context"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
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
	// Topics, when set, tells the topics whose records are searched and
	// read; those of the others are dated by the tables alone (another
	// replica reports them).
	Topics func(topic string) bool
}

// Report is what dating read, for the scrape's telemetry and log.
type Report struct {
	// Untimed counts the records read that give no time, by why.
	Untimed recordcache.Untimed
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
// tables and records: plan under the tables' lock, search and read without
// it, apply under it. A record retention deleted raises its partition's log
// start in snap, idx and the tables, and the oldest record left is read
// instead. The estimates returned are the scrape's, and change no more;
// the error says what could not be read.
func Date(ctx context.Context, src Source, tables *timetable.Store, records *recordcache.Cache, snap *lag.Snapshot, idx *lag.Index, opt Options) (*lag.Estimates, Report, error) {
	d := &dater{src: src, records: records, snap: snap, opt: opt, reads: opt.MaxReads, readBytes: opt.MaxReadBytes}
	var (
		est    *lag.Estimates
		tabled *lag.Tabled
		p      plan
	)
	if opt.Unread {
		// No end offset was read: the index says nothing of which records
		// are still in use, so none is read, and none forgotten.
		tables.Locked(func(v timetable.View) {
			tabled = idx.ResolveTables(v)
			est = lag.Estimate(idx, lag.AppendTimes(tabled, v, records, snap.At))
		})
		return est, Report{}, nil
	}
	tables.Locked(func(v timetable.View) {
		tabled = idx.ResolveTables(v)
		p = d.plan(tabled, v)
	})
	var found findings
	if len(p.wanted) > 0 {
		reads := p.wanted
		var gone []kafka.TopicPartition
		if opt.TimeIndex {
			var still []kafka.PartitionOffsets
			found, reads, still = d.searchIndex(ctx, p)
			gone = d.read(ctx, still, false, &found)
		}
		gone = append(gone, d.read(ctx, reads, true, &found)...)
		if len(gone) > 0 {
			starts, err := src.StartOffsets(ctx, gone)
			d.errs = append(d.errs, err)
			var retry []kafka.PartitionOffsets
			tables.Locked(func(v timetable.View) {
				d.apply(tabled, v, &found)
				d.raiseStarts(tabled, v, starts)
				retry = d.choose(tabled, v)
			})
			d.read(ctx, retry, true, &found)
		}
	}
	tables.Locked(func(v timetable.View) {
		d.apply(tabled, v, &found)
		est = d.estimate(tabled, v)
	})
	return est, d.rep, kafka.Join(d.errs...)
}
