// Package kubernetes_test checks the manifests in this directory: each
// document decodes strictly into its Kubernetes API type (k8s.io/api, and
// the Prometheus Operator's Go types for the PodMonitor), so an unknown or
// misspelt field fails; and the pieces fit together (labels, ports, the
// config mount, the health check, the receiver's configuration).
package kubernetes_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/k8sdecode"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver"
)

// The image's contract (deploy/container/Dockerfile).
const (
	imageUser       = 10001
	imageConfigDir  = "/etc/otelcol-kafkatimelag"
	imageConfigFile = "config.yaml"
	healthPort      = 13133
	replicas        = 3
)

func strictDecoder(t *testing.T) *k8sdecode.Decoder {
	t.Helper()
	decoder, err := k8sdecode.NewDecoder()
	require.NoError(t, err)
	return decoder
}

// manifests decodes every document of every YAML file here.
func manifests(t *testing.T) []runtime.Object {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	decoder := strictDecoder(t)
	var objects []runtime.Object
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		for i, doc := range k8sdecode.Documents(data) {
			obj, err := decoder.Decode(doc)
			require.NoError(t, err, "%s, document %d", file, i)
			t.Logf("%s: %s", file, obj.GetObjectKind().GroupVersionKind())
			objects = append(objects, obj)
		}
	}
	return objects
}

// TestStrictDecodingCatchesTypos: the decoder the manifests go through
// refuses a field the API type lacks.
func TestStrictDecodingCatchesTypos(t *testing.T) {
	_, err := strictDecoder(t).Decode([]byte(`apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: x}
spec:
  maxUnavailabe: 1
`))
	require.ErrorContains(t, err, `unknown field "spec.maxUnavailabe"`)
	_, err = strictDecoder(t).Decode([]byte(`apiVersion: monitoring.coreos.com/v1
kind: PodMonitor
metadata: {name: x}
spec:
  podMetricsEndpoint: []
`))
	require.ErrorContains(t, err, `unknown field "spec.podMetricsEndpoint"`)
}

func only[T runtime.Object](t *testing.T, objects []runtime.Object) T {
	t.Helper()
	var found []T
	for _, obj := range objects {
		if o, ok := obj.(T); ok {
			found = append(found, o)
		}
	}
	require.Len(t, found, 1, "want exactly one %T", *new(T))
	return found[0]
}

func TestManifests(t *testing.T) {
	objects := manifests(t)
	deployment := only[*appsv1.Deployment](t, objects)
	configMap := only[*corev1.ConfigMap](t, objects)
	account := only[*corev1.ServiceAccount](t, objects)
	budget := only[*policyv1.PodDisruptionBudget](t, objects)
	monitor := only[*monitoringv1.PodMonitor](t, objects)

	spec := deployment.Spec
	require.NotNil(t, spec.Replicas)
	require.EqualValues(t, replicas, *spec.Replicas)
	podLabels := labels.Set(spec.Template.Labels)
	selects := func(what string, sel map[string]string) {
		require.NotEmpty(t, sel, what)
		require.True(t, labels.SelectorFromSet(sel).Matches(podLabels), "%s selects the replicas", what)
	}
	selects("the Deployment", spec.Selector.MatchLabels)
	selects("the PodDisruptionBudget", budget.Spec.Selector.MatchLabels)
	selects("the PodMonitor", monitor.Spec.Selector.MatchLabels)
	require.Equal(t, intstr.FromInt32(1), *budget.Spec.MaxUnavailable, "one replica down at a time")
	require.NotNil(t, budget.Spec.UnhealthyPodEvictionPolicy, "unready pods never block a drain")
	require.Equal(t, policyv1.AlwaysAllow, *budget.Spec.UnhealthyPodEvictionPolicy, "unready pods never block a drain")

	pod := spec.Template.Spec
	require.Equal(t, account.Name, pod.ServiceAccountName)
	require.NotNil(t, pod.SecurityContext.RunAsNonRoot)
	require.True(t, *pod.SecurityContext.RunAsNonRoot)
	require.EqualValues(t, imageUser, *pod.SecurityContext.RunAsUser, "the image's user")
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	require.Empty(t, c.Args, "the image's default arguments name the mounted config")

	port := func(name string) int32 {
		for _, p := range c.Ports {
			if p.Name == name {
				return p.ContainerPort
			}
		}
		t.Fatalf("container has no port named %q", name)
		return 0
	}
	probe := c.ReadinessProbe
	require.NotNil(t, probe, "readiness comes from the health check")
	require.NotNil(t, probe.HTTPGet)
	require.EqualValues(t, healthPort, port(probe.HTTPGet.Port.StrVal))
	for _, ep := range monitor.Spec.PodMetricsEndpoints {
		require.NotNil(t, ep.Port)
		port(*ep.Port)
	}

	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		require.Contains(t, c.Resources.Requests, r, "requests %s", r)
	}
	limit, request := c.Resources.Limits[corev1.ResourceMemory], c.Resources.Requests[corev1.ResourceMemory]
	require.Positive(t, limit.Cmp(request), "the memory limit leaves room above the request for a replica that inherits groups")

	var mount *corev1.VolumeMount
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].MountPath == imageConfigDir {
			mount = &c.VolumeMounts[i]
		}
	}
	require.NotNil(t, mount, "the config is mounted where the image reads it")
	i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == mount.Name })
	require.GreaterOrEqual(t, i, 0)
	require.Equal(t, configMap.Name, pod.Volumes[i].ConfigMap.Name)

	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	config := configMap.Data[imageConfigFile]
	require.NotEmpty(t, config, "the ConfigMap holds %s", imageConfigFile)
	checkCollectorConfig(t, config, env, probe.HTTPGet.Path)
}

// checkCollectorConfig loads the receiver's part of the collector config,
// with the Deployment's environment (name to value), into the receiver's
// own Config and validates it, and checks what the manifests rely on:
// coordination on, the health check on the probed port and path, and every
// ${env:...} set by the Deployment.
func checkCollectorConfig(t *testing.T, config string, env map[string]string, probePath string) {
	t.Helper()
	resolved := config
	for name, value := range env {
		resolved = strings.ReplaceAll(resolved, "${env:"+name+"}", value)
	}
	retrieved, err := confmap.NewRetrievedFromYAML([]byte(resolved))
	require.NoError(t, err)
	conf, err := retrieved.AsConf()
	require.NoError(t, err)

	receiverConf, err := conf.Sub("receivers::kafka_time_lag")
	require.NoError(t, err)
	cfg := kafkatimelagreceiver.NewFactory().CreateDefaultConfig().(*kafkatimelagreceiver.Config)
	require.NoError(t, receiverConf.Unmarshal(cfg))
	require.NoError(t, cfg.Validate())
	require.NotEmpty(t, cfg.Coordination.GroupID, "the replicas share the groups")

	require.Equal(t, true, conf.Get("extensions::healthcheckv2::use_v2"))
	require.Equal(t, "0.0.0.0:13133", conf.Get("extensions::healthcheckv2::http::endpoint"))
	require.Equal(t, probePath, conf.Get("extensions::healthcheckv2::http::status::path"))
	require.Equal(t, true, conf.Get("extensions::healthcheckv2::component_health::include_recoverable_errors"))

	for rest := config; ; {
		_, after, ok := strings.Cut(rest, "${env:")
		if !ok {
			break
		}
		name, tail, _ := strings.Cut(after, "}")
		_, set := env[name]
		require.True(t, set, "the config reads ${env:%s}, which the Deployment does not set", name)
		rest = tail
	}
}
