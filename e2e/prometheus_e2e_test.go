//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/demo"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/promserver"
)

// The stack of `make run-prometheus`, on free ports: the demo cluster, the
// built collector with the repository's otelcol-config.yaml, and a real
// Prometheus with deploy/prometheus/prometheus.yml and the alerting rules.
// Only ports and intervals are changed (and the optional metrics switched on,
// so that every series docs/metrics.md lists can be checked).

const (
	repoRoot = ".."
	// promDeadline bounds the wait for the Prometheus checks: a few scrapes
	// of the collector, rates over them and a STALL need a minute or two on
	// two busy cores.
	promDeadline = 4 * time.Minute
)

// stack is the running demo, collector and Prometheus.
type stack struct {
	prom   *promserver.Server
	col    *collector
	colLog string // the collector's log file
}

func startPrometheusStack(t *testing.T) *stack {
	t.Helper()
	bin := os.Getenv("OTELCOL_BIN")
	if bin == "" {
		t.Fatal("OTELCOL_BIN is not set; run `make e2e`, which builds the collector and sets it")
	}
	promBin, err := promserver.Binary()
	if err != nil {
		t.Fatal(err)
	}
	cluster := startDemoWith(t, func(o *demo.Options) {
		// STALL within the test: commits stop early, and the status window
		// below is 3 scrapes of 2 s.
		o.PaymentsStallAfter = 10 * time.Second
	})
	dir := t.TempDir()
	exporterPort, telemetryPort, healthPort := freePort(t), freePort(t), freePort(t)

	override := filepath.Join(dir, "override.yaml")
	quoted := make([]string, len(cluster.Addrs()))
	for i, a := range cluster.Addrs() {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	writeFile(t, override, fmt.Sprintf(`receivers:
  kafka_time_lag:
    brokers: [%s]
    collection_interval: 2s
    sampling_interval: 1s
    status:
      window: 3
    metrics:
      kafka.consumer_group.offset: {enabled: true}
      kafka.partition.oldest_offset: {enabled: true}
      kafka.consumer_group.partition_status: {enabled: true}
      kafka.consumer_group.assigned_partitions: {enabled: true}
      kafka.consumer_group.partition_owner: {enabled: true}
      kafka.consumer_group.partition_retention_margin: {enabled: true}
      kafka.consumer_group.stable_lag: {enabled: true}
      kafka.consumer_group.partition_time_to_drain: {enabled: true}
      kafka.topic.produce_rate: {enabled: true}
      kafka.share_group.start_offset: {enabled: true}
exporters:
  debug:
    verbosity: basic
  prometheus:
    endpoint: 127.0.0.1:%d
extensions:
  healthcheckv2:
    http:
      endpoint: 127.0.0.1:%d
service:
  telemetry:
    metrics:
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: %d
`, strings.Join(quoted, ", "), exporterPort, healthPort, telemetryPort))
	colLog := filepath.Join(dir, "collector.log")
	col := startCollector(t, bin, colLog, filepath.Join(repoRoot, "otelcol-config.yaml"), override)
	waitHealthy(t, col, healthPort)

	// deploy/prometheus/prometheus.yml with the ports and intervals of the
	// test; each replacement must apply exactly once, so that a change of
	// the file shows here.
	cfg := readFile(t, filepath.Join(repoRoot, "deploy", "prometheus", "prometheus.yml"))
	for _, r := range [][2]string{
		{"127.0.0.1:8889", fmt.Sprintf("127.0.0.1:%d", exporterPort)},
		{"127.0.0.1:8888", fmt.Sprintf("127.0.0.1:%d", telemetryPort)},
		{"scrape_interval: 10s", "scrape_interval: 2s"},
		{"evaluation_interval: 10s", "evaluation_interval: 2s"},
	} {
		if n := strings.Count(cfg, r[0]); n != 1 {
			t.Fatalf("deploy/prometheus/prometheus.yml has %q %d times, want once", r[0], n)
		}
		cfg = strings.Replace(cfg, r[0], r[1], 1)
	}
	rules := "kafka-timelag-rules.yml"
	writeFile(t, filepath.Join(dir, rules), readFile(t, filepath.Join(repoRoot, "deploy", "prometheus", rules)))
	prom := startPrometheus(t, promBin, cfg, dir)
	t.Logf("prometheus %s at %s", promBin, prom.URL)
	return &stack{prom: prom, col: col, colLog: colLog}
}

// startPrometheus runs Prometheus with the configuration cfg in dir and
// stops it at the end of the test, logging its configuration and the end of
// its log when the test failed.
func startPrometheus(t *testing.T, bin, cfg, dir string) *promserver.Server {
	t.Helper()
	prom, err := promserver.Start(t.Context(), promserver.Options{Binary: bin, Config: cfg, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := prom.Stop(); err != nil {
			t.Errorf("stop prometheus: %v", err)
		}
		if t.Failed() {
			t.Logf("prometheus config:\n%s\nlog:\n%s", cfg, prom.LogTail(30))
		}
	})
	return prom
}

// eventually calls check until it returns nil or promDeadline passes, and
// fails the test with the last error.
func (s *stack) eventually(t *testing.T, what string, check func(context.Context) error) {
	t.Helper()
	var last error
	for end := time.Now().Add(promDeadline); ; time.Sleep(time.Second) {
		if s.col.exited() {
			t.Fatalf("collector exited: %v\n%s", s.col.err(), s.col.logTail())
		}
		if s.prom.Exited() {
			t.Fatalf("prometheus exited\n%s", s.prom.LogTail(30))
		}
		if last = check(t.Context()); last == nil {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not within %s: %v\ncollector log:\n%s", what, promDeadline, last, s.col.logTail())
		}
	}
}

// TestPrometheusEndToEnd: through Prometheus's HTTP API, the series the
// docs/metrics.md lists arrive with the labels it documents (the cluster label
// included), the demo's lag patterns are visible, the alerting rules load
// and the demo's stalled and late groups raise their alerts, and every
// query of the Grafana dashboard runs.
func TestPrometheusEndToEnd(t *testing.T) {
	s := startPrometheusStack(t)
	documented := readmeSeries(t)

	s.eventually(t, "documented series in Prometheus", func(ctx context.Context) error {
		return checkSeries(ctx, s.prom, documented)
	})

	s.eventually(t, "the demo's lag patterns", func(ctx context.Context) error {
		for _, c := range []struct{ expr, want string }{
			// audit-batch sits on records backdated up to 15 minutes.
			{`kafka_consumer_group_time_lag_max_seconds{kafka_cluster_alias="demo", group="audit-batch", topic="audit"} > 600`, "audit-batch more than 10 minutes behind"},
			{`kafka_consumer_group_time_lag_max_seconds{kafka_cluster_alias="demo", group="orders-fast", topic="orders"} < 120`, "orders-fast seconds behind"},
			{`kafka_consumer_group_lag_sum{kafka_cluster_alias="demo", group="orders-fast", topic="orders"} > on(kafka_cluster_alias) 5 * kafka_consumer_group_lag_sum{group="audit-batch", topic="audit"}`, "orders-fast far more messages behind than audit-batch"},
			{`kafka_consumer_group_status{kafka_cluster_alias="demo", group="payments-stalled", status="STALL"} == 1`, "payments-stalled STALL"},
			{`count(kafka_consumer_group_lag{kafka_cluster_alias="demo", group="orders-fast", topic="orders"}) == 6`, "orders-fast lag on its 6 partitions"},
		} {
			if _, ok, err := s.prom.QueryValue(ctx, c.expr); err != nil || !ok {
				return fmt.Errorf("%s: %s is empty (err %v)", c.want, c.expr, err)
			}
		}
		return nil
	})

	s.eventually(t, "alerts of the demo's groups", func(ctx context.Context) error {
		groups, err := s.prom.RuleGroups(ctx)
		if err != nil {
			return err
		}
		if len(groups["kafka-timelag-consumers"]) == 0 || len(groups["kafka-timelag-receiver"]) == 0 {
			return fmt.Errorf("rule groups loaded: %v", groups)
		}
		alerts, err := s.prom.Alerts(ctx)
		if err != nil {
			return err
		}
		for _, want := range []map[string]string{
			{"alertname": "KafkaConsumerGroupTimeLagHigh", "kafka_cluster_alias": "demo", "group": "audit-batch", "topic": "audit", "severity": "warning"},
			{"alertname": "KafkaConsumerGroupStalled", "kafka_cluster_alias": "demo", "group": "payments-stalled", "severity": "critical"},
		} {
			if !slices.ContainsFunc(alerts, func(a promserver.Alert) bool { return hasLabels(a.Labels, want) }) {
				return fmt.Errorf("no pending or firing alert %v among %d: %v", want, len(alerts), alerts)
			}
		}
		// Nothing about the receiver itself: it is up and reporting.
		for _, a := range alerts {
			if strings.HasPrefix(a.Labels["alertname"], "KafkaTimeLag") {
				return fmt.Errorf("receiver alert %v while the receiver works", a.Labels)
			}
		}
		return nil
	})

	checkDashboard(t, s)
	checkDocsQueries(t, s)

	// The demo's console (otelcol-config.yaml's telemetry): log lines
	// without the collector's resource, which would repeat its name,
	// version and instance id on every one.
	log := readFile(t, s.colLog)
	if !strings.Contains(log, "Everything is ready") {
		t.Fatalf("the collector's log has no start line:\n%s", log)
	}
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, `"resource": {`) {
			t.Errorf("a log line with the collector's resource: %s", line)
		}
	}
}

