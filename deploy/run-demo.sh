#!/usr/bin/env bash
# Runs the demo stack for a person: the demo Kafka cluster (127.0.0.1:9092-9094)
# and the collector with otelcol-config.yaml (`make run`); with --prometheus,
# also a real Prometheus on 127.0.0.1:${PROMETHEUS_PORT:-19090} that scrapes
# the collector and evaluates deploy/prometheus/kafka-timelag-rules.yml
# (`make run-prometheus`). Ctrl-C stops everything.
#
# Expects _build/otelcol-kafkatimelag and _build/kafkademo (make builds them).
# The demo runs as a binary rather than with `go run`, which does not pass
# SIGTERM on to its child: stopping it would orphan the cluster and keep
# ports 9092-9094 busy.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

with_prometheus=""
case "${1:-}" in
"") ;;
--prometheus) with_prometheus=1 ;;
*)
	echo "usage: $0 [--prometheus]" >&2
	exit 2
	;;
esac

otelcol=_build/otelcol-kafkatimelag
demo=_build/kafkademo
demo_port=9092 # first broker; must match otelcol-config.yaml
prom_port="${PROMETHEUS_PORT:-19090}"
prom_bin="${PROMETHEUS_BIN:-prometheus}"

pids=()
prom_dir=""
cleanup() {
	trap - EXIT INT TERM
	local i
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM "${pids[i]}" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	if [[ -n "$prom_dir" ]]; then rm -rf "$prom_dir"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# wait_for NAME PID PORT: waits up to 30 s, while PID lives, for a listener
# on 127.0.0.1:PORT.
wait_for() {
	local name="$1" pid="$2" port="$3"
	for _ in $(seq 1 150); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "run-demo: $name exited" >&2
			exit 1
		fi
		sleep 0.2
	done
	echo "run-demo: $name is not listening on 127.0.0.1:$port after 30s" >&2
	exit 1
}

if [[ -n "$with_prometheus" ]] && ! command -v "$prom_bin" >/dev/null; then
	echo "run-demo: no $prom_bin on PATH: run deploy/prometheus/install-prometheus.sh, or set PROMETHEUS_BIN" >&2
	exit 1
fi

"$demo" &
pids+=($!)
wait_for kafkademo "${pids[-1]}" "$demo_port"
echo "run-demo: demo cluster up on 127.0.0.1:9092-9094; starting the collector (Ctrl-C stops everything)" >&2
echo "run-demo: Prometheus metrics at http://127.0.0.1:8889/metrics, the collector's own at http://127.0.0.1:8888/metrics, health at http://127.0.0.1:13133/" >&2

"$otelcol" --config otelcol-config.yaml &
pids+=($!)

if [[ -n "$with_prometheus" ]]; then
	wait_for collector "${pids[-1]}" 13133
	prom_dir="$(mktemp -d)"
	"$prom_bin" --config.file=deploy/prometheus/prometheus.yml \
		--storage.tsdb.path="$prom_dir" \
		--web.listen-address="127.0.0.1:$prom_port" \
		>"$prom_dir.log" 2>&1 &
	pids+=($!)
	wait_for prometheus "${pids[-1]}" "$prom_port"
	echo "run-demo: Prometheus UI at http://127.0.0.1:$prom_port (alerts: http://127.0.0.1:$prom_port/alerts; its log: $prom_dir.log)" >&2
fi

# Whichever process ends first ends the stack.
wait -n "${pids[@]}"
