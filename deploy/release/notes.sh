#!/usr/bin/env bash
# Prints the CHANGELOG.md section of a version (the release's notes), from
# its "## [X.Y.Z]" heading to the next heading of that level or the link
# definitions that end the file.
#
#   deploy/release/notes.sh X.Y.Z [CHANGELOG]
set -euo pipefail

version=$1
changelog=${2:-$(dirname "${BASH_SOURCE[0]}")/../../CHANGELOG.md}
awk -v heading="## [$version]" '
	index($0, heading) == 1 { inside = 1; next }
	inside && (/^## / || /^\[[^]]+\]: /) { exit }
	inside { print }
' "$changelog"
