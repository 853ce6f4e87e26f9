package kafkatimelagreceiver

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

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

func (t *selfTelemetry) scrapeDone(ctx context.Context, started time.Time) {
	t.builder.KafkaTimeLagScrapeDuration.Record(ctx, time.Since(started).Seconds())
}

func (t *selfTelemetry) tables(ctx context.Context, partitions, points int) {
	t.builder.KafkaTimeLagTrackedPartitions.Record(ctx, int64(partitions))
	t.builder.KafkaTimeLagTablePoints.Record(ctx, int64(points))
}

func (t *selfTelemetry) estimates(ctx context.Context, counts lag.MethodCounts) {
	for method, n := range counts {
		if n > 0 {
			t.builder.KafkaTimeLagEstimates.Add(ctx, n, metric.WithAttributes(
				attribute.String("method", lag.Method(method).String())))
		}
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