func hasLabels(got, want map[string]string) bool {
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// documentedSeries is one row of the series table of docs/metrics.md: series names
// and the labels they carry besides job and instance.
type documentedSeries struct {
	names  []string
	labels []string
}

// notInTheDemo lists what docs/metrics.md documents and the demo cannot show,
// with the reason.
var notInTheDemo = map[string]string{
	"kafka_consumer_group_lost_messages":                         "the demo's topics keep every record: no retention loss",
	"kafka_consumer_group_assigned_partitions/group_instance_id": "the demo's members are dynamic: the label is empty, so absent",
	"kafka_consumer_group_partition_owner/group_instance_id":     "the demo's members are dynamic: the label is empty, so absent",
	"otelcol_kafka_time_lag_coordination_groups":                 "the demo runs one collector, without coordination.group_id",
	"otelcol_kafka_time_lag_coordination_partitions":             "the demo runs one collector, without coordination.group_id",
	"otelcol_kafka_time_lag_untimed_records":                     "the demo's producers stamp their records with the host's clock",
	"otelcol_kafka_time_lag_restore_tables_left_out":             "the demo restores no damaged state",
}

var backticked = regexp.MustCompile("`([^`]+)`")

// readmeSeries reads the table between the prometheus-series markers of
// docs/metrics.md.
func readmeSeries(t *testing.T) []documentedSeries {
	t.Helper()
	readme := readFile(t, filepath.Join(repoRoot, "docs", "metrics.md"))
	_, rest, ok := strings.Cut(readme, "<!-- prometheus-series:")
	table, _, ok2 := strings.Cut(rest, "<!-- /prometheus-series -->")
	if !ok || !ok2 {
		t.Fatal("docs/metrics.md: no prometheus-series table markers")
	}
	var out []documentedSeries
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.Contains(cells[1], "`") {
			continue // header, separator, comment
		}
		var d documentedSeries
		for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			d.names = append(d.names, m[1])
		}
		for _, m := range backticked.FindAllStringSubmatch(cells[2], -1) {
			d.labels = append(d.labels, m[1])
		}
		out = append(out, d)
	}
	if len(out) < 20 {
		t.Fatalf("docs/metrics.md series table: %d rows, want every series", len(out))
	}
	for key := range notInTheDemo {
		name, _, _ := strings.Cut(key, "/")
		if !slices.ContainsFunc(out, func(d documentedSeries) bool { return slices.Contains(d.names, name) }) {
			t.Fatalf("notInTheDemo names %s, which docs/metrics.md does not list", name)
		}
	}
	return out
}

