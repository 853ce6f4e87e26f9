//go:build e2e

// Package e2e runs the built collector distribution against the in-process
// demo cluster and checks what it exports over OTLP/HTTP. Run it with
// `make e2e` (or `make test`), which builds the binary and passes its path in
// OTELCOL_BIN.
package e2e

import (
	"bytes"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/childproc"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/demo"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/otlpsink"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/promserver"
)

const (
	metricLag     = "kafka.consumer_group.lag"
	metricTimeLag = "kafka.consumer_group.time_lag"

	metricShareLag     = "kafka.share_group.lag"
	metricShareTimeLag = "kafka.share_group.time_lag"

	metricProduceRate = "kafka.partition.produce_rate"
	metricConsumeRate = "kafka.consumer_group.consume_rate"
	metricLagTrend    = "kafka.consumer_group.lag_trend"
	metricTimeToDrain = "kafka.consumer_group.time_to_drain"
	metricStuckTime   = "kafka.consumer_group.stuck_time"

	// e2eOrdersRate is the demo's orders rate in these tests.
	e2eOrdersRate = 300

	// deadline bounds each wait. It is generous because CI runs this on two
	// busy cores with the race detector on the demo side.
	deadline = 90 * time.Second

	// healthRecovery is how long the health check tolerates a recoverable
	// error (recovery_duration) before it turns unhealthy.
	healthRecovery = 2 * time.Second
)

func TestCollectorReportsLagAndTimeLag(t *testing.T) {
	bin := os.Getenv("OTELCOL_BIN")
	if bin == "" {
		t.Fatal("OTELCOL_BIN is not set; run `make e2e`, which builds the collector and sets it")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("collector binary OTELCOL_BIN=%s: %v (run `make build`)", bin, err)
	}

	cluster := startDemo(t)
	sink := startOTLPSink(t)
	healthPort := freePort(t)

	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	cfg := collectorConfig(cluster.Addrs(), sink.URL, healthPort, storageOptions{})
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatalf("write collector config: %v", err)
	}
	t.Logf("collector config:\n%s", cfg)

	col := startCollector(t, bin, filepath.Join(dir, "collector.log"), cfgPath)
	waitHealthy(t, col, healthPort)

	var last string
	ok := poll(func() bool {
		if col.exited() {
			return true
		}
		var verdict error
		last, verdict = judge(sink.snapshot())
		if verdict == nil {
			last, verdict = judgeProgress(sink.snapshot(), sink.peaks())
		}
		return verdict == nil
	})
	if col.exited() {
		t.Fatalf("collector exited early: %v\n%s", col.err(), col.logTail())
	}
	if !ok {
		t.Fatalf("no export met the expectations within %s; last verdict:\n%s\ncollector log:\n%s", deadline, last, col.logTail())
	}
	t.Logf("expectations met:\n%s", last)
}

