//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/demo"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/k8sdecode"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/promserver"
)

// kubePrometheusStackRelease is the Helm release name kube-prometheus-stack
// is installed as in these tests (its README's own example). With its
// default values (prometheus.prometheusSpec.podMonitorSelectorNilUsesHelmValues
// and serviceMonitorSelectorNilUsesHelmValues true, the namespace selectors
// {}), its Prometheus scrapes the PodMonitors and ServiceMonitors of every
// namespace that carry the label release: <that name>, and nothing else.
const kubePrometheusStackRelease = "kube-prometheus-stack"

// lagSeries is the series the chart is installed for.
const lagSeries = "kafka_consumer_group_time_lag_seconds"

// TestHelmExamplesReachPrometheus installs, as far as a machine without
// Kubernetes can, each values file of deploy/helm/examples the way the
// README's first Helm command does, next to kube-prometheus-stack with its
// default selectors, and checks that kafka_consumer_group_time_lag_seconds
// reaches a real Prometheus:
//
//   - helm template renders the example; every document decodes strictly;
//   - the collector runs the rendered ConfigMap's configuration, with only
//     what a pod gets from Kubernetes replaced: the brokers are the demo
//     cluster's, which speaks plaintext without SASL (so the tls and auth
//     blocks the example renders are dropped: helm-check validates them
//     with the built collector, and the receiver's security tests exercise
//     each mechanism), listeners on 0.0.0.0:<container port> move to free
//     loopback ports, and the intervals shrink to seconds;
//   - in pull mode, Prometheus scrapes it with the scrape configuration
//     kube-prometheus-stack's Prometheus Operator would generate from the
//     rendered PodMonitor or ServiceMonitor (the monitor's label must match
//     the default selector; the endpoint's port resolved by name to the
//     container's, its path and metric relabelings as rendered);
//   - in OTLP mode (otlp-push.yaml, Prometheus 3's OTLP receiver), the
//     collector pushes to the rendered endpoint's path on a gateway: a
//     second collector receiving OTLP on /api/v1/otlp/v1/metrics and
//     exposing it, with kafka.cluster.alias promoted to a label as the
//     example's promoteResourceAttributes does, to the Prometheus scrape.
//     Debian's Prometheus (2.42) has no OTLP receiver; `make
//     bench-prometheus` pushes into Prometheus 3's.
func TestHelmExamplesReachPrometheus(t *testing.T) {
	bin := os.Getenv("OTELCOL_BIN")
	helm := os.Getenv("HELM_BIN")
	if bin == "" || helm == "" {
		t.Fatal("OTELCOL_BIN or HELM_BIN is not set; run `make e2e`, which builds both and sets them")
	}
	promBin, err := promserver.Binary()
	if err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Glob(filepath.Join(repoRoot, "deploy", "helm", "examples", "*.yaml"))
	if err != nil || len(examples) != 5 {
		t.Fatalf("deploy/helm/examples: %d files (%v), want 5", len(examples), err)
	}
	decoder, err := k8sdecode.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	cluster := startDemo(t)
	for _, example := range examples {
		name := strings.TrimSuffix(filepath.Base(example), ".yaml")
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command(helm, "template", "lag", filepath.Join(repoRoot, "deploy", "helm", "otelcol-kafkatimelag"),
				"--namespace", "kafka", "-f", example).Output()
			if err != nil {
				t.Fatalf("helm template -f %s: %v", example, err)
			}
			var objects []runtime.Object
			for _, doc := range k8sdecode.Documents(out) {
				obj, err := decoder.Decode(doc)
				if err != nil {
					t.Fatalf("rendered document: %v\n%s", err, doc)
				}
				objects = append(objects, obj)
			}
			r := newRelease(t, objects)
			alias := r.clusterAlias(t)
			r.pointAtDemo(t, cluster)
			scrapes := r.scrapeConfigs(t)
			if endpoint := r.otlpEndpoint(); endpoint != "" {
				scrapes = append(scrapes, startOTLPGateway(t, bin, r, endpoint))
			}
			if len(scrapes) == 0 {
				t.Fatal("nothing would scrape the replicas")
			}

			dir := t.TempDir()
			cfg := filepath.Join(dir, "config.yaml")
			writeFile(t, cfg, r.configYAML(t))
			col := startChild(t, bin, filepath.Join(dir, "collector.log"), r.env, "--config", cfg)
			waitHealthy(t, col, r.localPorts[13133])

			prom := startPrometheus(t, promBin, "global:\n  scrape_interval: 2s\nscrape_configs:\n"+strings.Join(scrapes, ""), dir)
			expr := fmt.Sprintf(`%s{kafka_cluster_alias=%q, group=%q, topic=%q}`, lagSeries, alias, demo.GroupAuditBatch, demo.TopicAudit)
			var last error
			for end := time.Now().Add(promDeadline); ; time.Sleep(time.Second) {
				if col.exited() {
					t.Fatalf("collector exited: %v\n%s", col.err(), col.logTail())
				}
				if last = lagArrived(t.Context(), prom, expr, r.pull); last == nil {
					break
				}
				if time.Now().After(end) {
					t.Fatalf("%s: not in Prometheus within %s: %v\ncollector log:\n%s", expr, promDeadline, last, col.logTail())
				}
			}
		})
	}
}

