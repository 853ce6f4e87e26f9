package docblocks

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestBenchmarksIsWhatAUserNeeds: BENCHMARKS.md is what a user reads to
// choose and size (the summary, the main runs and the models), not the lab
// book: the detail of the runs is in docs/benchmarks-lab.md, which it
// links.
func TestBenchmarksIsWhatAUserNeeds(t *testing.T) {
	data, err := os.ReadFile("../../BENCHMARKS.md")
	require.NoError(t, err)
	lines := strings.Count(string(data), "\n")
	require.Less(t, lines, 350, "BENCHMARKS.md has %d lines: move the lab detail to docs/benchmarks-lab.md", lines)
	require.Contains(t, string(data), "(docs/benchmarks-lab.md")
}

// TestChartSizingIsTheMemoryModel: the chart's sizing values are the
// figures of BENCHMARKS.md's memory model, its one source.
func TestChartSizingIsTheMemoryModel(t *testing.T) {
	bench, err := os.ReadFile("../../BENCHMARKS.md")
	require.NoError(t, err)
	model := regexp.MustCompile(`MiB = ([0-9.]+) \+ \(([0-9.]+) x busy partitions \+ ([0-9.]+) x pairs\) / 1024`).FindStringSubmatch(string(bench))
	require.NotNil(t, model, "BENCHMARKS.md states the model as MiB = base + (a x busy partitions + b x pairs) / 1024")
	pull := regexp.MustCompile(`Pull \(` + "`prometheus`" + ` exporter\) costs ([0-9.]+) KiB a pair`).FindStringSubmatch(string(bench))
	require.NotNil(t, pull, "BENCHMARKS.md states the pull path's figure a pair")

	data, err := os.ReadFile("../../deploy/helm/otelcol-kafkatimelag/values.yaml")
	require.NoError(t, err)
	var values struct {
		Sizing map[string]any `json:"sizing"`
	}
	require.NoError(t, yaml.Unmarshal(data, &values))
	for key, want := range map[string]string{"baseMiB": model[1], "perBusyPartitionKiB": model[2], "perPairKiB": model[3], "perPairKiBPull": pull[1]} {
		require.Equal(t, want, strings.TrimSuffix(strings.TrimSuffix(yamlNumber(values.Sizing[key]), ".0"), ".00"), "values.yaml sizing.%s", key)
	}
}

func yamlNumber(v any) string {
	out, _ := yaml.Marshal(v)
	return strings.TrimSpace(string(out))
}
