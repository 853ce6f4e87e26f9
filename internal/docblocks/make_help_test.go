package docblocks

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMakeHelpListsEveryDocumentedTarget: every `make TARGET` the user
// docs name, in prose or in a command block, is one `make help` lists.
func TestMakeHelpListsEveryDocumentedTarget(t *testing.T) {
	const root = "../.."
	out, err := exec.Command("make", "-s", "-C", root, "help").Output()
	require.NoError(t, err)
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  ([a-z][a-z0-9-]*):`).FindAllStringSubmatch(string(out), -1) {
		listed[m[1]] = true
	}
	require.Contains(t, listed, "test", "make help:\n%s", out)

	var files []string
	for _, pattern := range []string{"README.md", "BENCHMARKS.md", "CHANGELOG.md", "docs/*.md", "kafkatimelagreceiver/README.md"} {
		matches, err := filepath.Glob(filepath.Join(root, pattern))
		require.NoError(t, err)
		files = append(files, matches...)
	}
	named := regexp.MustCompile("(?:`|^|\n)make ([a-z][a-z0-9-]*)")
	found := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range named.FindAllStringSubmatch(string(data), -1) {
			found++
			require.True(t, listed[m[1]], "%s names `make %s`, which make help does not list", f, m[1])
		}
	}
	require.NotZero(t, found)
}
