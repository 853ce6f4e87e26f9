//go:build helm

package helm_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/collectorcheck"
)

// upstreamValues is the part of the upstream opentelemetry-collector chart's
// values that upstream/values.yaml sets and this image depends on. The chart
// itself is not in this repository (CI reaches no chart repository), so the
// chart's own schema and templates are not exercised here: docs/kubernetes.md
// says which chart version the file was written for.
type upstreamValues struct {
	Mode    string `json:"mode"`
	Command struct {
		Name string `json:"name"`
	} `json:"command"`
	ExtraEnvs []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"extraEnvs"`
	AlternateConfig map[string]any `json:"alternateConfig"`
}

// TestUpstreamChartValues: the configuration upstream/values.yaml gives the
// upstream chart (alternateConfig, which the chart uses as it is, unmerged)
// validates with the built collector, with the environment the file sets,
// and the command the chart runs is this image's binary.
func TestUpstreamChartValues(t *testing.T) {
	otelcol := tool(t, "OTELCOL_BIN")
	data, err := os.ReadFile("upstream/values.yaml")
	require.NoError(t, err)
	var values upstreamValues
	require.NoError(t, yaml.Unmarshal(data, &values))
	require.Equal(t, "deployment", values.Mode)
	require.Equal(t, "otelcol-kafkatimelag", values.Command.Name, "the chart runs /<command.name>; the image's binary is /otelcol-kafkatimelag")
	require.NotEmpty(t, values.AlternateConfig, "without alternateConfig the chart's default configuration names receivers this distribution lacks")

	env := []string{"MY_POD_IP=127.0.0.1"} // set by the chart from the pod's status
	for _, e := range values.ExtraEnvs {
		env = append(env, e.Name+"="+e.Value)
	}
	config, err := yaml.Marshal(values.AlternateConfig)
	require.NoError(t, err)
	require.NoError(t, collectorcheck.Validate(otelcol, t.TempDir(), string(config), env), "upstream/values.yaml alternateConfig:\n%s", config)
}