// lagArrived: the audit-batch time lag is in Prometheus, minutes as the
// demo makes it, and in pull mode without the labels that name a replica
// (the monitor's metric relabelings dropped them).
func lagArrived(ctx context.Context, prom *promserver.Server, expr string, pull bool) error {
	samples, err := prom.Query(ctx, expr)
	if err != nil {
		return err
	}
	if len(samples) == 0 {
		return fmt.Errorf("%s is empty", expr)
	}
	for _, s := range samples {
		if s.Value < 60 {
			return fmt.Errorf("%s = %.1f s, want minutes", expr, s.Value)
		}
		if pull {
			for _, l := range []string{"pod", "instance", "container", "endpoint", "service"} {
				if v, ok := s.Labels[l]; ok {
					return fmt.Errorf("%s carries %s=%q, which the monitor drops", expr, l, v)
				}
			}
		}
	}
	return nil
}

// release is one rendered example: its objects, its collector
// configuration as a map, and the loopback port standing in for each
// container port.
type release struct {
	deployment *appsv1.Deployment
	service    *corev1.Service
	podMonitor *monitoringv1.PodMonitor
	svcMonitor *monitoringv1.ServiceMonitor
	config     map[string]any
	env        []string
	localPorts map[int32]int
	pull       bool
}

func newRelease(t *testing.T, objects []runtime.Object) *release {
	t.Helper()
	r := &release{localPorts: map[int32]int{}}
	for _, obj := range objects {
		switch o := obj.(type) {
		case *appsv1.Deployment:
			r.deployment = o
		case *corev1.Service:
			r.service = o
		case *monitoringv1.PodMonitor:
			r.podMonitor = o
		case *monitoringv1.ServiceMonitor:
			r.svcMonitor = o
		case *corev1.ConfigMap:
			if c := o.Data["config.yaml"]; c != "" {
				if err := yaml.Unmarshal([]byte(c), &r.config); err != nil {
					t.Fatalf("the ConfigMap's config.yaml: %v", err)
				}
			}
		}
	}
	if r.deployment == nil || r.config == nil {
		t.Fatal("no Deployment or no collector configuration rendered")
	}
	for _, p := range r.container().Ports {
		r.localPorts[p.ContainerPort] = freePort(t)
	}
	// The container's plain environment (GOGC, GOMEMLIMIT); those from
	// Secrets serve the auth block, which the demo cluster does not take.
	for _, e := range r.container().Env {
		if e.ValueFrom == nil {
			r.env = append(r.env, e.Name+"="+e.Value)
		}
	}
	_, r.pull = r.config["exporters"].(map[string]any)["prometheus"]
	return r
}

func (r *release) container() *corev1.Container {
	return &r.deployment.Spec.Template.Spec.Containers[0]
}

func (r *release) receiver() map[string]any {
	return r.config["receivers"].(map[string]any)["kafka_time_lag"].(map[string]any)
}

func (r *release) clusterAlias(t *testing.T) string {
	t.Helper()
	alias, _ := r.receiver()["cluster_alias"].(string)
	if alias == "" {
		t.Fatal("the rendered receiver has no cluster_alias")
	}
	return alias
}

