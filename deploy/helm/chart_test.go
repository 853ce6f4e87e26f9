//go:build helm

// Package helm_test checks the chart in otelcol-kafkatimelag/ the way a user
// installs it: helm lint and helm template with the default values and with
// each values file in examples/; every rendered document decodes strictly
// into its Kubernetes or Prometheus Operator type; the pieces fit together
// (selectors, ports, Secrets mounted where the config reads them); the
// rendered collector configuration validates with the built collector; the
// PrometheusRule carries the shipped rules and passes their promtool tests;
// the migration recording rules asked for are the shipped groups and pass
// their promtool tests; values.schema.json refuses misspelt keys; the
// dashboard ConfigMap holds the shipped dashboard. `make helm-check`
// runs it with HELM_BIN and OTELCOL_BIN set; promtool must be on PATH.
package helm_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/collectorcheck"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/docblocks"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/k8sdecode"
)

const (
	chart     = "otelcol-kafkatimelag"
	rulesFile = "../prometheus/kafka-timelag-rules.yml"
	rulesTest = "../prometheus/kafka-timelag-rules.test.yml"
	// The recording rules for users of other exporters, one group per
	// tool, and their promtool tests (one promql_expr_test per record).
	migrationRules = "../prometheus/migration-rules.yml"
	migrationTest  = "../prometheus/migration-rules.test.yml"
	dashboard      = "../grafana/kafka-timelag.json"
	// The Kubernetes version helm template renders for (its default is
	// old enough for charts to pick policy/v1beta1).
	kubeVersion = "1.33.0"
	// Where the image reads its configuration (deploy/container/Dockerfile).
	imageConfigDir = "/etc/otelcol-kafkatimelag"
)

func tool(t *testing.T, env string) string {
	t.Helper()
	path := os.Getenv(env)
	if path == "" {
		t.Fatalf("%s is not set; run `make helm-check`, which builds it and sets it", env)
	}
	return path
}

func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s %s\n%s%s", name, strings.Join(args, " "), out, stderr.String())
	return out
}

// valueFiles are the shipped ways to install the chart: the defaults (with
// kafka.brokers, which has none), one file per example, and every block of values in the user docs
// (```yaml not-config=helm-values), written to files.
func valueFiles(t *testing.T) []string {
	t.Helper()
	examples, err := filepath.Glob("examples/*.yaml")
	require.NoError(t, err)
	require.Len(t, examples, 5, "SASL/SCRAM, MSK IAM, TLS, OTLP push, pull")
	blocks, err := docblocks.Read("../../README.md", "../../docs/*.md")
	require.NoError(t, err)
	dir := t.TempDir()
	documented := 0
	for _, b := range blocks {
		if b.Attrs["not-config"] != "helm-values" {
			continue
		}
		path := filepath.Join(dir, strings.NewReplacer("../", "", "/", "-", ":", "-").Replace(b.Name())+".yaml")
		require.NoError(t, os.WriteFile(path, []byte(b.Body), 0o600))
		examples = append(examples, path)
		documented++
	}
	require.NotZero(t, documented, "the README's Strimzi values")
	return append([]string{""}, examples...)
}

// TestChartFilesAreTheShippedOnes: the chart renders the rules and the
// dashboard from copies (helm reads nothing outside the chart); they are
// the files in deploy/prometheus and deploy/grafana.
func TestChartFilesAreTheShippedOnes(t *testing.T) {
	for copy, original := range map[string]string{
		chart + "/files/kafka-timelag-rules.yml": rulesFile,
		chart + "/files/migration-rules.yml":     migrationRules,
		chart + "/files/kafka-timelag.json":      dashboard,
	} {
		want, err := os.ReadFile(original)
		require.NoError(t, err)
		got, err := os.ReadFile(copy)
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, got), "%s differs from %s: run `make helm-sync`", copy, original)
	}
}

