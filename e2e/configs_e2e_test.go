//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/collectorcheck"
)

// TestShippedConfigsValidate: the built collector accepts every collector
// configuration the repository ships: `make run`'s, the container image's
// default and the Kubernetes ConfigMap's, with the environment they expect,
// and none puts a processor that holds data back in front of an exporter
// with wait_for_result (the Helm chart's and the docs' are checked by
// deploy/helm and docs_configs_e2e_test.go).
func TestShippedConfigsValidate(t *testing.T) {
	bin := os.Getenv("OTELCOL_BIN")
	if bin == "" {
		t.Fatal("OTELCOL_BIN is not set; run `make e2e`, which builds the collector and sets it")
	}
	var cm corev1.ConfigMap
	data, err := os.ReadFile("../deploy/kubernetes/configmap.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, &cm); err != nil {
		t.Fatalf("deploy/kubernetes/configmap.yaml: %v", err)
	}
	env := []string{
		"KAFKA_BROKERS=kafka-1:9092,kafka-2:9092",
		"KAFKA_CLUSTER_ALIAS=prod",
		"COORDINATION_GROUP_ID=otelcol-kafkatimelag",
		"OTLP_ENDPOINT=http://otel-gateway:4318",
	}
	configs := map[string]string{"deploy/kubernetes/configmap.yaml data": cm.Data["config.yaml"]}
	for _, path := range []string{"otelcol-config.yaml", "deploy/container/config.yaml"} {
		configs[path] = readFile(t, filepath.Join(repoRoot, path))
	}
	for name, config := range configs {
		if err := collectorcheck.Validate(bin, t.TempDir(), config, env); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
