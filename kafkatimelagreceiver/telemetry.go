package kafkatimelagreceiver

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

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

// withheld counts one scrape's values left out rather than folded over part
// of the partitions they name.
type withheld struct {
	endOffsetUnread, timeLagUnknown int64
}

func (w *withheld) addAggregates(aggs []lag.TopicLag) {
	for i := range aggs {
		switch {
		case !aggs[i].HasLag:
			w.endOffsetUnread++
		case !aggs[i].HasTimeLag:
			w.timeLagUnknown++
		}
	}
}

// report adds even 0, so that the counter exists from the first scrape.
func (w *withheld) report(ctx context.Context, t *selfTelemetry) {
	t.builder.KafkaTimeLagAggregatesWithheld.Add(ctx, w.endOffsetUnread, metric.WithAttributes(attribute.String("reason", "end_offset_unread")))
	t.builder.KafkaTimeLagAggregatesWithheld.Add(ctx, w.timeLagUnknown, metric.WithAttributes(attribute.String("reason", "time_lag_unknown")))
}

// commitsBeyondEnd gathers one scrape's pairs committed above their
// partition's end offset: they are reported as caught up (lag 0), which
// hides a topic recreated under its groups, a truncated log, or a consumer
// committing what it never read.
type commitsBeyondEnd struct {
	pairs    int64
	examples []string
}

// maxBeyondEndLogged bounds the pairs the debug line names.
const maxBeyondEndLogged = 10

func (c *commitsBeyondEnd) add(lags []lag.PartitionLag) {
	for i := range lags {
		pl := &lags[i]
		if !pl.HasEnd || pl.Committed <= pl.End {
			continue
		}
		c.pairs++
		if len(c.examples) < maxBeyondEndLogged {
			c.examples = append(c.examples, fmt.Sprintf("%s %s/%d committed %d, end %d", pl.Group, pl.Topic, pl.Partition, pl.Committed, pl.End))
		}
	}
}

// report counts the pairs and names the first ones in one debug line. It
// adds even 0, so that the counter exists from the first scrape and an alert
// on its increase sees the first pair.
func (c *commitsBeyondEnd) report(ctx context.Context, t *selfTelemetry, logger *zap.Logger) {
	t.builder.KafkaTimeLagCommitsBeyondEnd.Add(ctx, c.pairs)
	if c.pairs == 0 {
		return
	}
	logger.Debug("committed offsets above the end offset, reported as caught up (lag 0): topic recreated, log truncated, or offsets committed that were never read",
		zap.Int64("pairs", c.pairs), zap.Strings("examples", c.examples))
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
