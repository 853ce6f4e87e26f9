//go:build helm

// Package operator_test checks opentelemetrycollector.yaml: its fields are
// the Operator's v1beta1 fields this project relies on, with no unknown one
// (a strict decode into the part of the API it uses; the Operator's own Go
// types are not on the module proxy), and its collector configuration
// validates with the built collector (OTELCOL_BIN; `make helm-check` sets it).
package operator_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/collectorcheck"
)

// caDir is where the resource mounts the cluster CA's Secret.
const caDir = "/etc/kafka-tls/ca"

func TestOpenTelemetryCollectorResource(t *testing.T) {
	otelcol := os.Getenv("OTELCOL_BIN")
	if otelcol == "" {
		t.Fatal("OTELCOL_BIN is not set; run `make helm-check`, which builds the collector and sets it")
	}
	manifest, err := os.ReadFile("opentelemetrycollector.yaml")
	require.NoError(t, err)
	var typed openTelemetryCollector
	require.NoError(t, yaml.UnmarshalStrict(manifest, &typed), "a field the resource's part of the v1beta1 API does not have")
	require.Equal(t, "opentelemetry.io/v1beta1", typed.APIVersion)
	require.Equal(t, "OpenTelemetryCollector", typed.Kind)
	require.Contains(t, []string{"deployment", "statefulset", "daemonset", "sidecar"}, typed.Spec.Mode)
	var resource map[string]any
	require.NoError(t, yaml.Unmarshal(manifest, &resource))

	spec := resource["spec"].(map[string]any)
	config, err := yaml.Marshal(spec["config"])
	require.NoError(t, err)
	var env []string
	for _, e := range spec["env"].([]any) {
		e := e.(map[string]any)
		value, _ := e["value"].(string)
		if _, fromSecret := e["valueFrom"]; fromSecret {
			value = "from-secret"
		}
		env = append(env, e["name"].(string)+"="+value)
	}
	// The CA the config reads, where the resource mounts its Secret.
	dir := t.TempDir()
	ca, _, err := collectorcheck.Certificate()
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, caDir), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, caDir, "ca.crt"), ca, 0o600))
	require.Contains(t, string(config), caDir+"/ca.crt")
	rewritten := strings.ReplaceAll(string(config), caDir+"/", filepath.Join(dir, caDir)+"/")
	require.NoError(t, collectorcheck.Validate(otelcol, dir, rewritten, env))
}

// openTelemetryCollector is the part of the Operator's v1beta1
// OpenTelemetryCollector that the shipped resource uses, field names as the
// Operator's API spells them (operator v0.158); pod-level fields are the
// Kubernetes types the Operator embeds.
type openTelemetryCollector struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Mode                string                      `json:"mode"`
		Replicas            *int32                      `json:"replicas"`
		Image               string                      `json:"image"`
		UpgradeStrategy     string                      `json:"upgradeStrategy"`
		Env                 []corev1.EnvVar             `json:"env"`
		Volumes             []corev1.Volume             `json:"volumes"`
		VolumeMounts        []corev1.VolumeMount        `json:"volumeMounts"`
		Resources           corev1.ResourceRequirements `json:"resources"`
		PodDisruptionBudget struct {
			MaxUnavailable *intstr.IntOrString `json:"maxUnavailable"`
			MinAvailable   *intstr.IntOrString `json:"minAvailable"`
		} `json:"podDisruptionBudget"`
		PodSecurityContext *corev1.PodSecurityContext `json:"podSecurityContext"`
		SecurityContext    *corev1.SecurityContext    `json:"securityContext"`
		Observability      struct {
			Metrics struct {
				EnableMetrics                bool              `json:"enableMetrics"`
				DisablePrometheusAnnotations bool              `json:"disablePrometheusAnnotations"`
				ExtraLabels                  map[string]string `json:"extraLabels"`
			} `json:"metrics"`
		} `json:"observability"`
		Config map[string]any `json:"config"`
	} `json:"spec"`
}
