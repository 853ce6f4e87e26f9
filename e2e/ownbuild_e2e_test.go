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

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/internal/docblocks"
)

// checkoutPlaceholder is where the README's manifest says to put the path
// of a checkout of this repository.
const checkoutPlaceholder = "/path/to/otelcol-kafkatimelag"

// ocbVersion is the ocb release the README tells users to run, the
// collector release the receiver is built against.
const ocbVersion = "v0.165.0"

// TestOwnCollectorBuild builds, in a directory outside the repository, the
// ocb manifest of the README's "Add it to your own collector" section,
// with the command it gives, and the checkout's path in place of the
// placeholder: this receiver module next to upstream components a Kafka
// shop's collector has (otlpreceiver, debugexporter, contrib's kafkareceiver
// with franz-go, resourceprocessor). It must resolve without bumping any
// collector module off the release, bring none of this repository's
// deployment or test dependencies, and list kafka_time_lag among its
// components.
func TestOwnCollectorBuild(t *testing.T) {
	manifest := readmeManifest(t)
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

	out, err := exec.Command(filepath.Join(dir, "_build", "otelcol-custom"), "components").CombinedOutput()
	if err != nil {
		t.Fatalf("otelcol-custom components: %v\n%s", err, out)
	}
	var components struct {
		Receivers  []struct{ Name string } `json:"receivers"`
		Processors []struct{ Name string } `json:"processors"`
		Exporters  []struct{ Name string } `json:"exporters"`
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
		{"exporter", names(components.Exporters), "debug"},
	} {
		if !slices.Contains(want.got, want.name) {
			t.Errorf("otelcol-custom components: no %s %s among %v", want.kind, want.name, want.got)
		}
	}
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
		"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver v0.0.0",
		"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver => " + checkoutPlaceholder + "/kafkatimelagreceiver",
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
