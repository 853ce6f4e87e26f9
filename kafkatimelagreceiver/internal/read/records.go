package read

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/dating"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
)

// date dates the scrape's lagging records (dating.Date), reading those of
// at most readPartitions partitions when the scrape read end offsets
// (read), on the topics reports tells (nil: all), and counts the records
// read that give no time.
func (r *Reader) date(ctx context.Context, snap *lag.Snapshot, idx *lag.Index, read bool, reports func(topic string) bool) (*lag.Estimates, error) {
	opt := dating.Options{
		MaxReads: r.readPartitions(len(idx.Parts)), TimeIndex: r.TimeIndex, MaxReadBytes: r.MaxRecordReadBytes,
		RateWindow: r.RateWindow, Now: r.Now, Unread: !read, Topics: reports,
	}
	if r.Retention != nil {
		// Whether stamps are append times, and which topics compact, as
		// the topics' configurations last said.
		r.Records.SetTopics(r.Retention.Limits().Topics)
	}
	src := deniedReadSource{Source: r.Cluster, denials: &r.readDenied, now: r.Now()}
	est, rep, err := dating.Date(ctx, src, r.Tables, r.Records, snap, idx, opt)
	if rep.Wanted > rep.Read {
		r.Logger.Debug("record dating capped for this scrape", zap.Int("partitions wanted", rep.Wanted), zap.Int("partitions dated", rep.Read))
	}
	if r.TimeIndex && (rep.IndexRounds > 0 || rep.Fetched > 0) {
		// Why a scrape with the time index still read records, and how
		// many its byte budget left unread.
		r.Logger.Debug("records dated from the time index", zap.Int("rounds", rep.IndexRounds), zap.Int("partitions searched", rep.Searched),
			zap.Int("partitions to read for transaction markers or producers' clocks", rep.MarkerChecks), zap.Int("partitions the index did not answer", rep.Unsearched),
			zap.Int("partitions read", rep.Fetched), zap.Int("partitions left unread over the byte budget", rep.OverBudget))
	}
	r.countUntimed(ctx, rep.Untimed)
	return est, err
}

// countUntimed counts the records read that give no time, by why.
func (r *Reader) countUntimed(ctx context.Context, untimed recordcache.Untimed) {
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

// DefaultMaxRecordReads is the receiver's max_record_reads_per_scrape
// unless configured otherwise.
const DefaultMaxRecordReads = 1000

// TimeIndexRecordReadBytes is the byte budget of a scrape's record reads
// when records are dated from the time index: four partitions' reads
// (dating.FetchBytesPerPartition each), against the hundreds of KiB a
// scrape's offset reads of a thousand partitions cost.
const TimeIndexRecordReadBytes = 4 * dating.FetchBytesPerPartition

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
