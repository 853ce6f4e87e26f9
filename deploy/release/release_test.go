// Package release checks what the release workflow
// (.github/workflows/release.yml) relies on, short of publishing: that it
// builds the image from the Dockerfile for the platforms `make dist` builds,
// under the name the chart pulls by default, and the chart as an OCI
// artifact, after the tests; that its dry run (pull requests, by hand)
// needs no credentials; that the Go release it builds with is the one every
// go.mod's toolchain line and the Dockerfile pin; that
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

type step struct {
	Name string            `json:"name"`
	If   string            `json:"if"`
	Run  string            `json:"run"`
	Uses string            `json:"uses"`
	With map[string]any    `json:"with"`
	Env  map[string]string `json:"env"`
}

type workflow struct {
	Env  map[string]string `json:"env"`
	Jobs map[string]struct {
		If        string            `json:"if"`
		Needs     any               `json:"needs"`
		Container any               `json:"container"`
		Env       map[string]string `json:"env"`
		Steps     []step            `json:"steps"`
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
	triggers := on.(map[string]any)
	require.Equal(t, map[string]any{"tags": []any{"v[0-9]+.[0-9]+.[0-9]+"}}, triggers["push"], "publishes on version tags only")
	require.Contains(t, triggers, "pull_request", "a dry run on pull requests")
	require.Contains(t, triggers, "workflow_dispatch", "a dry run by hand")

	test, ok := w.Jobs["test"]
	require.True(t, ok, "a test job")
	require.Contains(t, runs(test.Steps), "bash .ci/run", "the test job runs CI's entry point (make test)")
	require.Equal(t, "github.event_name == 'push'", test.If, "make test before a release; CI runs it on pull requests")
	release, ok := w.Jobs["release"]
	require.True(t, ok, "a release job")
	require.Equal(t, "test", release.Needs, "nothing is built for release before the tests pass")
	require.Equal(t, "${{ !failure() && !cancelled() }}", release.If, "after the tests, or as a dry run when they are skipped")
	require.Equal(t, "${{ github.event_name == 'push' && startsWith(github.ref, 'refs/tags/v') }}", release.Env["PUBLISH"])

	script := runs(release.Steps)
	require.Contains(t, script, `deploy/release/check-version.sh "$GITHUB_REF_NAME"`)
	require.Contains(t, script, "make dist")
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	require.Regexp(t, `(?m)^PLATFORMS +:= linux/amd64 linux/arm64$`, string(makefile), "make dist builds both platforms")
	require.Regexp(t, `(?m)^\t\$\(IMAGE_TOOL\) build .*-t \$\(IMAGE\) \.$`, string(makefile), "make image builds the Dockerfile")
	require.Contains(t, script, "docker buildx build --platform linux/amd64,linux/arm64", "the image of both platforms, from the Dockerfile")
	require.Contains(t, script, `--build-arg "VERSION=$VERSION" --build-arg "REVISION=$GITHUB_SHA"`, "the version and revision labels")
	require.Contains(t, script, `--push --tag "$IMAGE:$VERSION" --tag "$IMAGE:latest"`, "published under the chart's default tag, and latest")
	require.Contains(t, script, `--output "type=oci,dest=_build/image.oci.tar"`, "built without pushing in a dry run")
	require.Contains(t, script, `_build/helm package deploy/helm/otelcol-kafkatimelag --version "$VERSION" --app-version "$VERSION"`)
	require.Contains(t, script, `_build/helm push "_build/chart/otelcol-kafkatimelag-$VERSION.tgz" "$CHART_REPOSITORY"`, "the chart as an OCI artifact")
	require.True(t, strings.HasPrefix(w.Env["CHART_REPOSITORY"], "oci://ghcr.io/"), "an OCI repository")
	require.Contains(t, script, `git tag "kafkatimelagreceiver/$GITHUB_REF_NAME"`, "the receiver module's tag")
	require.Contains(t, script, "_build/dist/*", "the binaries and SHA256SUMS attached")

	// The dry run gets as far as it can without credentials: a step that
	// reads a secret or publishes runs on a tag only.
	for _, s := range release.Steps {
		text := s.Run
		for _, v := range s.Env {
			text += "\n" + v
		}
		if strings.Contains(text, "secrets.") || strings.Contains(s.Run, "--push") && !strings.Contains(s.Run, "PUBLISH == true") ||
			strings.Contains(s.Run, "helm push") || strings.Contains(s.Run, "gh release") || strings.Contains(s.Run, "git push") {
			require.Equal(t, "env.PUBLISH == 'true'", s.If, "step %q publishes or reads a secret: on a tag only", s.Name)
		}
	}

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
}

// TestGoReleaseIsPinnedOnce: the workflow's Go, the test job's container,
// the Dockerfile's build image and every go.mod's toolchain line are the
// same patch release, so that the released binaries and image are built
// with the standard library CI tested.
func TestGoReleaseIsPinnedOnce(t *testing.T) {
	w, _ := readWorkflow(t)
	want := w.Env["GO_VERSION"]
	require.Regexp(t, `^1\.[0-9]+\.[0-9]+$`, want, "a patch release")
	require.Equal(t, "golang:"+want+"-bookworm", w.Jobs["test"].Container)
	setupGo := false
	for _, s := range w.Jobs["release"].Steps {
		if strings.HasPrefix(s.Uses, "actions/setup-go@") {
			require.Equal(t, "${{ env.GO_VERSION }}", s.With["go-version"])
			setupGo = true
		}
	}
	require.True(t, setupGo)
	for _, gomod := range []string{"go.mod", "kafkatimelagreceiver/go.mod", "tools/go.mod"} {
		data, err := os.ReadFile(filepath.Join(root, gomod))
		require.NoError(t, err)
		require.Regexp(t, "(?m)^toolchain go"+regexp.QuoteMeta(want)+"$", string(data), gomod)
	}
	dockerfile, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	require.NoError(t, err)
	require.Regexp(t, "(?m)^ARG GO_VERSION="+regexp.QuoteMeta(want)+"$", string(dockerfile))
}

func runs(steps []step) string {
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