// checkSeries: each documented series exists, no series of it has a label
// docs/metrics.md does not list, together they show every listed label, and
// every series of the receiver in Prometheus is documented.
func checkSeries(ctx context.Context, prom *promserver.Server, documented []documentedSeries) error {
	names, err := prom.LabelValues(ctx, "__name__", `{__name__=~"kafka_.+|otelcol_kafka_time_lag_.+"}`)
	if err != nil {
		return err
	}
	for _, name := range names {
		if strings.Contains(name, ":") {
			continue // a recording rule's (kafka-timelag-rules.yml), not the receiver's
		}
		if !slices.ContainsFunc(documented, func(d documentedSeries) bool { return slices.Contains(d.names, name) }) {
			return fmt.Errorf("Prometheus has %s, which the series table of docs/metrics.md does not list", name)
		}
	}
	for _, d := range documented {
		for _, name := range d.names {
			if _, skip := notInTheDemo[name]; skip {
				continue
			}
			samples, err := prom.Query(ctx, name)
			if err != nil {
				return err
			}
			if len(samples) == 0 {
				return fmt.Errorf("no series %s", name)
			}
			seen := map[string]bool{}
			for _, smp := range samples {
				for label := range smp.Labels {
					switch label {
					case "__name__", "job", "instance":
						continue
					}
					if !slices.Contains(d.labels, label) {
						return fmt.Errorf("%s has label %s, which docs/metrics.md does not list (%v)", name, label, smp.Labels)
					}
					seen[label] = true
				}
			}
			for _, label := range d.labels {
				if _, skip := notInTheDemo[name+"/"+label]; !seen[label] && !skip {
					return fmt.Errorf("no series %s has the documented label %s", name, label)
				}
			}
		}
	}
	return nil
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
