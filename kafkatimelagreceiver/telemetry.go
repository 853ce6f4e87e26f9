package kafkatimelagreceiver

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

// requestMetrics counts the Kafka requests the receiver sends, by API, and
// how many of them failed: in memory for tests and benchmarks, and through
// the component's MeterProvider when telemetry is set.
type requestMetrics struct {
	telemetry *metadata.TelemetryBuilder // nil: in-memory counts only

	mu     sync.Mutex
	sent   map[string]int64
	failed map[string]int64
}

func newRequestMetrics() *requestMetrics {
	return &requestMetrics{sent: map[string]int64{}, failed: map[string]int64{}}
}

func (m *requestMetrics) request(ctx context.Context, api string, err error) {
	m.mu.Lock()
	m.sent[api]++
	if err != nil {
		m.failed[api]++
	}
	m.mu.Unlock()
	if m.telemetry == nil {
		return
	}
	outcome := "success"
	if err != nil {
		outcome = "failure"
	}
	m.telemetry.KafkaTimeLagRequests.Add(ctx, 1, metric.WithAttributes(
		attribute.String("api", api), attribute.String("outcome", outcome)))
}

// snapshot returns the counts so far, by API.
func (m *requestMetrics) snapshot() (sent, failed map[string]int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sent = make(map[string]int64, len(m.sent))
	failed = make(map[string]int64, len(m.failed))
	for k, v := range m.sent {
		sent[k] = v
	}
	for k, v := range m.failed {
		failed[k] = v
	}
	return sent, failed
}

// selfTelemetry records the receiver's own metrics. Every method accepts a
// nil receiver, so code paths built without telemetry (tests) need no checks.
type selfTelemetry struct {
	builder *metadata.TelemetryBuilder
}

func (t *selfTelemetry) scrapeDone(ctx context.Context, started time.Time) {
	if t == nil {
		return
	}
	t.builder.KafkaTimeLagScrapeDuration.Record(ctx, time.Since(started).Seconds())
}

func (t *selfTelemetry) samplingDone(ctx context.Context, started time.Time) {
	if t == nil {
		return
	}
	t.builder.KafkaTimeLagSamplingDuration.Record(ctx, time.Since(started).Seconds())
}

func (t *selfTelemetry) tables(ctx context.Context, partitions, points int) {
	if t == nil {
		return
	}
	t.builder.KafkaTimeLagTrackedPartitions.Record(ctx, int64(partitions))
	t.builder.KafkaTimeLagTablePoints.Record(ctx, int64(points))
}

// methodCounts counts a scrape's estimates by method.
type methodCounts [methodRecord + 1]int64

// add counts the lags whose end offset was read: the others had nothing to
// estimate.
func (c *methodCounts) add(lags []partitionLag) {
	for _, pl := range lags {
		if pl.hasEnd {
			c[pl.method]++
		}
	}
}

func (t *selfTelemetry) estimates(ctx context.Context, counts methodCounts) {
	if t == nil {
		return
	}
	for method, n := range counts {
		if n > 0 {
			t.builder.KafkaTimeLagEstimates.Add(ctx, n, metric.WithAttributes(
				attribute.String("method", estimateMethod(method).String())))
		}
	}
}

func (t *selfTelemetry) shutdown() {
	if t != nil {
		t.builder.Shutdown()
	}
}
