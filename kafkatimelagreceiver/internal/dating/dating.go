// Package dating dates one scrape's lagging records: it chooses the records
// no table dates well (lag.OutOfTable), reads them, applies what was read
// (lag.RecordTimes: their timestamps and their producers' clocks), and
// estimates when the record each lagging group consumes next was appended
// (lag.Estimate). The scrape and the accuracy evaluation both date through
// Date: what the evaluation measures is what ships.
package dating

import (
	"context"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/timetable"
)

// Source is what dating reads of Kafka: records' timestamps, and the log
// start of partitions whose record retention deleted. kafka.Cluster is one.
type Source interface {
	RecordTimestamps(ctx context.Context, wanted []kafka.PartitionOffsets) (kafka.RecordReads, error)
	StartOffsets(ctx context.Context, partitions []kafka.TopicPartition) (kafka.OffsetRead, error)
}

// Options say how much a scrape reads and what it estimates.
type Options struct {
	// MaxReads is how many partitions' records a scrape reads (0: none).
	MaxReads int
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
	// and read within MaxReads.
	Wanted, Read int
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
	read := func(wanted []kafka.PartitionOffsets) kafka.RecordReads {
		found, err := src.RecordTimestamps(ctx, wanted)
		errs = append(errs, err)
		existed := lag.Existed{End: snap.End, EndAt: snap.At, Received: opt.Now().UnixNano()}
		tables.Locked(func(v timetable.View) {
			u := records.PutAll(found, existed, lag.Proof{Index: idx, Tables: v, At: snap.At})
			rep.Untimed.Future += u.Future
			rep.Untimed.Invalid += u.Invalid
		})
		return found
	}
	if missing = plan(); len(missing) > 0 {
		found := read(missing)
		if gone := unanswered(missing, found); len(gone) > 0 {
			starts, err := src.StartOffsets(ctx, gone)
			errs = append(errs, err)
			tables.RecordStart(starts)
			for tp, start := range starts.Offsets {
				snap.Start[tp] = start
			}
			idx.SetStarts(starts.Offsets)
			if retry := plan(); len(retry) > 0 {
				read(retry)
			}
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
