package docblocks

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// userDocs are the pages a user reads to run the receiver: the README,
// docs/, the measurements, the receiver's README and metric reference.
// CHANGELOG.md is left out on purpose: saying what changed is its job.
var userDocs = []string{"../../README.md", "../../docs/*.md", "../../BENCHMARKS.md", "../../kafkatimelagreceiver/README.md", "../../kafkatimelagreceiver/documentation.md"}

// testFakeAllowed are where the in-process Kafka the tests run against may
// be named: docs/development.md says what it is, and the receiver README's
// sections from this heading on are for the receiver's developers.
var testFakeAllowed = map[string]string{
	"../../docs/development.md":            "",
	"../../kafkatimelagreceiver/README.md": "## How the code is laid out",
}

// history are phrasings that narrate the project's history (what a build
// before this one did, before/after comparisons) rather than say what the
// receiver does: history belongs in git and CHANGELOG.md.
var history = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\b(earlier|older|previous|last) (build|builds|version of the receiver)\b`),
	regexp.MustCompile(`(?i)\bbuilds? before (it|this one)\b|\bthe build before\b|\ba build that\b`),
	regexp.MustCompile(`(?i)\bbefore and after\b`),
	// A table row or a cell that compares with what came before.
	regexp.MustCompile(`(?i)^\|.*(\(before\)|\|\s*before\s*(\(|\|))`),
	regexp.MustCompile(`(?i)^\|\s*(before|after)\s*(\(|\|)`),
	regexp.MustCompile(`(?i)\bwhat changing\b.*\bbought\b`),
}

// usedTo matches "used to" narrating a past habit ("the receiver used to
// read"), not "is used to" (a purpose).
var usedTo = regexp.MustCompile(`(?i)(\S+)\s+used to\b`)

// TestUserDocsState: the user docs say what the receiver does and what it
// was tested against, without narrating the project's history and without
// naming the test fake where a user expects what was tested (they say "the
// in-process Kafka" and point to docs/development.md, which names it).
func TestUserDocsState(t *testing.T) {
	var files []string
	for _, pattern := range userDocs {
		m, err := filepath.Glob(pattern)
		require.NoError(t, err)
		require.NotEmpty(t, m, pattern)
		files = append(files, m...)
	}
	require.Contains(t, files, "../../docs/accuracy.md", "the generated accuracy page is a user doc too")
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		fakeFrom, fakeAllowed := testFakeAllowed[file]
		developers := false
		for i, line := range strings.Split(string(data), "\n") {
			where := file + ":" + strconv.Itoa(i+1)
			if fakeAllowed && (fakeFrom == "" || strings.HasPrefix(line, fakeFrom)) {
				developers = true
			}
			if !developers {
				require.NotContains(t, strings.ToLower(line), "kfake",
					"%s names the test fake: say what was tested against (the in-process Kafka, docs/development.md#what-the-tests-run-against)", where)
			}
			for _, re := range history {
				require.False(t, re.MatchString(line), "%s narrates history (%s): say what the receiver does, or compare with another rule by name:\n%s", where, re, line)
			}
			for _, m := range usedTo.FindAllStringSubmatch(line, -1) {
				switch strings.ToLower(m[1]) {
				case "is", "are", "be", "been", "being", "was", "were", "get", "gets":
				default:
					t.Errorf("%s narrates history (%q): say what the receiver does:\n%s", where, m[0], line)
				}
			}
		}
	}
}

// TestUserDocsStateRefuses: the rules catch what they are for.
func TestUserDocsStateRefuses(t *testing.T) {
	for _, line := range []string{
		"The same runs of earlier builds, interleaved with the one above",
		"a build that only measured clocks with them and forgot them",
		"Interleaved with the build before it, three rounds",
		"Before and after, in the same run:",
		"| steady | 1 s | this receiver, one refining read per partition (before) | 0.190 |",
		"| before (timestamps trusted, clamped to the table) | 1.500 s |",
		"## What changing the estimator bought",
	} {
		matched := false
		for _, re := range history {
			matched = matched || re.MatchString(line)
		}
		require.True(t, matched, line)
	}
	require.Equal(t, "receiver", usedTo.FindStringSubmatch("the receiver used to read one record")[1])
	for _, line := range []string{
		"| steady, six groups | 1 s | this receiver, one refining read per partition | 0.190 |",
		"a record appended 90 minutes before the receiver started",
		"a cluster that reported in the last hour no longer does",
	} {
		for _, re := range history {
			require.False(t, re.MatchString(line), "%s: %s", re, line)
		}
	}
}