// judge checks one snapshot of the latest exported values and returns a
// description of what it saw plus nil, or the first unmet expectation.
func judge(s series) (string, error) {
	var b strings.Builder
	groups := []string{demo.GroupOrdersFast, demo.GroupAuditBatch, demo.GroupPaymentsStalled, demo.GroupInventory, demo.GroupClicksReader}
	for _, g := range groups {
		fmt.Fprintf(&b, "  %-22s lag sum %6d over %d partitions, time lag max %8.1fs over %d partitions\n",
			g, int64(s.sum(metricLag, g)), s.count(metricLag, g), s.max(metricTimeLag, g), s.count(metricTimeLag, g))
	}
	fmt.Fprintf(&b, "  %-22s unfinished %4d over %d partitions, oldest unfinished record %6.1fs old (share group)\n",
		demo.GroupJobsWorkers, int64(s.sum(metricShareLag, demo.GroupJobsWorkers)), s.count(metricShareLag, demo.GroupJobsWorkers), s.max(metricShareTimeLag, demo.GroupJobsWorkers))
	desc := b.String()

	// jobs-workers' members take 250 ms over each record, three at a time:
	// its oldest unfinished record is seconds old.
	if n := s.count(metricShareTimeLag, demo.GroupJobsWorkers); n == 0 {
		return desc, fmt.Errorf("no %s for share group %s yet", metricShareTimeLag, demo.GroupJobsWorkers)
	}
	if age := s.max(metricShareTimeLag, demo.GroupJobsWorkers); age < 0 || age > 120 {
		return desc, fmt.Errorf("%s oldest unfinished record %.1fs old, want seconds (0-120s)", demo.GroupJobsWorkers, age)
	}
	for _, g := range groups {
		if s.count(metricLag, g) == 0 {
			return desc, fmt.Errorf("no %s for group %s yet", metricLag, g)
		}
	}
	for _, g := range []string{demo.GroupOrdersFast, demo.GroupAuditBatch} {
		if s.count(metricTimeLag, g) == 0 {
			return desc, fmt.Errorf("no %s for group %s yet", metricTimeLag, g)
		}
	}
	if n := s.count(metricLag, demo.GroupOrdersFast); n != 6 {
		return desc, fmt.Errorf("%s has lag for %d orders partitions, want 6", demo.GroupOrdersFast, n)
	}

	auditTime, ordersTime := s.max(metricTimeLag, demo.GroupAuditBatch), s.max(metricTimeLag, demo.GroupOrdersFast)
	auditLag, ordersLag := s.sum(metricLag, demo.GroupAuditBatch), s.sum(metricLag, demo.GroupOrdersFast)
	switch {
	// audit-batch sits on a record backdated 12 minutes at startup; the test
	// adds at most a few minutes to that.
	case auditTime < 10*60 || auditTime > 30*60:
		return desc, fmt.Errorf("audit-batch time lag %.1fs, want 10-30 minutes", auditTime)
	// orders-fast commits records once they are 2s old, every second.
	case ordersTime < 0 || ordersTime > 120:
		return desc, fmt.Errorf("orders-fast time lag %.1fs, want seconds (0-120s)", ordersTime)
	case auditTime < 10*ordersTime:
		return desc, fmt.Errorf("audit-batch time lag %.1fs is not >> orders-fast's %.1fs", auditTime, ordersTime)
	case auditLag < 1 || auditLag > 200:
		return desc, fmt.Errorf("audit-batch offset lag %.0f, want a few to tens of records", auditLag)
	case ordersLag < 5*auditLag:
		return desc, fmt.Errorf("orders-fast offset lag %.0f is not far larger than audit-batch's %.0f", ordersLag, auditLag)
	}
	return desc, nil
}

// judgeProgress checks the rate metrics: the production rate of orders
// near the demo's; shipments-catchup catching up after its surge (a time to
// drain was estimated); shipments-slow falling behind (lag trend positive,
// never a time to drain); payments-stalled stuck for seconds since it
// stalled.
func judgeProgress(latest, peaks series) (string, error) {
	var ordersRate float64
	for k, v := range latest {
		if k.metric == metricProduceRate && k.topic == demo.TopicOrders {
			ordersRate += v
		}
	}
	catchupDrain, catchupDrained := peaks[seriesKey{metricTimeToDrain, demo.GroupShipmentsCatchup, demo.TopicShipments, -1}]
	slowTrend := latest[seriesKey{metricLagTrend, demo.GroupShipmentsSlow, demo.TopicShipments, -1}]
	_, slowDrain := peaks[seriesKey{metricTimeToDrain, demo.GroupShipmentsSlow, demo.TopicShipments, -1}]
	stuck := latest[seriesKey{metricStuckTime, demo.GroupPaymentsStalled, demo.TopicPayments, -1}]
	desc := fmt.Sprintf("  orders produce rate %.1f/s; shipments-catchup longest time to drain %.1fs; shipments-slow lag trend %+.1f/s; payments-stalled stuck %.1fs\n",
		ordersRate, catchupDrain, slowTrend, stuck)
	switch {
	case ordersRate < 0.75*e2eOrdersRate || ordersRate > 1.25*e2eOrdersRate:
		return desc, fmt.Errorf("orders produce rate %.1f/s, want about %d/s", ordersRate, e2eOrdersRate)
	case !catchupDrained || catchupDrain <= 0:
		return desc, fmt.Errorf("no time to drain yet for %s after its surge", demo.GroupShipmentsCatchup)
	case slowDrain:
		return desc, fmt.Errorf("%s falls behind but has a time to drain", demo.GroupShipmentsSlow)
	case slowTrend <= 0:
		return desc, fmt.Errorf("%s lag trend %+.1f/s, want positive", demo.GroupShipmentsSlow, slowTrend)
	case stuck < 4:
		return desc, fmt.Errorf("%s stuck %.1fs, want seconds", demo.GroupPaymentsStalled, stuck)
	}
	return desc, nil
}

func startDemo(t *testing.T) *demo.Demo {
	t.Helper()
	return startDemoWith(t, func(*demo.Options) {})
}

