//go:build helm

// Package operator_test checks opentelemetrycollector.yaml: it passes the
// OpenTelemetry Operator's CRD schema for v1beta1 (testdata, from the
// Operator's repository: unknown fields, types, enums, required fields),
// and its collector configuration validates with the built collector
// (OTELCOL_BIN; `make helm-check` sets it).
package operator_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/collectorcheck"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/crdschema"
)

// caDir is where the resource mounts the cluster CA's Secret.
const caDir = "/etc/kafka-tls/ca"

type crd struct {
	Group   string            `json:"group"`
	Kind    string            `json:"kind"`
	Version string            `json:"version"`
	Schema  *crdschema.Schema `json:"openAPIV3Schema"`
}

func TestOpenTelemetryCollectorResource(t *testing.T) {
	otelcol := os.Getenv("OTELCOL_BIN")
	if otelcol == "" {
		t.Fatal("OTELCOL_BIN is not set; run `make helm-check`, which builds the collector and sets it")
	}
	var def crd
	data, err := os.ReadFile("testdata/opentelemetrycollector-v1beta1.schema.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &def))

	manifest, err := os.ReadFile("opentelemetrycollector.yaml")
	require.NoError(t, err)
	var resource map[string]any
	require.NoError(t, yaml.Unmarshal(manifest, &resource))
	require.Equal(t, def.Group+"/"+def.Version, resource["apiVersion"])
	require.Equal(t, def.Kind, resource["kind"])
	require.NoError(t, crdschema.Validate(def.Schema, resource))

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

// TestSchemaCatchesTypos: the schema check refuses a misspelt field of the
// resource, as the API server would.
func TestSchemaCatchesTypos(t *testing.T) {
	var def crd
	data, err := os.ReadFile("testdata/opentelemetrycollector-v1beta1.schema.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &def))
	var resource map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(`
apiVersion: opentelemetry.io/v1beta1
kind: OpenTelemetryCollector
metadata: {name: x}
spec:
  mode: deploymnt
  podDisruptionBudget: {maxUnavailabe: 1}
  config: {receivers: {}}
`), &resource))
	err = crdschema.Validate(def.Schema, resource)
	require.ErrorContains(t, err, ".spec.mode: deploymnt is not one of")
	require.ErrorContains(t, err, ".spec.podDisruptionBudget.maxUnavailabe: unknown field")
}
