#!/usr/bin/env bash
# Builds kminion (github.com/redpanda-data/kminion, module
# github.com/cloudhut/kminion/v2), the Prometheus lag exporter that
# `scalebench -kminion` runs beside the collector, into a cache directory
# outside the repository and prints the binary's path. A second call prints
# the cached binary at once.
#
# The source comes from the first of these that works:
#   1. KMINION_SOURCE: a git repository of kminion (bare or not) holding the
#      tag KMINION_VERSION, or a directory with kminion's source;
#   2. the Go module proxy (`go mod download`);
#   3. `git clone` from GitHub.
# The proxy may refuse the module ("not available"), and GitHub may be out
# of reach: then clone or fetch it where you can and point KMINION_SOURCE at
# it.
#
# Takes about a minute and 100 MB of module downloads on a fresh machine.
#
# Environment: KMINION_VERSION (git tag / module version, default v2.3.5),
# KMINION_SOURCE, KMINION_CACHE (default $XDG_CACHE_HOME/otelcol-kafkatimelag
# or $HOME/.cache/otelcol-kafkatimelag), GO (default go).
set -euo pipefail

version="${KMINION_VERSION:-v2.3.5}"
cache="${KMINION_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/otelcol-kafkatimelag}"
bin="$cache/kminion-$version/kminion"
module="github.com/cloudhut/kminion/v2"

if [[ -x "$bin" ]]; then
	echo "$bin"
	exit 0
fi

go="${GO:-go}"
work="$(mktemp -d)"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
src="$work/kminion"

fetched=""
if [[ -n "${KMINION_SOURCE:-}" ]]; then
	if git -C "$KMINION_SOURCE" rev-parse --verify --quiet "$version^{commit}" >/dev/null 2>&1; then
		mkdir -p "$src"
		git -C "$KMINION_SOURCE" archive "$version" | tar -x -C "$src"
		fetched="git repository $KMINION_SOURCE, tag $version"
	elif [[ -f "$KMINION_SOURCE/go.mod" ]] && grep -q "^module $module\$" "$KMINION_SOURCE/go.mod"; then
		cp -R "$KMINION_SOURCE" "$src"
		fetched="source directory $KMINION_SOURCE (its version is not checked)"
	else
		echo "build-kminion: KMINION_SOURCE=$KMINION_SOURCE is neither a git repository with tag $version nor kminion's source" >&2
		exit 1
	fi
fi
if [[ -z "$fetched" ]]; then
	if dir="$(GOFLAGS=-mod=mod GOMODCACHE="$work/modcache" "$go" mod download -json "$module@$version" 2>/dev/null | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')" && [[ -n "$dir" ]]; then
		cp -R "$dir" "$src"
		fetched="Go module proxy, $module@$version"
	else
		echo "build-kminion: the Go module proxy has no $module@$version; trying GitHub" >&2
	fi
fi
if [[ -z "$fetched" ]]; then
	if git clone --quiet --depth 1 --branch "$version" https://github.com/redpanda-data/kminion "$src" >&2; then
		fetched="github.com/redpanda-data/kminion, tag $version"
	else
		echo "build-kminion: could not get kminion $version: set KMINION_SOURCE to a clone of https://github.com/redpanda-data/kminion" >&2
		exit 1
	fi
fi
chmod -R u+w "$src"

echo "build-kminion: building kminion $version from $fetched into $bin" >&2
mkdir -p "$(dirname "$bin")"
# Build to a temporary name so that an interrupted build never leaves a
# binary that the check above would take for a finished one. The version
# stamped in as kminion's release builds do (it logs it at start).
(
	cd "$src"
	"$go" build -trimpath -ldflags "-X main.version=$version" -o "$bin.tmp" . >&2
)
mv "$bin.tmp" "$bin"
echo "$bin"