// startDemoWith starts the demo with the tests' options, changed by adjust.
func startDemoWith(t *testing.T, adjust func(*demo.Options)) *demo.Demo {
	t.Helper()
	logs := &lockedBuffer{}
	o := demo.Options{
		Logger: log.New(logs, "kafkademo: ", log.Lmicroseconds),
		// A few hundred records/s keeps orders-fast hundreds of records
		// behind without starving the collector of CPU.
		OrdersRate: e2eOrdersRate,
		// One shipments surge soon after the start, that shipments-catchup
		// drains in about 17 s (500 behind at 30/s net); payments-stalled
		// stalls early.
		ShipmentsRate:            20,
		ShipmentsSurgeRate:       100,
		ShipmentsSurgeAfter:      10 * time.Second,
		ShipmentsSurgeFor:        10 * time.Second,
		ShipmentsSurgeEvery:      time.Hour,
		ShipmentsCatchupReadRate: 50,
		PaymentsStallAfter:       10 * time.Second,
		// The batch job must not run during the test: its commit would
		// erase the seeded minutes of time lag the test looks for.
		AuditBatchEvery: time.Hour,
	}
	adjust(&o)
	d, err := demo.Start(t.Context(), o)
	if err != nil {
		t.Fatalf("start demo cluster: %v", err)
	}
	t.Cleanup(func() {
		d.Close()
		if t.Failed() {
			t.Logf("demo events:\n%s", logs)
		}
	})
	t.Logf("demo cluster on %v", d.Addrs())
	return d
}

// storageOptions turns on table persistence in the collector config.
type storageOptions struct {
	dir         string // file_storage directory; empty: no storage
	recordReads int    // max_record_reads_per_scrape when dir is set
}

func collectorConfig(brokers []string, otlpURL string, healthPort int, storage storageOptions) string {
	quoted := make([]string, len(brokers))
	for i, b := range brokers {
		quoted[i] = strconv.Quote(b)
	}
	receiverExtra, extensionExtra, extensions := "", "", "[healthcheckv2]"
	if storage.dir != "" {
		receiverExtra = fmt.Sprintf(`
    storage: file_storage
    storage_interval: 2s
    max_record_reads_per_scrape: %d`, storage.recordReads)
		extensionExtra = fmt.Sprintf(`
  file_storage:
    directory: %s`, strconv.Quote(storage.dir))
		extensions = "[healthcheckv2, file_storage]"
	}
	return fmt.Sprintf(`receivers:
  kafka_time_lag:
    brokers: [%s]
    collection_interval: 2s
    sampling_interval: 1s
    rate_window: 6s
    # The demo backdates the audit topic's history (otelcol-config.yaml).
    trusted_timestamp_topics: ["^audit$"]%s
exporters:
  otlp_http:
    endpoint: %s
    retry_on_failure:
      enabled: false
extensions:
  healthcheckv2:
    use_v2: true
    component_health:
      include_recoverable_errors: true
      recovery_duration: %s
      include_permanent_errors: true
    http:
      endpoint: 127.0.0.1:%d
      status:
        enabled: true
        path: /%s
service:
  extensions: %s
  telemetry:
    metrics:
      level: none
  pipelines:
    metrics:
      receivers: [kafka_time_lag]
      exporters: [otlp_http]
`, strings.Join(quoted, ", "), receiverExtra, otlpURL, healthRecovery, healthPort, extensionExtra, extensions)
}

// seriesKey identifies one data point stream.
type seriesKey struct {
	metric, group, topic string
	partition            int64
}

// series holds the latest value of each stream. Metrics without a group or
// a partition attribute have them empty and -1.
type series map[seriesKey]float64

func (s series) each(metric, group string, fn func(float64)) {
	for k, v := range s {
		if k.metric == metric && k.group == group {
			fn(v)
		}
	}
}

func (s series) count(metric, group string) int {
	n := 0
	s.each(metric, group, func(float64) { n++ })
	return n
}

func (s series) sum(metric, group string) float64 {
	var n float64
	s.each(metric, group, func(v float64) { n += v })
	return n
}

func (s series) max(metric, group string) float64 {
	m := -1.0
	s.each(metric, group, func(v float64) { m = max(m, v) })
	return m
}

// otlpSink is an OTLP/HTTP metrics endpoint that keeps the latest value of
// every per-partition lag stream it receives.
type otlpSink struct {
	*httptest.Server
	mu     sync.Mutex
	latest series
	// peak is the largest value each stream has had.
	peak series
	// first is the first export since the last reset that carried any lag
	// point: what one scrape reported, unmixed with later ones.
	first series
}

