package kafkatimelagreceiver

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/compute"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

// selfTelemetry records the receiver's own metrics through the component's
// MeterProvider.
type selfTelemetry struct {
	builder *metadata.TelemetryBuilder
}

// Request counts one Kafka request by API and outcome; the Kafka access
// layer calls it for every request it sends.
func (t *selfTelemetry) Request(ctx context.Context, api string, err error) {
	outcome := "success"
	if err != nil {
		outcome = "failure"
	}
	t.builder.KafkaTimeLagRequests.Add(ctx, 1, metric.WithAttributes(
		attribute.String("api", api), attribute.String("outcome", outcome)))
}

// ResponseBytes counts the bytes of one response read from a broker, by
// API; the Kafka access layer calls it from its connections' reads.
func (t *selfTelemetry) ResponseBytes(api string, bytes int) {
	t.builder.KafkaTimeLagResponseBytes.Add(context.Background(), int64(bytes), metric.WithAttributes(attribute.String("api", api)))
}

func (t *selfTelemetry) scrapeDone(ctx context.Context, started time.Time) {
	t.builder.KafkaTimeLagScrapeDuration.Record(ctx, time.Since(started).Seconds())
}

func (t *selfTelemetry) tables(ctx context.Context, partitions, points int) {
	t.builder.KafkaTimeLagTrackedPartitions.Record(ctx, int64(partitions))
	t.builder.KafkaTimeLagTablePoints.Record(ctx, int64(points))
}

// producerClocks records how many producers' clocks record reads measured
// off, and the largest offset.
func (t *selfTelemetry) producerClocks(ctx context.Context, off int, largest time.Duration) {
	t.builder.KafkaTimeLagProducerClocksOff.Record(ctx, int64(off))
	t.builder.KafkaTimeLagProducerClockOffsetMax.Record(ctx, largest.Seconds())
}

// computed counts a scrape's estimates by method, its values withheld by
// reason and its pairs committed above their end offset, which it names in
// one debug line. It adds even 0, so that each counter exists from the first
// scrape and an alert on its increase sees the first one.
func (t *selfTelemetry) computed(ctx context.Context, tally compute.Tally, logger *zap.Logger) {
	for method, n := range tally.Methods {
		if n > 0 {
			t.builder.KafkaTimeLagEstimates.Add(ctx, n, metric.WithAttributes(
				attribute.String("method", lag.Method(method).String())))
		}
	}
	t.builder.KafkaTimeLagAggregatesWithheld.Add(ctx, tally.EndOffsetUnread, metric.WithAttributes(attribute.String("reason", "end_offset_unread")))
	t.builder.KafkaTimeLagAggregatesWithheld.Add(ctx, tally.CommitUnread, metric.WithAttributes(attribute.String("reason", "commit_unread")))
	t.builder.KafkaTimeLagAggregatesWithheld.Add(ctx, tally.TimeLagUnknown, metric.WithAttributes(attribute.String("reason", "time_lag_unknown")))
	t.builder.KafkaTimeLagAggregatesWithheld.Add(ctx, tally.MarginUnknown, metric.WithAttributes(attribute.String("reason", "retention_margin_unknown")))
	t.builder.KafkaTimeLagCommitsBeyondEnd.Add(ctx, tally.BeyondEnd)
	if tally.BeyondEnd > 0 {
		logger.Debug("committed offsets above the end offset, reported as caught up (lag 0): topic recreated, log truncated, or offsets committed that were never read",
			zap.Int64("pairs", tally.BeyondEnd), zap.Strings("examples", tally.BeyondEndExamples))
	}
}

func (t *selfTelemetry) coordinationPartitions(ctx context.Context, held int) {
	t.builder.KafkaTimeLagCoordinationPartitions.Record(ctx, int64(held))
}

func (t *selfTelemetry) coordinationGroups(ctx context.Context, owned int) {
	t.builder.KafkaTimeLagCoordinationGroups.Record(ctx, int64(owned))
}

func (t *selfTelemetry) shutdown() {
	t.builder.Shutdown()
}