// pointAtDemo replaces what Kubernetes would provide: the brokers (the demo
// cluster, plaintext, no SASL), the pod's listeners (0.0.0.0:<container
// port> on loopback ports), and the intervals (seconds, for the test).
func (r *release) pointAtDemo(t *testing.T, cluster *demo.Demo) {
	t.Helper()
	rcv := r.receiver()
	rcv["brokers"] = cluster.Addrs()
	delete(rcv, "tls")
	delete(rcv, "auth")
	rcv["collection_interval"] = "2s"
	rcv["sampling_interval"] = "1s"
	// The demo backdates the audit topic's history (otelcol-config.yaml):
	// its stamps are taken as append times, or its group would have no
	// time lag until the topic is written.
	rcv["trusted_timestamp_topics"] = []any{"^audit$"}
	listening := 0
	var walk func(v any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			if host, ok := v["host"].(string); ok && host == "0.0.0.0" {
				if port, ok := r.localPorts[int32(toInt(v["port"]))]; ok {
					v["host"], v["port"] = "127.0.0.1", port
					listening++
				}
			}
			for k, e := range v {
				v[k] = walk(e)
			}
		case []any:
			for i, e := range v {
				v[i] = walk(e)
			}
		case string:
			if rest, ok := strings.CutPrefix(v, "0.0.0.0:"); ok {
				n, err := strconv.Atoi(rest)
				if port, known := r.localPorts[int32(n)]; err == nil && known {
					listening++
					return fmt.Sprintf("127.0.0.1:%d", port)
				}
				t.Fatalf("the configuration listens on %s, which is no container port", v)
			}
		}
		return v
	}
	walk(r.config)
	if listening != len(r.localPorts) {
		t.Fatalf("the configuration listens on %d of the container's %d ports", listening, len(r.localPorts))
	}
}

func toInt(v any) int {
	switch n := v.(type) {
	case float64:
		return int(n)
	case int:
		return n
	case int64:
		return int(n)
	}
	return -1
}

func (r *release) otlpEndpoint() string {
	e, _ := r.config["exporters"].(map[string]any)["otlp_http"].(map[string]any)
	s, _ := e["endpoint"].(string)
	return s
}

func (r *release) configYAML(t *testing.T) string {
	t.Helper()
	out, err := yaml.Marshal(r.config)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// scrapeConfigs are the Prometheus scrape configurations kube-prometheus-
// stack's Prometheus Operator generates from the rendered monitor, with a
// static target in place of Kubernetes service discovery: one job per
// endpoint, named as the operator names it, the target labels it sets
// (namespace, pod, container, endpoint, service), the endpoint's path and
// its metric relabelings. The monitor must be one that Prometheus selects.
func (r *release) scrapeConfigs(t *testing.T) []string {
	t.Helper()
	selector := labels.SelectorFromSet(labels.Set{"release": kubePrometheusStackRelease})
	podLabels := labels.Set(r.deployment.Spec.Template.Labels)
	type endpoint struct {
		job, port, path string
		relabel         []monitoringv1.RelabelConfig
	}
	var endpoints []endpoint
	switch {
	case r.podMonitor != nil:
		m := r.podMonitor
		if !selector.Matches(labels.Set(m.Labels)) {
			t.Fatalf("the PodMonitor's labels %v do not match kube-prometheus-stack's default selector release=%s", m.Labels, kubePrometheusStackRelease)
		}
		if !labels.SelectorFromSet(m.Spec.Selector.MatchLabels).Matches(podLabels) {
			t.Fatal("the PodMonitor does not select the pods")
		}
		for i, e := range m.Spec.PodMetricsEndpoints {
			endpoints = append(endpoints, endpoint{fmt.Sprintf("podMonitor/kafka/%s/%d", m.Name, i), *e.Port, e.Path, e.MetricRelabelConfigs})
		}
	case r.svcMonitor != nil:
		m := r.svcMonitor
		if !selector.Matches(labels.Set(m.Labels)) {
			t.Fatalf("the ServiceMonitor's labels %v do not match kube-prometheus-stack's default selector release=%s", m.Labels, kubePrometheusStackRelease)
		}
		if r.service == nil || !labels.SelectorFromSet(m.Spec.Selector.MatchLabels).Matches(labels.Set(r.service.Labels)) ||
			!labels.SelectorFromSet(r.service.Spec.Selector).Matches(podLabels) {
			t.Fatal("the ServiceMonitor does not reach the pods through the Service")
		}
		for i, e := range m.Spec.Endpoints {
			// A ServiceMonitor names the Service's port, whose target is
			// the container's port by name.
			j := slices.IndexFunc(r.service.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == e.Port })
			if j < 0 {
				t.Fatalf("the ServiceMonitor's port %s is not the Service's", e.Port)
			}
			endpoints = append(endpoints, endpoint{fmt.Sprintf("serviceMonitor/kafka/%s/%d", m.Name, i), r.service.Spec.Ports[j].TargetPort.StrVal, e.Path, e.MetricRelabelConfigs})
		}
	default:
		return nil
	}
	var configs []string
	for _, e := range endpoints {
		i := slices.IndexFunc(r.container().Ports, func(p corev1.ContainerPort) bool { return p.Name == e.port })
		if i < 0 {
			t.Fatalf("the monitor's port %s is not the container's", e.port)
		}
		relabel, err := yaml.Marshal(promRelabelConfigs(t, e.relabel))
		if err != nil {
			t.Fatal(err)
		}
		configs = append(configs, fmt.Sprintf(`  - job_name: %q
    metrics_path: %q
    static_configs:
      - targets: ["127.0.0.1:%d"]
        labels: {namespace: kafka, pod: %s-0, container: otelcol, endpoint: %s, service: %s}
    metric_relabel_configs:
%s`, e.job, e.path, r.localPorts[r.container().Ports[i].ContainerPort], r.deployment.Name, e.port, r.deployment.Name, indent(string(relabel), "      ")))
	}
	return configs
}