func TestChart(t *testing.T) {
	helm := tool(t, "HELM_BIN")
	otelcol := tool(t, "OTELCOL_BIN")
	decoder, err := k8sdecode.NewDecoder()
	require.NoError(t, err)
	for _, values := range valueFiles(t) {
		name := "defaults"
		args := []string{chart}
		if values == "" {
			// Only what has no default.
			args = append(args, brokersOnly...)
		} else {
			name = strings.TrimSuffix(filepath.Base(values), ".yaml")
			args = append(args, "-f", values)
		}
		t.Run(name, func(t *testing.T) {
			run(t, helm, append([]string{"lint", "--strict"}, args...)...)
			rendered := run(t, helm, append([]string{"template", "lag", "--namespace", "kafka", "--kube-version", kubeVersion}, args...)...)
			var objects []runtime.Object
			for i, doc := range k8sdecode.Documents(rendered) {
				obj, err := decoder.Decode(doc)
				require.NoError(t, err, "rendered document %d:\n%s", i, doc)
				objects = append(objects, obj)
			}
			checkObjects(t, objects)
			checkLagDestination(t, objects)
			checkCollectorConfig(t, otelcol, objects)
			alerting, migration := prometheusRules(t, objects)
			if alerting != nil {
				checkRules(t, alerting, values)
			}
			checkMigrationRules(t, migration, migrationTools(t, values))
			if cm := dashboardConfigMap(objects); cm != nil {
				want, err := os.ReadFile(dashboard)
				require.NoError(t, err)
				require.JSONEq(t, string(want), cm.Data["kafka-timelag.json"])
				require.Equal(t, "1", cm.Labels["grafana_dashboard"], "the label Grafana's dashboard sidecar selects")
			}
		})
	}
}

func optional[T runtime.Object](t *testing.T, objects []runtime.Object) T {
	t.Helper()
	var found []T
	for _, obj := range objects {
		if o, ok := obj.(T); ok {
			found = append(found, o)
		}
	}
	require.LessOrEqual(t, len(found), 1, "more than one %T", *new(T))
	if len(found) == 0 {
		return *new(T)
	}
	return found[0]
}

func only[T runtime.Object](t *testing.T, objects []runtime.Object) T {
	t.Helper()
	o := optional[T](t, objects)
	require.NotNil(t, any(o), "no %T rendered", *new(T))
	return o
}

func dashboardConfigMap(objects []runtime.Object) *corev1.ConfigMap {
	for _, obj := range objects {
		if cm, ok := obj.(*corev1.ConfigMap); ok && strings.HasSuffix(cm.Name, "-dashboard") {
			return cm
		}
	}
	return nil
}

func collectorConfigMap(t *testing.T, objects []runtime.Object) *corev1.ConfigMap {
	t.Helper()
	for _, obj := range objects {
		if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Data["config.yaml"] != "" {
			return cm
		}
	}
	t.Fatal("no ConfigMap with config.yaml")
	return nil
}

// checkObjects: selectors select the pods, monitors name ports that
// exist, the config and every Secret are mounted.
func checkObjects(t *testing.T, objects []runtime.Object) {
	t.Helper()
	deployment := only[*appsv1.Deployment](t, objects)
	budget := only[*policyv1.PodDisruptionBudget](t, objects)
	podLabels := labels.Set(deployment.Spec.Template.Labels)
	selects := func(what string, sel map[string]string) {
		require.NotEmpty(t, sel, what)
		require.True(t, labels.SelectorFromSet(sel).Matches(podLabels), "%s selects the replicas", what)
	}
	selects("the Deployment", deployment.Spec.Selector.MatchLabels)
	selects("the PodDisruptionBudget", budget.Spec.Selector.MatchLabels)
	require.NotNil(t, budget.Spec.UnhealthyPodEvictionPolicy, "unready pods never block a drain")
	require.Equal(t, policyv1.AlwaysAllow, *budget.Spec.UnhealthyPodEvictionPolicy, "unready pods never block a drain")
	require.Greater(t, *deployment.Spec.Replicas, int32(1), "replicas share the groups")

	pod := deployment.Spec.Template.Spec
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	if account := optional[*corev1.ServiceAccount](t, objects); account != nil {
		require.Equal(t, account.Name, pod.ServiceAccountName)
	}
	containerPort := func(name string) bool {
		return slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == name })
	}
	require.True(t, containerPort(c.ReadinessProbe.HTTPGet.Port.StrVal), "the readiness probe's port")

	limit, request := c.Resources.Limits[corev1.ResourceMemory], c.Resources.Requests[corev1.ResourceMemory]
	require.False(t, limit.IsZero(), "a memory limit")
	require.Positive(t, limit.Cmp(request), "the memory limit leaves room above the request for a replica that inherits groups")

	if monitor := optional[*monitoringv1.PodMonitor](t, objects); monitor != nil {
		selects("the PodMonitor", monitor.Spec.Selector.MatchLabels)
		require.NotEmpty(t, monitor.Labels["release"], "kube-prometheus-stack selects monitors by release")
		for _, ep := range monitor.Spec.PodMetricsEndpoints {
			require.True(t, containerPort(*ep.Port), "PodMonitor port %s", *ep.Port)
		}
	}
	service := optional[*corev1.Service](t, objects)
	if service != nil {
		selects("the Service", service.Spec.Selector)
		for _, p := range service.Spec.Ports {
			require.True(t, containerPort(p.TargetPort.StrVal), "Service target port %s", p.TargetPort.StrVal)
		}
	}
	if monitor := optional[*monitoringv1.ServiceMonitor](t, objects); monitor != nil {
		require.NotNil(t, service, "the ServiceMonitor needs the Service")
		require.True(t, labels.SelectorFromSet(monitor.Spec.Selector.MatchLabels).Matches(labels.Set(service.Labels)), "the ServiceMonitor selects the Service")
		for _, ep := range monitor.Spec.Endpoints {
			require.True(t, slices.ContainsFunc(service.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port }), "ServiceMonitor port %s", ep.Port)
		}
	}

	for _, m := range c.VolumeMounts {
		require.True(t, slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name }), "volume %s", m.Name)
	}
	cm := collectorConfigMap(t, objects)
	require.True(t, slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		return m.MountPath == imageConfigDir && pod.Volumes[i].ConfigMap != nil && pod.Volumes[i].ConfigMap.Name == cm.Name
	}), "the ConfigMap is mounted where the image reads its config")
}