// reset forgets everything received so far.
func (s *otlpSink) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latest, s.first, s.peak = series{}, nil, series{}
}

// firstExport returns the first export since the last reset, if any.
func (s *otlpSink) firstExport() (series, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first, s.first != nil
}

func startOTLPSink(t *testing.T) *otlpSink {
	t.Helper()
	s := &otlpSink{latest: series{}, peak: series{}}
	s.Server = httptest.NewServer(otlpsink.Handler(s.record, nil))
	t.Cleanup(s.Close)
	return s
}

func (s *otlpSink) snapshot() series {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(series, len(s.latest))
	for k, v := range s.latest {
		out[k] = v
	}
	return out
}

func (s *otlpSink) record(md pmetric.Metrics, _ int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	batch := series{}
	defer func() {
		if s.first == nil && len(batch) > 0 {
			s.first = batch
		}
	}()
	otlpsink.EachGaugePoint(md, func(metric string, dp pmetric.NumberDataPoint) {
		switch metric {
		case metricLag, metricTimeLag:
		case metricProduceRate, metricConsumeRate, metricLagTrend, metricTimeToDrain, metricStuckTime:
		case metricShareLag, metricShareTimeLag:
		default:
			return
		}
		key := keyOf(metric, dp.Attributes())
		v := value(dp)
		s.latest[key] = v
		if peak, seen := s.peak[key]; !seen || v > peak {
			s.peak[key] = v
		}
		if metric == metricLag || metric == metricTimeLag {
			batch[key] = v
		}
	})
}

// peaks returns the largest value of every stream seen so far.
func (s *otlpSink) peaks() series {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(series, len(s.peak))
	for k, v := range s.peak {
		out[k] = v
	}
	return out
}

func keyOf(metric string, attrs pcommon.Map) seriesKey {
	key := seriesKey{metric: metric, partition: -1}
	if v, ok := attrs.Get("group"); ok {
		key.group = v.Str()
	}
	if v, ok := attrs.Get("topic"); ok {
		key.topic = v.Str()
	}
	if v, ok := attrs.Get("partition"); ok {
		key.partition = v.Int()
	}
	return key
}

func value(dp pmetric.NumberDataPoint) float64 {
	if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
		return float64(dp.IntValue())
	}
	return dp.DoubleValue()
}

// collector is the running distribution binary.
type collector struct {
	*childproc.Process
}

// startCollector runs bin with the configuration files cfgPaths, each merged
// over the ones before it, and stops it at the end of the test.
func startCollector(t *testing.T, bin, logPath string, cfgPaths ...string) *collector {
	t.Helper()
	var args []string
	for _, p := range cfgPaths {
		args = append(args, "--config", p)
	}
	return startChild(t, bin, logPath, nil, args...)
}

// startChild runs bin (the collector) with args and env added to its
// environment, and stops it at the end of the test (SIGTERM, a clean exit
// expected).
func startChild(t *testing.T, bin, logPath string, env []string, args ...string) *collector {
	t.Helper()
	p, err := childproc.Start(logPath, env, bin, args...)
	if err != nil {
		t.Fatalf("%s: %v", filepath.Base(bin), err)
	}
	c := &collector{p}
	t.Cleanup(func() { c.stop(t) })
	return c
}

func (c *collector) exited() bool { return c.Exited() }

// err is the process's exit error; call it only after exited reports true.
func (c *collector) err() error { return c.Err() }

// stop sends SIGTERM, as a service manager would, and expects a clean exit
// within 30 seconds; it kills the process only if the shutdown hangs.
func (c *collector) stop(t *testing.T) {
	if c.Exited() {
		return
	}
	if err := c.Stop(30 * time.Second); err != nil {
		t.Errorf("collector: %v\n%s", err, c.logTail())
	}
}

func (c *collector) logTail() string { return c.LogTail(60) }

func waitHealthy(t *testing.T, c *collector, port int) {
	t.Helper()
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	client := &http.Client{Timeout: 2 * time.Second}
	healthy := poll(func() bool {
		if c.exited() {
			return true
		}
		resp, err := client.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if c.exited() {
		t.Fatalf("collector exited before becoming healthy: %v\n%s", c.err(), c.logTail())
	}
	if !healthy {
		t.Fatalf("collector not healthy at %s within %s\n%s", url, deadline, c.logTail())
	}
}

// poll calls cond every half second until it returns true or deadline
// passes, and reports whether it did.
func poll(cond func() bool) bool {
	for end := time.Now().Add(deadline); ; time.Sleep(500 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	port, err := promserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// lockedBuffer collects the demo's event lines from its goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
