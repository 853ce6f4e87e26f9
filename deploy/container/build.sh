#!/usr/bin/env bash
# Builds the container image from Dockerfile with podman, which needs no
# daemon: `make image` runs this after `make build`.
#
#   deploy/container/build.sh BINARY IMAGE ARCHIVE [PLATFORM]
#
# BINARY is the static ocb-built collector, IMAGE the name:tag to give the
# image, ARCHIVE where to write it as a docker-archive tarball (load it with
# `podman load -i` or `docker load -i`, or push it from there). PLATFORM
# (os/arch, e.g. linux/arm64; default the build machine's) is that of
# BINARY: the image only copies files, so nothing runs for another
# architecture. The release workflow calls it once per platform.
#
# Podman is Debian's package (4.3 on bookworm); when it is missing and this
# runs as root on a Debian-like machine, it is installed with apt-get.
set -euo pipefail

binary=$1 image=$2 archive=$3 platform=${4:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
context=$(dirname "$archive")/image

if ! command -v podman >/dev/null; then
	if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
		echo "make image: installing podman (apt-get)" >&2
		export DEBIAN_FRONTEND=noninteractive
		apt-get install -y --no-install-recommends podman >/dev/null 2>&1 ||
			{ apt-get update >/dev/null && apt-get install -y --no-install-recommends podman >/dev/null; }
	else
		echo "make image: podman is not installed (apt-get install podman, or build deploy/container/Dockerfile with docker or buildah)" >&2
		exit 1
	fi
fi

ca=/etc/ssl/certs/ca-certificates.crt
if [[ ! -s $ca ]]; then
	echo "make image: no CA bundle at $ca (install ca-certificates)" >&2
	exit 1
fi

rm -rf "$context"
mkdir -p "$context"
cp "$binary" "$context/otelcol-kafkatimelag"
cp "$here/config.yaml" "$context/config.yaml"
cp "$ca" "$context/ca-certificates.crt"

podman build --quiet ${platform:+--platform "$platform"} -f "$here/Dockerfile" -t "$image" "$context" >/dev/null
rm -f "$archive"
podman save --quiet --format docker-archive -o "$archive" "$image"
echo "make image: built $image ${platform:+for $platform }($(podman image inspect --format '{{.Size}}' "$image") bytes), saved to $archive" >&2
