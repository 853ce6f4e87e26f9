#!/usr/bin/env bash
# Prints the directory of Apache Kafka's jars (the broker, its tools and the
# SLF4J binding) that deploy/kafka/pom.xml names, fetching them with Maven
# the first time. They are cached outside the repository, in
# ${KAFKA_CACHE:-${XDG_CACHE_HOME:-~/.cache}/otelcol-kafkatimelag}/kafka-<version>-<pom hash>/lib,
# so a change to the pom fetches a new set and never mixes two. Needs Java 17
# or newer and Maven (mvn) on PATH.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
pom="$here/pom.xml"

for tool in java mvn; do
	if ! command -v "$tool" >/dev/null; then
		echo "fetch-kafka: $tool is not on PATH: the real-Kafka tests need Java 17 or newer and Maven (Debian: apt-get install openjdk-17-jre-headless maven)" >&2
		exit 1
	fi
done

version="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom")"
hash="$(sha256sum "$pom" | cut -c1-12)"
cache="${KAFKA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/otelcol-kafkatimelag}"
dir="$cache/kafka-$version-$hash"

# lib is renamed into place only once Maven has copied every jar, so a
# directory that exists is complete.
if [[ ! -d "$dir/lib" ]]; then
	mkdir -p "$dir"
	tmp="$(mktemp -d "$dir/lib.XXXXXX")"
	trap 'rm -rf "$tmp"' EXIT
	start=$SECONDS
	if ! mvn -B -q -f "$pom" dependency:copy-dependencies -DoutputDirectory="$tmp" >"$tmp.log" 2>&1; then
		cat "$tmp.log" >&2
		echo "fetch-kafka: Maven could not fetch the jars $pom names (log above)" >&2
		rm -f "$tmp.log"
		exit 1
	fi
	rm -f "$tmp.log"
	for jar in "kafka_2.13-$version.jar" "kafka-tools-$version.jar" log4j-slf4j-impl-; do
		if ! compgen -G "$tmp/$jar*" >/dev/null; then
			echo "fetch-kafka: Maven's copy of $pom has no $jar*" >&2
			exit 1
		fi
	done
	mv "$tmp" "$dir/lib"
	trap - EXIT
	echo "fetch-kafka: Apache Kafka $version fetched into $dir/lib in $((SECONDS - start))s" >&2
fi
echo "$dir/lib"
