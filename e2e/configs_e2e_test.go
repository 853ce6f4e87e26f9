//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestShippedConfigsValidate: the built collector accepts every collector
// configuration the repository ships: `make run`'s, the container image's
// default and the Kubernetes ConfigMap's, with the environment they expect.
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
	k8sConfig := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(k8sConfig, []byte(cm.Data["config.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"KAFKA_BROKERS=kafka-1:9092,kafka-2:9092",
		"KAFKA_CLUSTER_ALIAS=prod",
		"OTLP_ENDPOINT=http://otel-gateway:4318",
	)
	for name, path := range map[string]string{
		"otelcol-config.yaml":                   "../otelcol-config.yaml",
		"deploy/container/config.yaml":          "../deploy/container/config.yaml",
		"deploy/kubernetes/configmap.yaml data": k8sConfig,
	} {
		cmd := exec.Command(bin, "validate", "--config="+path)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s does not validate: %v\n%s", name, err, out)
		}
	}
}