// checkLagDestination: the lag metrics go somewhere a Prometheus sees them:
// pulled through the PodMonitor or ServiceMonitor (an endpoint on the
// prometheus exporter's port, selected by kube-prometheus-stack's default
// rule: the release label), or pushed to an endpoint that was set. The e2e
// tests (e2e/helm_e2e_test.go) run each example's configuration into a
// real Prometheus.
func checkLagDestination(t *testing.T, objects []runtime.Object) {
	t.Helper()
	var config struct {
		Exporters struct {
			Prometheus *struct {
				Endpoint string `json:"endpoint"`
			} `json:"prometheus"`
			OTLPHTTP *struct {
				Endpoint string `json:"endpoint"`
			} `json:"otlp_http"`
		} `json:"exporters"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(collectorConfigMap(t, objects).Data["config.yaml"]), &config))
	if e := config.Exporters.OTLPHTTP; e != nil {
		require.Nil(t, config.Exporters.Prometheus, "one way out")
		require.NotEmpty(t, e.Endpoint, "an OTLP destination")
		require.NotContains(t, e.Endpoint, "otel-gateway.observability", "no placeholder destination")
		return
	}
	require.NotNil(t, config.Exporters.Prometheus, "the lag metrics are pushed or pulled")
	_, port, ok := strings.Cut(config.Exporters.Prometheus.Endpoint, ":")
	require.True(t, ok, "exporter endpoint %q", config.Exporters.Prometheus.Endpoint)
	container := only[*appsv1.Deployment](t, objects).Spec.Template.Spec.Containers[0]
	i := slices.IndexFunc(container.Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" })
	require.GreaterOrEqual(t, i, 0, "the container names the exporter's port metrics")
	require.Equal(t, port, strconv.Itoa(int(container.Ports[i].ContainerPort)), "the metrics port is the exporter's")

	kubePrometheusStack := labels.SelectorFromSet(labels.Set{"release": "kube-prometheus-stack"})
	scraped := false
	if m := optional[*monitoringv1.PodMonitor](t, objects); m != nil {
		require.True(t, kubePrometheusStack.Matches(labels.Set(m.Labels)), "kube-prometheus-stack's default podMonitorSelector selects the PodMonitor")
		scraped = slices.ContainsFunc(m.Spec.PodMetricsEndpoints, func(e monitoringv1.PodMetricsEndpoint) bool { return e.Port != nil && *e.Port == "metrics" })
	}
	if m := optional[*monitoringv1.ServiceMonitor](t, objects); m != nil {
		require.True(t, kubePrometheusStack.Matches(labels.Set(m.Labels)), "kube-prometheus-stack's default serviceMonitorSelector selects the ServiceMonitor")
		scraped = slices.ContainsFunc(m.Spec.Endpoints, func(e monitoringv1.Endpoint) bool { return e.Port == "metrics" })
	}
	require.True(t, scraped, "a PodMonitor or ServiceMonitor scrapes the lag metrics")
}

// checkCollectorConfig lays the pod's files out under a temporary root (the
// config, and each mounted Secret's items as real PEM files), points the
// config's paths there, sets the container's environment, and runs
// `otelcol-kafkatimelag validate` on it.
func checkCollectorConfig(t *testing.T, otelcol string, objects []runtime.Object) {
	t.Helper()
	deployment := only[*appsv1.Deployment](t, objects)
	pod := deployment.Spec.Template.Spec
	c := pod.Containers[0]
	config := collectorConfigMap(t, objects).Data["config.yaml"]

	root := t.TempDir()
	for _, m := range c.VolumeMounts {
		v := pod.Volumes[slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })]
		if v.Secret == nil {
			continue
		}
		dir := filepath.Join(root, m.MountPath)
		require.NoError(t, os.MkdirAll(dir, 0o700))
		for _, item := range v.Secret.Items {
			require.NoError(t, os.WriteFile(filepath.Join(dir, item.Path), pemFor(t, item.Key), 0o600))
		}
		require.Contains(t, config, m.MountPath+"/", "the config reads the Secret %s where it is mounted", v.Secret.SecretName)
		config = strings.ReplaceAll(config, m.MountPath+"/", dir+"/")
	}
	var env []string
	for _, e := range c.Env {
		value := e.Value
		if e.ValueFrom != nil {
			require.NotNil(t, e.ValueFrom.SecretKeyRef, "env %s", e.Name)
			value = "from-secret-" + e.ValueFrom.SecretKeyRef.Name
		}
		env = append(env, e.Name+"="+value)
	}
	require.NoError(t, collectorcheck.Validate(otelcol, root, config, env), "the rendered collector configuration:\n%s", config)
}

// pemFor returns a PEM file for a Secret key: the key for *.key, the
// certificate otherwise (the CA and the client certificate, one pair).
func pemFor(t *testing.T, key string) []byte {
	t.Helper()
	pemOnce.Do(func() { pemCert, pemKey, pemErr = collectorcheck.Certificate() })
	require.NoError(t, pemErr)
	if strings.HasSuffix(key, ".key") {
		return pemKey
	}
	return pemCert
}

var (
	pemOnce         sync.Once
	pemCert, pemKey []byte
	pemErr          error
)

// checkRules: the PrometheusRule's groups are the shipped file's, but for
// the abandoned-group age from values, and they pass the shipped promtool
// tests when that age is the file's.
func checkRules(t *testing.T, rule *monitoringv1.PrometheusRule, values string) {
	t.Helper()
	var shipped monitoringv1.PrometheusRuleSpec
	data, err := os.ReadFile(rulesFile)
	require.NoError(t, err)
	require.NoError(t, yaml.UnmarshalStrict(data, &shipped))

	age := "86400"
	if values != "" {
		var v struct {
			PrometheusRule struct {
				AbandonedAfterSeconds *int `json:"abandonedAfterSeconds"`
			} `json:"prometheusRule"`
		}
		vdata, err := os.ReadFile(values)
		require.NoError(t, err)
		require.NoError(t, yaml.Unmarshal(vdata, &v))
		if v.PrometheusRule.AbandonedAfterSeconds != nil {
			age = strconv.Itoa(*v.PrometheusRule.AbandonedAfterSeconds)
		}
	}
	rendered := rule.Spec.DeepCopy()
	changed := 0
	for gi := range rendered.Groups {
		for ri := range rendered.Groups[gi].Rules {
			r := &rendered.Groups[gi].Rules[ri]
			if r.Record == "kafka_timelag:abandoned_after_seconds" {
				require.Equal(t, "vector("+age+")", r.Expr.String())
				r.Expr = shippedExpr(t, shipped, r.Record)
				changed++
			}
		}
	}
	require.Equal(t, 1, changed)
	require.Equal(t, unfolded(shipped.Groups), unfolded(rendered.Groups), "the PrometheusRule holds the shipped rules")

	if age != "86400" {
		return
	}
	// The rendered rules, as Prometheus gets them, pass the shipped tests.
	tests, err := os.ReadFile(rulesTest)
	require.NoError(t, err)
	promtoolTest(t, rule, "kafka-timelag-rules.yml", tests)
}

// promtoolTest runs promtool's unit tests (the contents of a rules test
// file) on a rendered PrometheusRule, written where the tests' rule_files
// entry (file) reads it.
func promtoolTest(t *testing.T, rule *monitoringv1.PrometheusRule, file string, tests []byte) {
	t.Helper()
	dir := t.TempDir()
	out, err := yaml.Marshal(rule.Spec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, file), out, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.test.yml"), tests, 0o600))
	cmd := exec.Command("promtool", "test", "rules", "rules.test.yml")
	cmd.Dir = dir
	res, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool test rules on the rendered %s:\n%s", rule.Name, res)
	require.Contains(t, string(res), "SUCCESS", "promtool test rules on the rendered %s", rule.Name)
}

func shippedExpr(t *testing.T, spec monitoringv1.PrometheusRuleSpec, record string) (expr intstr.IntOrString) {
	t.Helper()
	for _, g := range spec.Groups {
		for _, r := range g.Rules {
			if r.Record == record {
				return r.Expr
			}
		}
	}
	t.Fatalf("the shipped rules have no %s", record)
	return expr
}
