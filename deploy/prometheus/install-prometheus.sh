#!/usr/bin/env bash
# Makes sure `prometheus` and `promtool` are on PATH, installing Debian's
# `prometheus` package (Prometheus 2.42 on Debian 12: scrape and remote write,
# no OTLP; promtool comes with it) when they are missing. `make test` and
# `make run-prometheus` call it; CI runs it as root on a fresh machine.
#
# Nothing here relies on the package's systemd service (a machine with
# systemd starts one on :9090): the tests and `make run-prometheus` run the
# binary themselves, on their own ports, with their own storage.
set -euo pipefail

if command -v prometheus >/dev/null && command -v promtool >/dev/null; then
	exit 0
fi

install=(apt-get install -y --no-install-recommends prometheus)
if [[ "$(id -u)" != 0 ]]; then
	echo "install-prometheus: prometheus and promtool are not on PATH; install them as root:" >&2
	echo "  apt-get update && ${install[*]}" >&2
	echo "or put a Prometheus 2.42+ release's prometheus and promtool on PATH." >&2
	exit 1
fi
if ! command -v apt-get >/dev/null; then
	echo "install-prometheus: no apt-get; put a Prometheus 2.42+ release's prometheus and promtool on PATH" >&2
	exit 1
fi
echo "install-prometheus: installing Debian's prometheus package (prometheus and promtool)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
"${install[@]}" >&2
command -v prometheus >/dev/null && command -v promtool >/dev/null
