package release

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// publishedImage is the image each release publishes (release.yml's IMAGE).
const publishedImage = "ghcr.io/otelcol-kafkatimelag/otelcol-kafkatimelag"

var (
	// placeholderHost is an address that reaches nothing: a documentation
	// domain, or the gateway an example once pointed at.
	placeholderHost = regexp.MustCompile(`\b(example\.(com|org|net)|otel-gateway)\b`)
	// placeholderValue is a value to fill in, such as <registry>.
	placeholderValue = regexp.MustCompile(`<[A-Za-z][A-Za-z_ -]*>`)
	imageLine        = regexp.MustCompile(`^\s*(?:- )?(image|repository|tag):\s*(\S*)`)
)

// TestDeployHasNoPlaceholders: every example under deploy/ works as
// shipped (or, in the chart, refuses to render without the value it needs):
// no address at a documentation domain or a gateway that does not exist, no
// <value> to fill in outside comments, and every image is the one each
// release publishes, at the repository's version (which the release moves
// with the chart's appVersion: deploy/release/check-version.sh).
func TestDeployHasNoPlaceholders(t *testing.T) {
	version := repoVersion(t)
	var problems []string
	checked := 0
	require.NoError(t, filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch filepath.Ext(path) {
		case ".yaml", ".yml", ".json", ".tpl", ".txt", ".sh", ".md":
		default:
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		template := strings.Contains(filepath.ToSlash(path), "/templates/")
		yamlFile := strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")
		for i, line := range strings.Split(string(data), "\n") {
			at := func(what string) {
				problems = append(problems, filepath.ToSlash(path)+":"+strconv.Itoa(i+1)+": "+what+": "+strings.TrimSpace(line))
			}
			if placeholderHost.MatchString(line) {
				at("an address that reaches nothing")
			}
			if !yamlFile || template {
				continue
			}
			value, _, _ := strings.Cut(line, " #")
			if strings.HasPrefix(strings.TrimSpace(value), "#") {
				continue
			}
			if placeholderValue.MatchString(value) {
				at("a value to fill in")
			}
			m := imageLine.FindStringSubmatch(value)
			if m == nil {
				continue
			}
			switch {
			case m[1] == "image" && m[2] != "" && m[2] != publishedImage+":"+version:
				at("not the published image at " + version)
			case m[1] == "repository" && m[2] != publishedImage:
				at("not the published image")
			case m[1] == "tag" && m[2] != `""` && m[2] != version:
				at("not the repository's version " + version)
			}
		}
		return nil
	}))
	require.Greater(t, checked, 30, "files under deploy/")
	require.Empty(t, problems, "placeholders under deploy/")
}

// TestChartVersionIsTheAppVersion: the chart is released with the
// collector: its version is its appVersion, the repository's version.
func TestChartVersionIsTheAppVersion(t *testing.T) {
	data, err := os.ReadFile("../helm/otelcol-kafkatimelag/Chart.yaml")
	require.NoError(t, err)
	field := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + `: *(\S+)$`).FindStringSubmatch(string(data))
		require.NotNil(t, m, "Chart.yaml has no %s", name)
		return m[1]
	}
	version := repoVersion(t)
	require.Equal(t, version, field("appVersion"), "Chart.yaml appVersion")
	require.Equal(t, version, field("version"), "Chart.yaml version")
}

// repoVersion is builder-config.yaml's dist.version.
func repoVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../builder-config.yaml")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^  version: *(\S+)$`).FindStringSubmatch(string(data))
	require.NotNil(t, m)
	return m[1]
}
