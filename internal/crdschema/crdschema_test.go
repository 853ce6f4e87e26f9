package crdschema_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/crdschema"
)

const schema = `{"type":"object","required":["spec"],"properties":{
 "spec":{"type":"object","properties":{
  "replicas":{"type":"integer"},
  "mode":{"type":"string","enum":["deployment","daemonset"]},
  "maxUnavailable":{"x-kubernetes-int-or-string":true},
  "env":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"}}}},
  "labels":{"type":"object","additionalProperties":{"type":"string"}},
  "config":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}}}`

func check(t *testing.T, manifest string) error {
	t.Helper()
	var s crdschema.Schema
	require.NoError(t, json.Unmarshal([]byte(schema), &s))
	var v any
	require.NoError(t, yaml.Unmarshal([]byte(manifest), &v))
	return crdschema.Validate(&s, v)
}

func TestValidManifestPasses(t *testing.T) {
	require.NoError(t, check(t, `
spec:
  replicas: 3
  mode: deployment
  maxUnavailable: 1
  env: [{name: A}]
  labels: {release: x}
  config: {receivers: {anything: {goes: here}}}
`))
}

func TestViolationsAreNamed(t *testing.T) {
	err := check(t, `
spec:
  replicas: 2.5
  mode: statefulsett
  env: [{name: A, valu: b}]
  labels: {release: 1}
  podDisruptionBudgett: {}
`)
	for _, want := range []string{
		".spec.replicas: want an integer, got 2.5",
		".spec.mode: statefulsett is not one of [deployment daemonset]",
		".spec.env[0].valu: unknown field",
		".spec.labels.release: want a string",
		".spec.podDisruptionBudgett: unknown field",
	} {
		require.ErrorContains(t, err, want)
	}
	require.ErrorContains(t, check(t, `{}`), `required field "spec" missing`)
}
