package read

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

// readOutOfTableRecords reads the timestamps of the records no table can
// date (lag.OutOfTable), those of at most readPartitions partitions. A
// record that is gone was deleted by retention: the partition's log start
// is read and the oldest record still there is read instead, and set in the
// snapshot and its index.
func (r *Reader) readOutOfTableRecords(ctx context.Context, snap *lag.Snapshot, idx *lag.Index) error {
	budget := r.readPartitions(len(idx.Parts))
	missing, used := lag.OutOfTable(idx, snap.At, r.Tables, r.Records)
	if len(missing) > budget {
		r.Logger.Debug("record reads capped for this scrape", zap.Int("partitions wanted", len(missing)), zap.Int("partitions read", budget))
		missing = missing[:budget]
	}
	budget -= len(missing)
	var errs []error
	if len(missing) > 0 {
		found, err := r.Cluster.RecordTimestamps(ctx, missing)
		errs = append(errs, err)
		r.putRecords(ctx, snap, idx, found)
		var gone []kafka.TopicPartition
		for _, w := range missing {
			if !w.Answered(found[w.TopicPartition]) {
				gone = append(gone, w.TopicPartition)
			}
		}
		if len(gone) > 0 {
			kafka.SortPartitions(gone)
			startRead, err := r.Cluster.StartOffsets(ctx, gone)
			errs = append(errs, err)
			r.Tables.RecordStart(startRead)
			for tp, start := range startRead.Offsets {
				snap.Start[tp] = start
			}
			idx.SetStarts(startRead.Offsets)
			retry, usedNow := lag.OutOfTable(idx, snap.At, r.Tables, r.Records)
			used.Merge(usedNow)
			if retry = retry[:min(len(retry), budget)]; len(retry) > 0 {
				found, err := r.Cluster.RecordTimestamps(ctx, retry)
				errs = append(errs, err)
				r.putRecords(ctx, snap, idx, found)
			}
		}
	}
	r.Records.Retain(used)
	return kafka.Join(errs...)
}

// putRecords remembers the records a read found, those below the end
// offsets of snap existing by then, the others by now (the read returned),
// measures their producers' clocks by the brackets of idx's tables, and
// counts those that give no time.
func (r *Reader) putRecords(ctx context.Context, snap *lag.Snapshot, idx *lag.Index, found kafka.RecordReads) {
	existed := lag.Existed{End: snap.End, EndAt: snap.At, Received: r.Now().UnixNano()}
	untimed := r.Records.PutAll(found, existed, lag.Proof{Index: idx, Tables: r.Tables, At: snap.At})
	if r.UntimedRecords == nil {
		return
	}
	count := func(n int64, why metadata.AttributeTimestamp) {
		if n > 0 {
			r.UntimedRecords.Add(ctx, n, metric.WithAttributes(attribute.String("timestamp", why.String())))
		}
	}
	count(untimed.Future, metadata.AttributeTimestampFuture)
	count(untimed.Invalid, metadata.AttributeTimestampInvalid)
}

// readPartitions is how many partitions a scrape reads records of:
// max_record_reads_per_scrape, or half the partitions of a larger cluster,
// so that a cold start has read every partition by its second scrape
// whatever the cluster's size. One read of a partition answers every
// wanted offset in the batches it returns, so the groups of a partition
// close together cost one read. 0 reads none.
func (r *Reader) readPartitions(partitions int) int {
	if r.MaxRecordReads <= 0 {
		return 0
	}
	return max(r.MaxRecordReads, (partitions+1)/2)
}
