package release

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// pinnedAction is an action used at a full commit, the only reference a
// tag's owner cannot move under the workflow.
var pinnedAction = regexp.MustCompile(`^[\w.-]+/[\w./-]+@[0-9a-f]{40}$`)

// TestActionsArePinnedByCommit: every action every workflow uses is pinned
// by commit SHA (a tag such as v4 can be moved to other code).
func TestActionsArePinnedByCommit(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, ".github/workflows/*.yml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	uses := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		var w workflow
		require.NoError(t, yaml.Unmarshal(data, &w))
		for name, job := range w.Jobs {
			for _, s := range job.Steps {
				if s.Uses == "" || strings.HasPrefix(s.Uses, "./") {
					continue
				}
				uses++
				require.Regexp(t, pinnedAction, s.Uses, "%s, job %s: an action pinned by commit", filepath.Base(file), name)
			}
		}
	}
	require.Greater(t, uses, 2)
}

// TestPullRequestsRunMakeTest: a workflow runs CI's entry point (.ci/run,
// make test) on every pull request, whatever it touches, in the Go image
// of the release's Go.
func TestPullRequestsRunMakeTest(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, ".github/workflows/ci.yml"))
	require.NoError(t, err)
	var w workflow
	require.NoError(t, yaml.Unmarshal(data, &w))
	var raw map[string]any
	require.NoError(t, yaml.Unmarshal(data, &raw))
	on, ok := raw["on"]
	if !ok {
		on = raw["true"] // YAML 1.1 reads the key `on` as true
	}
	triggers := on.(map[string]any)
	require.Contains(t, triggers, "pull_request")
	require.Nil(t, triggers["pull_request"], "every pull request, without a paths filter")
	test, ok := w.Jobs["test"]
	require.True(t, ok, "a test job")
	require.Empty(t, test.If, "unconditional")
	require.Contains(t, runs(test.Steps), "bash .ci/run")
	release, _ := readWorkflow(t)
	require.Equal(t, "golang:"+release.Env["GO_VERSION"]+"-bookworm", test.Container)
}
