// Package release checks what the release workflow
// (.github/workflows/release.yml) relies on, short of publishing: that it
// builds the image with `make image`'s script for the platforms `make dist`
// builds, under the name the chart pulls by default, after the tests; that
// deploy/release/check-version.sh refuses a tag the repository does not say
// it releases; that the notes are the CHANGELOG.md section. actionlint
// checks the workflow's syntax (`make workflow-check`).
package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

const root = "../.."

type workflow struct {
	Env  map[string]string `json:"env"`
	Jobs map[string]struct {
		Needs     any `json:"needs"`
		Container any `json:"container"`
		Steps     []struct {
			Name string `json:"name"`
			Run  string `json:"run"`
			Uses string `json:"uses"`
		} `json:"steps"`
	} `json:"jobs"`
}

func readWorkflow(t *testing.T) (workflow, map[string]any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, ".github/workflows/release.yml"))
	require.NoError(t, err)
	var w workflow
	require.NoError(t, yaml.Unmarshal(data, &w))
	var raw map[string]any
	require.NoError(t, yaml.Unmarshal(data, &raw))
	return w, raw
}

func TestWorkflowTestsThenBuildsWhatTheChartPulls(t *testing.T) {
	w, raw := readWorkflow(t)

	// YAML 1.1 reads the key `on` as true.
	on, ok := raw["on"]
	if !ok {
		on = raw["true"]
	}
	require.Equal(t, map[string]any{"push": map[string]any{"tags": []any{"v[0-9]+.[0-9]+.[0-9]+"}}}, on, "runs on version tags only")

	test, ok := w.Jobs["test"]
	require.True(t, ok, "a test job")
	require.Contains(t, runs(test.Steps), "bash .ci/run", "the test job runs CI's entry point (make test)")
	release, ok := w.Jobs["release"]
	require.True(t, ok, "a release job")
	require.Equal(t, "test", release.Needs, "nothing is built for release before the tests pass")

	script := runs(release.Steps)
	require.Contains(t, script, `deploy/release/check-version.sh "$GITHUB_REF_NAME"`)
	require.Contains(t, script, "make dist")
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	require.Regexp(t, `(?m)^image: .*\n\tdeploy/container/build.sh `, string(makefile), "make image builds with build.sh")
	require.Regexp(t, `(?m)^PLATFORMS +:= linux/amd64 linux/arm64$`, string(makefile), "make dist builds both platforms")
	require.Contains(t, script, "for arch in amd64 arm64; do\n  deploy/container/build.sh \"_build/dist/otelcol-kafkatimelag_${VERSION}_linux_${arch}\"",
		"the image of each platform from make dist's binary, by make image's script")
	require.Contains(t, script, `"linux/$arch"`, "build.sh is told the binary's platform")
	require.Contains(t, script, `git tag "kafkatimelagreceiver/$GITHUB_REF_NAME"`, "the receiver module's tag")
	require.Contains(t, script, "_build/dist/*", "the binaries and SHA256SUMS attached")

	values, err := os.ReadFile(filepath.Join(root, "deploy/helm/otelcol-kafkatimelag/values.yaml"))
	require.NoError(t, err)
	var v struct {
		Image struct {
			Repository string `json:"repository"`
			Tag        string `json:"tag"`
		} `json:"image"`
	}
	require.NoError(t, yaml.Unmarshal(values, &v))
	require.Equal(t, w.Env["IMAGE"], v.Image.Repository, "the chart's default image is the one the workflow publishes")
	require.Empty(t, v.Image.Tag, "the chart's default tag is its appVersion, which check-version.sh holds to the release's")
	require.Contains(t, script, `podman manifest push --all "$IMAGE:$VERSION"`, "published under the chart's default tag")
}

func runs(steps []struct {
	Name string `json:"name"`
	Run  string `json:"run"`
	Uses string `json:"uses"`
}) string {
	var b strings.Builder
	for _, s := range steps {
		b.WriteString(s.Run + "\n")
	}
	return b.String()
}

// versionedFiles copies what check-version.sh reads into a directory of
// its own, each file's version replaced with version.
func versionedFiles(t *testing.T, version string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []struct {
		path string
		re   *regexp.Regexp
		with string
	}{
		{"builder-config.yaml", regexp.MustCompile(`(?m)^  version: .*$`), "  version: " + version},
		{"deploy/helm/otelcol-kafkatimelag/Chart.yaml", regexp.MustCompile(`(?m)^(version|appVersion): .*$`), "$1: " + version},
		{"README.md", regexp.MustCompile(`(?m)^(  - gomod: github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver) v.*$`), "$1 v" + version},
		{"CHANGELOG.md", regexp.MustCompile(`(?m)^## \[Unreleased\]$`), "## [Unreleased]\n\n## [" + version + "] - 2027-01-15"},
	} {
		data, err := os.ReadFile(filepath.Join(root, f.path))
		require.NoError(t, err)
		require.Regexp(t, f.re, string(data), "%s has the version where check-version.sh reads it", f.path)
		out := f.re.ReplaceAllString(string(data), f.with)
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, f.path)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, f.path), []byte(out), 0o600))
	}
	return dir
}

func checkVersion(dir, tag string) (string, error) {
	out, err := exec.Command(filepath.Join(root, "deploy/release/check-version.sh"), tag, dir).CombinedOutput()
	return string(out), err
}

func TestCheckVersion(t *testing.T) {
	dir := versionedFiles(t, "1.2.3")
	out, err := checkVersion(dir, "v1.2.3")
	require.NoError(t, err, out)
	require.Equal(t, "1.2.3\n", out)

	out, err = checkVersion(dir, "v1.2.4")
	require.Error(t, err)
	for _, what := range []string{"builder-config.yaml", "Chart.yaml version", "Chart.yaml appVersion", "README", "CHANGELOG.md"} {
		require.Contains(t, out, what, "a tag the repository does not release names each place")
	}
	out, err = checkVersion(dir, "1.2.3")
	require.Error(t, err)
	require.Contains(t, out, "not vX.Y.Z")

	// One place left behind is enough to refuse.
	chart := filepath.Join(dir, "deploy/helm/otelcol-kafkatimelag/Chart.yaml")
	data, err := os.ReadFile(chart)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(chart, []byte(strings.Replace(string(data), "appVersion: 1.2.3", "appVersion: 1.2.2", 1)), 0o600))
	out, err = checkVersion(dir, "v1.2.3")
	require.Error(t, err)
	require.Equal(t, "check-version: Chart.yaml appVersion is \"1.2.2\", not 1.2.3\n", out)
}

func TestNotesAreTheChangelogSection(t *testing.T) {
	dir := versionedFiles(t, "1.2.3")
	out, err := exec.Command(filepath.Join(root, "deploy/release/notes.sh"), "1.2.3", filepath.Join(dir, "CHANGELOG.md")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	notes := string(out)
	require.True(t, strings.HasPrefix(notes, "\n### Added\n\n- "), "the section's body:\n%s", notes)
	require.NotContains(t, notes, "## [", "one section")
	require.NotContains(t, notes, "[Unreleased]:", "without the link definitions that end the file")
}
