// Package emit writes the receiver's metrics: a long-lived Writer, and per
// scrape a Scrape that takes the computed lags, health and progress and
// returns the scrape's metrics. Every metric has one descriptor (metrics.go)
// that says, once, whether it is written directly or through the generated
// MetricsBuilder.
package emit

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/metadata"
)

// Settings configure a Writer.
type Settings struct {
	metadata.MetricsBuilderConfig
	// ClusterAlias and Replica are every point's resource attributes
	// kafka.cluster.alias (when not empty) and kafka.time_lag.replica.
	ClusterAlias, Replica string
	// Push, when set, sends chunks of a large scrape's per-pair gauges to
	// the next consumer while the scrape is built.
	Push PushFunc
}

// Writer writes the metrics of every scrape.
type Writer struct {
	m        *metrics
	resource pcommon.Resource
	// start is every point's start time but for a rebalance count that
	// started later.
	start        pcommon.Timestamp
	buildVersion string
	logger       *zap.Logger
	push         PushFunc
}

// New returns the writer of the metrics s configures.
func New(s Settings, rs receiver.Settings) (*Writer, error) {
	m := newMetrics(s.Metrics)
	if err := m.describeAll(rs); err != nil {
		return nil, fmt.Errorf("describe metrics: %w", err)
	}
	start := pcommon.NewTimestampFromTime(time.Now())
	rb := metadata.NewResourceBuilder(s.ResourceAttributes)
	if s.ClusterAlias != "" {
		rb.SetKafkaClusterAlias(s.ClusterAlias)
	}
	rb.SetKafkaTimeLagReplica(s.Replica)
	return &Writer{
		m:            m,
		resource:     rb.Emit(),
		start:        start,
		buildVersion: rs.BuildInfo.Version,
		logger:       rs.Logger,
		push:         s.Push,
	}, nil
}

// PushFunc hands one chunk of a scrape's metrics to the next consumer.
type PushFunc func(context.Context, pmetric.Metrics) error

// NewPush sends the chunks a large scrape pushes itself to next, counted in
// the receiver's accepted and refused points exactly as the scraper
// controller counts what it sends: same receiver id, same (empty) transport.
func NewPush(settings receiver.Settings, next consumer.Metrics) (PushFunc, error) {
	obs, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID:             settings.ID,
		ReceiverCreateSettings: settings,
	})
	if err != nil {
		return nil, fmt.Errorf("receiver telemetry: %w", err)
	}
	return func(ctx context.Context, md pmetric.Metrics) error {
		points := md.DataPointCount()
		ctx = obs.StartMetricsOp(ctx)
		err := next.ConsumeMetrics(ctx, md)
		obs.EndMetricsOp(ctx, "", points, err)
		return err
	}, nil
}

// Begin starts the metrics of a scrape read at the instant at (unix
// nanoseconds), of pairs (group, partition) pairs. ctx bounds the pushes
// of chunks.
func (w *Writer) Begin(ctx context.Context, at int64, pairs int) *Scrape {
	s := &Scrape{w: w, ts: pcommon.Timestamp(at), groups: newSection(w.m), partitions: newSection(w.m), reduced: newReductions(w.m)}
	s.pairs = pairChunks{w: w, ctx: ctx, capacity: pairs}
	if w.push != nil && pairs > chunkPairs {
		s.pairs.push, s.pairs.capacity = w.push, chunkPairs
	}
	return s
}

// withDirect moves the directly written metrics into md's scope, creating the
// resource and scope when md has none.
func (w *Writer) withDirect(md pmetric.Metrics, direct pmetric.MetricSlice) pmetric.Metrics {
	if direct.Len() == 0 {
		return md
	}
	var sm pmetric.ScopeMetrics
	if md.ResourceMetrics().Len() == 0 {
		rm := md.ResourceMetrics().AppendEmpty()
		w.resource.CopyTo(rm.Resource())
		sm = rm.ScopeMetrics().AppendEmpty()
		sm.Scope().SetName(metadata.ScopeName)
		sm.Scope().SetVersion(w.buildVersion)
	} else {
		sm = md.ResourceMetrics().At(0).ScopeMetrics().At(0)
	}
	direct.MoveAndAppendTo(sm.Metrics())
	return md
}
