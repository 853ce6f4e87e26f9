#!/usr/bin/env bash
# Checks that a release tag (vX.Y.Z) is the version the repository says it
# releases, and prints X.Y.Z: builder-config.yaml's dist.version (the
# binary's), the chart's version and appVersion (its default image tag),
# the receiver version of the README's ocb manifest, and a dated section
# "## [X.Y.Z] - YYYY-MM-DD" in CHANGELOG.md. The release workflow runs it
# before it builds anything.
#
#   deploy/release/check-version.sh vX.Y.Z [ROOT]
set -euo pipefail

tag=$1
root=${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
if [[ ! $tag =~ ^v([0-9]+\.[0-9]+\.[0-9]+)$ ]]; then
	echo "check-version: tag $tag is not vX.Y.Z" >&2
	exit 1
fi
version=${BASH_REMATCH[1]}

fail=0
check() { # what, found
	if [[ $2 != "$version" ]]; then
		echo "check-version: $1 is \"$2\", not $version" >&2
		fail=1
	fi
}
check "builder-config.yaml dist.version" "$(sed -n 's/^  version: *//p' "$root/builder-config.yaml")"
chart=$root/deploy/helm/otelcol-kafkatimelag/Chart.yaml
check "Chart.yaml version" "$(sed -n 's/^version: *//p' "$chart")"
check "Chart.yaml appVersion" "$(sed -n 's/^appVersion: *//p' "$chart")"
check "the README's ocb manifest receiver version" \
	"$(sed -n 's|^  - gomod: github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver v||p' "$root/README.md")"
if ! grep -Eq "^## \[$version\] - [0-9]{4}-[0-9]{2}-[0-9]{2}\$" "$root/CHANGELOG.md"; then
	echo "check-version: CHANGELOG.md has no section \"## [$version] - YYYY-MM-DD\"" >&2
	fail=1
fi
if [[ $fail -ne 0 ]]; then
	exit 1
fi
echo "$version"
