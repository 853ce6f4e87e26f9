#!/usr/bin/env bash
# Builds Prometheus 3 (native OTLP ingestion, --web.enable-otlp-receiver) from
# the Go module proxy into a cache directory outside the repository and prints
# the binary's path. Debian's `prometheus` package is 2.x (scrape and remote
# write only), so this is the way to get an OTLP-receiving Prometheus on a
# machine that can reach only the Go module proxy and Debian's archive.
#
# Takes about 14 minutes and 150 MB on a fresh machine; a second call prints
# the cached binary at once. Only `make bench-prometheus` needs it; `make test`
# uses Debian's Prometheus.
#
# Environment: PROMETHEUS3_VERSION (module version, default v0.316.0, which is
# Prometheus 3.x), PROMETHEUS3_CACHE (default
# $XDG_CACHE_HOME/otelcol-kafkatimelag or $HOME/.cache/otelcol-kafkatimelag).
set -euo pipefail

version="${PROMETHEUS3_VERSION:-v0.316.0}"
cache="${PROMETHEUS3_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/otelcol-kafkatimelag}"
bin="$cache/prometheus3-$version/prometheus"

if [[ -x "$bin" ]]; then
	echo "$bin"
	exit 0
fi

go="${GO:-go}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "build-prometheus3: building github.com/prometheus/prometheus/cmd/prometheus@$version into $bin (about 14 minutes on a fresh machine)" >&2
# A throwaway module that requires Prometheus: `go install pkg@version`
# refuses modules whose go.mod has replace directives, and building inside a
# module of our own keeps Prometheus's dependencies out of this repository's
# go.mod.
(
	cd "$work"
	"$go" mod init prometheus3-build >/dev/null 2>&1
	"$go" get "github.com/prometheus/prometheus/cmd/prometheus@$version" >&2
	mkdir -p "$(dirname "$bin")"
	# Build to a temporary name so that an interrupted build never leaves a
	# binary that the check above would take for a finished one.
	# Without the version stamped in, `prometheus --version` prints none.
	release="$(cat "$("$go" env GOMODCACHE)/github.com/prometheus/prometheus@$version/VERSION")"
	"$go" build -trimpath -ldflags "-X github.com/prometheus/common/version.Version=$release" \
		-o "$bin.tmp" github.com/prometheus/prometheus/cmd/prometheus >&2
	mv "$bin.tmp" "$bin"
)
echo "$bin"
