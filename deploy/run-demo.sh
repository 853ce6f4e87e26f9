#!/usr/bin/env bash
# Runs the demo stack for a person: the demo Kafka cluster (three brokers on
# 127.0.0.1, ports DEMO_PORT to DEMO_PORT+2, 9092-9094 by default) and the
# collector with otelcol-config.yaml (`make run`); with --prometheus, also a
# real Prometheus on 127.0.0.1:${PROMETHEUS_PORT:-19090} that scrapes the
# collector and evaluates deploy/prometheus/kafka-timelag-rules.yml
# (`make run-prometheus`); with --kafka, the same workload on one Apache
# Kafka node (DEMO_PORT, the controller on DEMO_PORT+2) started from the jars
# deploy/kafka/fetch-kafka.sh caches, instead of the in-process cluster
# (`make run-kafka`; Java 17 needed). Ctrl-C stops everything (and is no
# error).
#
# The console shows the collector's log and, of the data points its debug
# exporter prints every scrape, the time lag and offset lag of each (group,
# topic) and share group; DEMO_CONSOLE=all shows every data point (about
# 250 lines a scrape).
#
# Expects _build/otelcol-kafkatimelag and _build/kafkademo (make builds them).
# The demo runs as a binary rather than with `go run`, which does not pass
# SIGTERM on to its child: stopping it would orphan the cluster and keep
# ports 9092-9094 busy.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

with_prometheus=""
apache_kafka=""
case "${1:-}" in
"") ;;
--prometheus) with_prometheus=1 ;;
--kafka) apache_kafka=1 ;;
*)
	echo "usage: $0 [--prometheus | --kafka]" >&2
	exit 2
	;;
esac

otelcol=_build/otelcol-kafkatimelag
demo=_build/kafkademo
demo_port="${DEMO_PORT:-9092}" # the first broker's; otelcol-config.yaml names 9092-9094
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
# Ctrl-C is how a person stops the demo: a clean stop, not a failure (make
# would print "Error 130").
trap 'exit 0' INT
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

# in_use PORT: something listens on 127.0.0.1:PORT.
in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

if [[ ! $demo_port =~ ^[0-9]+$ ]] || ((demo_port < 1 || demo_port > 65533)); then
	echo "run-demo: DEMO_PORT=$demo_port is not a port from 1 to 65533 (the brokers take it and the next two)" >&2
	exit 2
fi
broker_ports=("$demo_port" "$((demo_port + 1))" "$((demo_port + 2))")
for port in "${broker_ports[@]}"; do
	if in_use "$port"; then
		echo "run-demo: 127.0.0.1:$port is in use (another Kafka, or a demo still running?): stop it, or move the demo with DEMO_PORT=19092 make run" >&2
		exit 1
	fi
done
brokers="127.0.0.1:${broker_ports[0]}, 127.0.0.1:${broker_ports[1]}, 127.0.0.1:${broker_ports[2]}"

if [[ -n "$with_prometheus" ]] && ! command -v "$prom_bin" >/dev/null; then
	echo "run-demo: no $prom_bin on PATH: run deploy/prometheus/install-prometheus.sh, or set PROMETHEUS_BIN" >&2
	exit 1
fi

demo_args=(-ports "$(IFS=,; echo "${broker_ports[*]}")")
if [[ -n "$apache_kafka" ]]; then
	# One node: its client listener on DEMO_PORT, its controller's two
	# above (both were checked free above).
	broker_ports=("$demo_port")
	brokers="127.0.0.1:$demo_port"
	demo_args=(-ports "$demo_port" -apache-kafka)
fi
"$demo" "${demo_args[@]}" &
pids+=($!)
for port in "${broker_ports[@]}"; do wait_for kafkademo "${pids[-1]}" "$port"; done
echo "run-demo: demo cluster up on $brokers; starting the collector (Ctrl-C stops everything)" >&2
echo "run-demo: Prometheus metrics at http://127.0.0.1:8889/metrics, the collector's own at http://127.0.0.1:8888/metrics, health at http://127.0.0.1:13133/" >&2

# The brokers, when moved, override otelcol-config.yaml's (a yaml: config
# merged over the file).
config=(--config otelcol-config.yaml)
if [[ $demo_port != 9092 || -n "$apache_kafka" ]]; then
	config+=(--config "yaml:receivers::kafka_time_lag::brokers: [$brokers]")
fi
if [[ ${DEMO_CONSOLE:-} == all ]]; then
	"$otelcol" "${config[@]}" &
else
	# The debug exporter writes data points to stdout (the log goes to
	# stderr): keep the per-(group, topic) time lag and offset lag, and the
	# share groups'.
	"$otelcol" "${config[@]}" > >(grep --line-buffered -E '^kafka\.(consumer_group\.(time_lag_max|lag_sum)|share_group\.(time_lag|lag))\{') &
fi
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
