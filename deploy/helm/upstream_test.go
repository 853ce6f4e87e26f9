//go:build helm

package helm_test

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/collectorcheck"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/k8sdecode"
)

// upstreamChart is the upstream opentelemetry-collector chart 0.170.0
// (open-telemetry/opentelemetry-helm-charts, Apache-2.0) as published:
// Chart.yaml, values.yaml, values.schema.json and templates, kept here
// because CI reaches no chart repository.
const upstreamChart = "upstream/testdata/opentelemetry-collector"

// TestUpstreamChartValues: upstream/values.yaml passes the upstream chart's
// values schema (helm lint --strict), renders documents that decode
// strictly, runs this image's binary, and its collector configuration
// validates with the built collector.
func TestUpstreamChartValues(t *testing.T) {
	helm := tool(t, "HELM_BIN")
	otelcol := tool(t, "OTELCOL_BIN")
	args := []string{upstreamChart, "-f", "upstream/values.yaml"}
	run(t, helm, append([]string{"lint", "--strict"}, args...)...)
	rendered := run(t, helm, append([]string{"template", "lag", "--namespace", "kafka", "--kube-version", kubeVersion}, args...)...)
	decoder, err := k8sdecode.NewDecoder()
	require.NoError(t, err)
	var objects []runtime.Object
	for i, doc := range k8sdecode.Documents(rendered) {
		obj, err := decoder.Decode(doc)
		require.NoError(t, err, "rendered document %d:\n%s", i, doc)
		objects = append(objects, obj)
	}
	deployment := only[*appsv1.Deployment](t, objects)
	only[*policyv1.PodDisruptionBudget](t, objects)
	monitor := only[*monitoringv1.PodMonitor](t, objects)
	require.Equal(t, "kube-prometheus-stack", monitor.Labels["release"])
	require.EqualValues(t, 3, *deployment.Spec.Replicas)

	c := deployment.Spec.Template.Spec.Containers[0]
	require.Equal(t, []string{"/otelcol-kafkatimelag"}, c.Command, "the binary in this image")
	var configMap *corev1.ConfigMap
	for _, obj := range objects {
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			configMap = cm
		}
	}
	require.NotNil(t, configMap)
	config := configMap.Data["relay"]
	require.NotEmpty(t, config)

	var env []string
	for _, e := range c.Env {
		value := e.Value
		if e.ValueFrom != nil {
			value = "127.0.0.1" // MY_POD_IP, from the pod's status
		}
		env = append(env, e.Name+"="+value)
	}
	require.NoError(t, collectorcheck.Validate(otelcol, t.TempDir(), config, env), "the upstream chart's rendered configuration:\n%s", config)
}