// promRelabelConfigs writes the operator's relabelings (camelCase fields)
// as Prometheus reads them (snake_case), as the operator does.
func promRelabelConfigs(t *testing.T, relabel []monitoringv1.RelabelConfig) []map[string]any {
	t.Helper()
	data, err := yaml.Marshal(relabel)
	if err != nil {
		t.Fatal(err)
	}
	var camel []map[string]any
	if err := yaml.Unmarshal(data, &camel); err != nil {
		t.Fatal(err)
	}
	out := []map[string]any{}
	for _, c := range camel {
		snake := map[string]any{}
		for k, v := range c {
			var b strings.Builder
			for _, r := range k {
				if r >= 'A' && r <= 'Z' {
					b.WriteByte('_')
					r += 'a' - 'A'
				}
				b.WriteRune(r)
			}
			snake[b.String()] = v
		}
		out = append(out, snake)
	}
	return out
}

func indent(s, prefix string) string {
	if strings.TrimSpace(s) == "[]" {
		return prefix + "[]\n"
	}
	var b strings.Builder
	for line := range strings.SplitSeq(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString(prefix + line + "\n")
	}
	return b.String()
}

// startOTLPGateway stands in for Prometheus 3's OTLP receiver at the
// rendered endpoint's path: the built collector receiving OTLP/HTTP there
// and exposing what it receives, kafka.cluster.alias promoted to a label,
// to the scrape configuration it returns. The release's exporter is
// pointed at it.
func startOTLPGateway(t *testing.T, bin string, r *release, endpoint string) string {
	t.Helper()
	path := "/"
	if i := strings.Index(strings.TrimPrefix(endpoint, "http://"), "/"); i >= 0 {
		path = strings.TrimPrefix(endpoint, "http://")[i:]
	}
	otlpPort, promPort, healthPort := freePort(t), freePort(t), freePort(t)
	r.config["exporters"].(map[string]any)["otlp_http"].(map[string]any)["endpoint"] = fmt.Sprintf("http://127.0.0.1:%d%s", otlpPort, path)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gateway.yaml")
	writeFile(t, cfg, fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
        metrics_url_path: %s/v1/metrics
exporters:
  prometheus:
    endpoint: 127.0.0.1:%d
    resource_constant_labels:
      included: [kafka.cluster.alias]
    without_scope_info: true
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:%d
      status: {enabled: true, path: /}
service:
  extensions: [healthcheckv2]
  telemetry:
    metrics:
      level: none
  pipelines:
    metrics:
      receivers: [otlp]
      exporters: [prometheus]
`, otlpPort, strings.TrimSuffix(path, "/"), promPort, healthPort))
	gateway := startChild(t, bin, filepath.Join(dir, "gateway.log"), nil, "--config", cfg)
	waitHealthy(t, gateway, healthPort)
	return fmt.Sprintf("  - job_name: otlp\n    static_configs:\n      - targets: [\"127.0.0.1:%d\"]\n", promPort)
}
