//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
	"sigs.k8s.io/yaml"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/collectorcheck"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/docblocks"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/k8sdecode"
)

// checkoutPlaceholder is where the README's manifest says to put the path
// of a checkout of this repository, in its commented-out replaces block.
const checkoutPlaceholder = "/path/to/otelcol-kafkatimelag"

// receiverModule is the receiver's Go module, which a release tags
// kafkatimelagreceiver/vX.Y.Z.
const receiverModule = "github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver"

// ocbVersion is the ocb release the README tells users to run, the
// collector release the receiver is built against.
const ocbVersion = "v0.165.0"

// TestOwnCollectorBuild builds, in a directory outside the repository, the
// ocb manifest of the README's "Add it to your own collector" section,
// with the command it gives, its commented-out replaces block in use with
// the checkout's path (the released module is not on the proxy before the
// release): this receiver module next to upstream components a Kafka
// shop's collector has (otlpreceiver, debugexporter, contrib's kafkareceiver
// with franz-go, resourceprocessor) and those the README's and the chart's
// configurations use. It must resolve without bumping any collector module
// off the release, bring none of this repository's deployment or test
// dependencies, list kafka_time_lag among its components, and validate the
// README's collector configurations and the chart's rendered one in both
// export modes.
func TestOwnCollectorBuild(t *testing.T) {
	manifest := fromCheckout(t, readmeManifest(t))
	checkout, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "own-collector-build-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if strings.HasPrefix(dir, checkout+string(filepath.Separator)) {
		t.Fatalf("%s is inside the repository", dir)
	}
	path := filepath.Join(dir, "otelcol-custom.yaml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(manifest, checkoutPlaceholder, checkout)), 0o600); err != nil {
		t.Fatal(err)
	}

	build := exec.Command("go", "run", "go.opentelemetry.io/collector/cmd/builder@"+ocbVersion, "--config", path)
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("ocb build of the README's manifest: %v\n%s", err, tail(out))
	}

	gomod, err := os.ReadFile(filepath.Join(dir, "_build", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := modfile.Parse("go.mod", gomod, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range mod.Require {
		p, v := r.Mod.Path, r.Mod.Version
		switch {
		case strings.HasPrefix(p, "go.opentelemetry.io/collector/") && v != "v0.165.0" && v != "v1.71.0":
			t.Errorf("%s %s: bumped off the collector release (v0.165.0 / v1.71.0) by a dependency", p, v)
		case strings.HasPrefix(p, "github.com/open-telemetry/opentelemetry-collector-contrib/") && v != "v0.165.1":
			t.Errorf("%s %s: bumped off contrib v0.165.1 by a dependency", p, v)
		case p == "k8s.io/api", strings.HasPrefix(p, "github.com/prometheus-operator/"),
			strings.HasPrefix(p, "helm.sh/"), p == "github.com/twmb/franz-go/pkg/kfake":
			t.Errorf("%s %s: this repository's deployment or test dependency reached the user's build", p, v)
		}
	}

	custom := filepath.Join(dir, "_build", "otelcol-custom")
	out, err := exec.Command(custom, "components").CombinedOutput()
	if err != nil {
		t.Fatalf("otelcol-custom components: %v\n%s", err, out)
	}
	var components struct {
		Receivers  []struct{ Name string } `json:"receivers"`
		Processors []struct{ Name string } `json:"processors"`
		Exporters  []struct{ Name string } `json:"exporters"`
		Extensions []struct{ Name string } `json:"extensions"`
	}
	if err := yaml.Unmarshal(out, &components); err != nil {
		t.Fatalf("otelcol-custom components: %v\n%s", err, out)
	}
	names := func(list []struct{ Name string }) []string {
		var n []string
		for _, c := range list {
			n = append(n, c.Name)
		}
		return n
	}
	for _, want := range []struct {
		kind string
		got  []string
		name string
	}{
		{"receiver", names(components.Receivers), "kafka_time_lag"},
		{"receiver", names(components.Receivers), "otlp"},
		{"receiver", names(components.Receivers), "kafka"},
		{"processor", names(components.Processors), "resource"},
		{"processor", names(components.Processors), "memory_limiter"},
		{"exporter", names(components.Exporters), "debug"},
		{"exporter", names(components.Exporters), "prometheus"},
		{"exporter", names(components.Exporters), "otlp_http"},
		{"extension", names(components.Extensions), "healthcheckv2"},
	} {
		if !slices.Contains(want.got, want.name) {
			t.Errorf("otelcol-custom components: no %s %s among %v", want.kind, want.name, want.got)
		}
	}

	configs := readmeConfigs(t)
	configs["the chart's, export.mode=prometheus"] = chartConfig(t)
	configs["the chart's, export.mode=otlp"] = chartConfig(t, "--set", "export.mode=otlp", "--set", "export.otlp.endpoint=http://otel-gateway.observability.svc:4318")
	for name, config := range configs {
		if err := collectorcheck.Validate(custom, t.TempDir(), config, nil); err != nil {
			t.Errorf("otelcol-custom validate of %s: %v\n%s", name, err, config)
		}
	}
}

// fromCheckout uncomments the manifest's replaces block, which builds the
// receiver from a checkout instead of the released module.
func fromCheckout(t *testing.T, manifest string) string {
	t.Helper()
	lines := strings.Split(manifest, "\n")
	i := slices.Index(lines, "# replaces:")
	if i < 0 || i+1 >= len(lines) || lines[i+1] != "#   - "+receiverModule+" => "+checkoutPlaceholder+"/kafkatimelagreceiver" {
		t.Fatalf("README.md's ocb manifest has no commented-out replaces block for a checkout (# replaces:, then #   - %s => %s/kafkatimelagreceiver):\n%s",
			receiverModule, checkoutPlaceholder, manifest)
	}
	lines[i], lines[i+1] = lines[i][2:], lines[i+1][2:]
	return strings.Join(lines, "\n")
}

// readmeConfigs are the README's complete collector configurations
// (```yaml config=full), the minimal one among them.
func readmeConfigs(t *testing.T) map[string]string {
	t.Helper()
	blocks, err := docblocks.Read(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	configs := map[string]string{}
	for _, b := range blocks {
		if b.Lang == "yaml" && b.Attrs["config"] == "full" {
			configs[b.Name()] = b.Body
		}
	}
	if len(configs) == 0 {
		t.Fatal("README.md has no collector configuration (```yaml config=full)")
	}
	return configs
}

// chartConfig is the collector configuration the chart renders with
// kafka.brokers (which has no default) and args (HELM_BIN helm template, the
// ConfigMap's config.yaml).
func chartConfig(t *testing.T, args ...string) string {
	t.Helper()
	helm := os.Getenv("HELM_BIN")
	if helm == "" {
		t.Fatal("HELM_BIN is not set; run `make e2e`, which builds helm and sets it")
	}
	cmd := exec.Command(helm, append([]string{"template", "lag", filepath.Join(repoRoot, "deploy", "helm", "otelcol-kafkatimelag"),
		"--set", "kafka.brokers={kafka-1.kafka.svc:9092}"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr.String())
	}
	for _, doc := range k8sdecode.Documents(out) {
		var cm struct {
			Kind string            `json:"kind"`
			Data map[string]string `json:"data"`
		}
		if err := yaml.Unmarshal(doc, &cm); err != nil {
			t.Fatalf("helm template: %v\n%s", err, doc)
		}
		if cm.Kind == "ConfigMap" && cm.Data["config.yaml"] != "" {
			return cm.Data["config.yaml"]
		}
	}
	t.Fatalf("helm template rendered no ConfigMap with config.yaml:\n%s", out)
	return ""
}

// readmeManifest is the README's ocb manifest (```yaml not-config=ocb),
// which must take this receiver module, by replace, next to the upstream
// components the test is about.
func readmeManifest(t *testing.T) string {
	t.Helper()
	blocks, err := docblocks.Read(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var manifests []string
	for _, b := range blocks {
		if b.Lang == "yaml" && b.Attrs["not-config"] == "ocb" {
			manifests = append(manifests, b.Body)
		}
	}
	if len(manifests) != 1 {
		t.Fatalf("README.md: %d ocb manifests (```yaml not-config=ocb), want 1", len(manifests))
	}
	m := manifests[0]
	for _, want := range []string{
		"  - gomod: " + receiverModule + " v",
		"go.opentelemetry.io/collector/receiver/otlpreceiver v0.165.0",
		"go.opentelemetry.io/collector/exporter/debugexporter v0.165.0",
		"github.com/open-telemetry/opentelemetry-collector-contrib/receiver/kafkareceiver v0.165.1",
		"github.com/open-telemetry/opentelemetry-collector-contrib/processor/resourceprocessor v0.165.1",
	} {
		if !strings.Contains(m, want) {
			t.Fatalf("README.md's ocb manifest lacks %q:\n%s", want, m)
		}
	}
	readme := readFile(t, filepath.Join(repoRoot, "README.md"))
	if !strings.Contains(readme, "go run go.opentelemetry.io/collector/cmd/builder@"+ocbVersion+" --config") {
		t.Fatalf("README.md does not give the ocb command the test runs (go run go.opentelemetry.io/collector/cmd/builder@%s --config ...)", ocbVersion)
	}
	return m
}

func tail(out []byte) []byte {
	const max = 8000
	if len(out) > max {
		return out[len(out)-max:]
	}
	return out
}
