# Everything runs through the Go toolchain in go.mod: ocb is a `tool` in
# go.mod (go.opentelemetry.io/collector/cmd/builder v0.165.0), so nothing is
# installed globally, but for Debian's packages some targets install as root
# when missing (`make help` says which).

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c

GO          ?= go
BUILD_DIR   := _build
OTELCOL_BIN := $(BUILD_DIR)/otelcol-kafkatimelag
DEMO_BIN    := $(BUILD_DIR)/kafkademo
# The container image `make image` builds from the Dockerfile, the tool it
# builds with (IMAGE_TOOL: podman, buildah or docker, the first on PATH
# unless set), and the docker-archive it is saved to and checked from.
IMAGE       ?= otelcol-kafkatimelag:$(VERSION)
IMAGE_TOOL  ?= $(firstword $(foreach tool,podman buildah docker,$(if $(shell command -v $(tool)),$(tool))))
IMAGE_TAR   := $(BUILD_DIR)/otelcol-kafkatimelag-image.tar
# mdatagen, pinned in tools/go.mod (a module of its own, so that its
# dependencies stay out of the collector's).
MDATAGEN    := $(BUILD_DIR)/mdatagen
# helm, pinned in tools/go.mod too (helm.sh/helm/v3 v3.22.0).
HELM        := $(BUILD_DIR)/helm
CHART       := deploy/helm/otelcol-kafkatimelag
# actionlint, a tool in tools/go.mod, checks the GitHub Actions workflows.
ACTIONLINT  := $(BUILD_DIR)/actionlint
# The release files (`make dist`): the collector for each platform the image
# is published for, and their checksums. VERSION is the distribution's
# (builder-config.yaml dist.version), which a release tag must equal
# (deploy/release/check-version.sh).
DIST_DIR    := $(BUILD_DIR)/dist
VERSION     := $(shell sed -n 's/^  version: *//p' builder-config.yaml)
PLATFORMS   := linux/amd64 linux/arm64

.PHONY: all help build run run-prometheus run-kafka demo test test-unit test-kafka kafka-fetch kafka-up kafka-down prometheus-tools rules-test fmt-check vet generate generate-check mdatagen helm helm-sync helm-check actionlint workflow-check unit e2e image dist bench bench-prometheus clean

all: build

## help: list the targets ([root: pkg] marks those that install Debian's pkg with apt-get when it is missing, as root)
help:
	@sed -n 's/^## /  /p' $(firstword $(MAKEFILE_LIST))

## build: build the collector distribution with ocb into _build/otelcol-kafkatimelag
# Static (no cgo), so that the same binary runs in the container image.
build:
	CGO_ENABLED=0 $(GO) tool builder --config builder-config.yaml

## run: build, start the demo Kafka cluster, run the collector against it
run: build demo
	deploy/run-demo.sh

## run-prometheus: `make run` plus a real Prometheus (UI on 127.0.0.1:19090) with the alerting rules [root: prometheus]
run-prometheus: build demo prometheus-tools
	deploy/run-demo.sh --prometheus

## run-kafka: `make run` on a real Apache Kafka 4.4 node (from the jars `make kafka-fetch` caches; Java 17 and Maven needed) instead of the in-process cluster
run-kafka: build demo kafka-fetch
	KAFKA_LIB="$$(deploy/kafka/fetch-kafka.sh)" deploy/run-demo.sh --kafka

## demo: build the demo Kafka cluster program into _build/kafkademo
demo:
	$(GO) build -o $(DEMO_BIN) ./cmd/kafkademo

## test: everything CI runs (.ci/run) [root: prometheus]
test: fmt-check vet generate-check workflow-check unit build rules-test helm-check e2e test-kafka

# Apache Kafka: deploy/kafka/pom.xml's jars, fetched with Maven once into
# ~/.cache/otelcol-kafkatimelag (KAFKA_CACHE moves it), keyed by the pom's
# hash. KAFKA_PORT is the port of `make kafka-up`'s node.
KAFKA_PORT ?= 9092
KAFKA_NODE_DIR := $(BUILD_DIR)/kafka

## kafka-fetch: fetch Apache Kafka 4.4's jars with Maven into the cache (once; Java 17 and Maven needed)
kafka-fetch:
	deploy/kafka/fetch-kafka.sh >/dev/null

## test-kafka: the real-Kafka suite: the receiver against Apache Kafka 4.4 clusters on 127.0.0.1 (Java 17 and Maven needed)
# The tests are tagged kafka, so that the other targets need no Java. The
# suite's tests are named TestApacheKafka*; the package's other tests ran
# in `make unit` already.
test-kafka: kafka-fetch
	lib="$$(deploy/kafka/fetch-kafka.sh)"; cd $(RECEIVER_DIR) && \
		KAFKA_LIB="$$lib" $(GO) test -tags kafka -race -count=1 ./kafkatest/apachekafka/ && \
		KAFKA_LIB="$$lib" $(GO) test -tags kafka -race -count=1 -timeout 25m -run '^TestApacheKafka' .

## kafka-up: start one Apache Kafka 4.4 node on 127.0.0.1:9092 (KAFKA_PORT moves it) in the background, for trying the receiver by hand (`make kafka-down` stops it)
kafka-up: kafka-fetch
	@if [[ -f $(KAFKA_NODE_DIR).pid ]] && kill -0 "$$(cat $(KAFKA_NODE_DIR).pid)" 2>/dev/null; then \
		echo "kafka-up: already running (pid $$(cat $(KAFKA_NODE_DIR).pid)); make kafka-down stops it" >&2; exit 1; fi
	mkdir -p $(BUILD_DIR)
	$(GO) build -o $(BUILD_DIR)/kafkanode ./cmd/kafkanode
	KAFKA_LIB="$$(deploy/kafka/fetch-kafka.sh)" nohup $(BUILD_DIR)/kafkanode -port $(KAFKA_PORT) -dir $(KAFKA_NODE_DIR) >$(KAFKA_NODE_DIR).log 2>&1 & echo $$! >$(KAFKA_NODE_DIR).pid
	@for _ in $$(seq 1 600); do \
		if grep -qs ' ready: ' $(KAFKA_NODE_DIR).log; then sed -n 's/.* ready: /kafka-up: /p' $(KAFKA_NODE_DIR).log; exit 0; fi; \
		if ! kill -0 "$$(cat $(KAFKA_NODE_DIR).pid)" 2>/dev/null; then cat $(KAFKA_NODE_DIR).log >&2; rm -f $(KAFKA_NODE_DIR).pid; exit 1; fi; \
		sleep 0.2; done; \
	echo "kafka-up: not ready after 120s: see $(KAFKA_NODE_DIR).log" >&2; exit 1

## kafka-down: stop the node `make kafka-up` started
kafka-down:
	@if [[ ! -f $(KAFKA_NODE_DIR).pid ]]; then echo "kafka-down: no node started by make kafka-up" >&2; exit 0; fi; \
	pid="$$(cat $(KAFKA_NODE_DIR).pid)"; kill -TERM "$$pid" 2>/dev/null || true; \
	while kill -0 "$$pid" 2>/dev/null; do sleep 0.2; done; rm -f $(KAFKA_NODE_DIR).pid; echo "kafka-down: stopped"

## test-unit: the fast layer alone (about 15 s warm): both modules' tests built with the tag unit, which leaves out those that need the in-process Kafka or real time, and the accuracy evaluation's own runs
# Files marked `//go:build !unit` are the kfake and timing tests; `make
# test` (unit) runs them with the rest, under -race. internal/layering
# checks that this layer links no kfake and calls no time.Sleep.
test-unit:
	$(GO) test -tags unit ./...
	cd $(RECEIVER_DIR) && $(GO) test -tags unit ./...

## prometheus-tools: prometheus and promtool on PATH [root: prometheus, Debian's package; CI runs as root]
prometheus-tools:
	deploy/prometheus/install-prometheus.sh

## rules-test: promtool checks and unit-tests the alerting and migration rules in deploy/prometheus [root: prometheus]
rules-test: prometheus-tools
	cd deploy/prometheus && promtool check rules kafka-timelag-rules.yml migration-rules.yml && \
		promtool test rules kafka-timelag-rules.test.yml migration-rules.test.yml

## mdatagen: build the pinned mdatagen into _build/mdatagen
mdatagen:
	cd tools && $(GO) build -o ../$(MDATAGEN) go.opentelemetry.io/collector/cmd/mdatagen

## helm: build the pinned helm into _build/helm
helm:
	cd tools && $(GO) build -o ../$(HELM) helm.sh/helm/v3/cmd/helm

## actionlint: build the pinned actionlint into _build/actionlint
actionlint:
	cd tools && $(GO) build -o ../$(ACTIONLINT) github.com/rhysd/actionlint/cmd/actionlint

## workflow-check: actionlint on the GitHub Actions workflows in .github/workflows
workflow-check: actionlint
	$(ACTIONLINT)

## helm-sync: copy the alerting rules, the migration rules and the dashboard into the Helm chart (helm reads only the chart's own files)
helm-sync:
	cp deploy/prometheus/kafka-timelag-rules.yml deploy/prometheus/migration-rules.yml deploy/grafana/kafka-timelag.json $(CHART)/files/

## helm-check: the chart linted and rendered with every shipped values file, decoded strictly, its config validated; schema and migration-rule tests [root: prometheus]
helm-check: helm build prometheus-tools
	HELM_BIN="$(CURDIR)/$(HELM)" OTELCOL_BIN="$(CURDIR)/$(OTELCOL_BIN)" $(GO) test -tags helm -count=1 -v ./deploy/helm/ ./deploy/operator/

## generate: regenerate the receiver's metric code and docs from kafkatimelagreceiver/metadata.yaml, and the chart's receiver schema from its configuration
generate: mdatagen
	cd kafkatimelagreceiver && ../$(MDATAGEN) metadata.yaml
	cd kafkatimelagreceiver && $(GO) run ./cmd/chartschema

## generate-check: fail when the generated code in the tree is not what mdatagen writes, or the chart's receiver schema not what the configuration gives
generate-check: mdatagen
	tools/check-generated.sh $(MDATAGEN)
	cd kafkatimelagreceiver && $(GO) test -count=1 ./cmd/chartschema/

## fmt-check: gofmt check of every Go file
# _build holds ocb's generated sources, which are not ours to format.
fmt-check:
	@unformatted="$$(find . -name '*.go' -not -path './$(BUILD_DIR)/*' -not -path './.git/*' -print0 | xargs -0 -r gofmt -l)"; \
	if [ -n "$$unformatted" ]; then echo "gofmt: these files need formatting (run gofmt -w):" >&2; echo "$$unformatted" >&2; exit 1; fi

# The receiver is a module of its own (kafkatimelagreceiver/go.mod); the root
# module holds the distribution's tests, the demo, the benchmarks and deploy.
RECEIVER_DIR := kafkatimelagreceiver
RECEIVER_MODULE := github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver

## vet: go vet of both modules and every build tag
vet:
	$(GO) vet ./...
	cd $(RECEIVER_DIR) && $(GO) vet ./...
	$(GO) vet -tags unit ./...
	cd $(RECEIVER_DIR) && $(GO) vet -tags unit ./...
	cd $(RECEIVER_DIR) && $(GO) vet -tags kafka ./...
	$(GO) vet -tags e2e ./e2e/
	$(GO) vet -tags image ./deploy/container/
	$(GO) vet -tags helm ./deploy/helm/ ./deploy/operator/

## unit: go test -race of both modules, every layer (the unit layer, the in-process Kafka and timing tests, the layout rules of internal/layering)
# The receiver's own package is run in shards: its in-process Kafka and
# timing tests wait on real time (about 320 s in all, with or without
# -race), so one run of it would take over five minutes. Each shard below
# names tests of about a minute together; the last run takes every test
# no shard names, new ones included. The replica test runs on its own with
# -v: go test shows a passing test's per-round coverage and duplicate counts
# only then. The accuracy target runs the simulation single-threaded but
# for its seeds' workers (about a minute; over 5 minutes under -race, which
# finds nothing more in it): it runs without -race, its workers' race
# checked by TestEvaluateIsTheSameWithAnyWorkers.
RECEIVER_SHARDS := \
	TestTimeLagAccuracyWorkloads|TestTimeIndexTrafficNearTheHead \
	TestTimeLagAccuracySteadyProduction|TestProgressAgainstKnownRates \
	TestRollingLeaderMoveKeepsSeriesAndTables|TestWedgedBrokerCostsOnlyWhatItHolds|TestRollingLeaderMoveWithSlowMetadataAtTheScrapeInterval \
	TestSimulationAgreesWithReceiver|TestSimulationAgreesWithReceiverOnEarlyStamps|TestReplicasAgreeOnTheCoordinationPartitionCount|TestRestartKeepsHistory|TestReplicaCutOffFromItsCoordinatorStopsReporting
RECEIVER_SHARDED := $(subst $(eval) ,|,$(strip $(RECEIVER_SHARDS)))|TestReplicasShareGroups
unit:
	$(GO) test -race ./...
	cd $(RECEIVER_DIR) && $(GO) test -race -skip '^TestAccuracyTarget$$' $$($(GO) list ./... | grep -vx '$(RECEIVER_MODULE)')
	cd $(RECEIVER_DIR) && $(GO) test -count=1 -run '^TestAccuracyTarget$$' ./internal/accuracy/
	cd $(RECEIVER_DIR) && for shard in $(foreach s,$(RECEIVER_SHARDS),'^($(s))$$'); do $(GO) test -race -run "$$shard" . ; done
	cd $(RECEIVER_DIR) && $(GO) test -race -skip '^($(RECEIVER_SHARDED))$$' .
	cd $(RECEIVER_DIR) && $(GO) test -race -count=1 -v -run '^TestReplicasShareGroups$$' .

## e2e: the built collector against the demo cluster and a real Prometheus; the README's ocb manifest built and validated [root: prometheus]
# The e2e tests run the collector, the demo cluster and a real Prometheus
# (PROMETHEUS_BIN, or prometheus on PATH), and helm to render the chart.
e2e: build helm prometheus-tools
	OTELCOL_BIN="$(CURDIR)/$(OTELCOL_BIN)" HELM_BIN="$(CURDIR)/$(HELM)" $(GO) test -tags e2e -race -count=1 -v ./e2e/

## image: build the container image from the Dockerfile with podman, buildah or docker (whichever is installed; IMAGE_TOOL picks), save it to _build and check it
# No root step: the Dockerfile's build stage compiles with the golang image
# (pulled from Docker Hub) and the Go module proxy. The check reads the
# saved archive, so it works with any of the three (deploy/container/image_test.go).
image:
	@if [[ -z "$(IMAGE_TOOL)" ]]; then \
		echo "make image: none of podman, buildah or docker is on PATH: install one (podman and buildah need no daemon), or build the Dockerfile with it elsewhere" >&2; exit 1; fi
	$(IMAGE_TOOL) build --build-arg VERSION=$(VERSION) --build-arg REVISION="$$(git rev-parse HEAD 2>/dev/null || echo unknown)" -t $(IMAGE) .
	mkdir -p $(BUILD_DIR)
	rm -f $(IMAGE_TAR)
	case "$(IMAGE_TOOL)" in \
		buildah) buildah push $(IMAGE) docker-archive:$(IMAGE_TAR):$(IMAGE) ;; \
		*) $(IMAGE_TOOL) save -o $(IMAGE_TAR) $(IMAGE) ;; \
	esac
	IMAGE_ARCHIVE="$(CURDIR)/$(IMAGE_TAR)" IMAGE_VERSION=$(VERSION) $(GO) test -tags image -count=1 -v ./deploy/container/

## dist: the release's collector binaries for linux/amd64 and linux/arm64 and their SHA256SUMS in _build/dist
# ocb compiles for GOOS/GOARCH from its environment, so it runs as a host
# binary (`go tool` would build the tool itself for the target). The
# distribution binary it leaves in _build is removed afterwards, since it is
# the last platform's, not necessarily the host's: `make build` makes it again.
dist:
	$(GO) build -o $(BUILD_DIR)/ocb go.opentelemetry.io/collector/cmd/builder
	rm -rf $(DIST_DIR)
	mkdir -p $(DIST_DIR)
	for platform in $(PLATFORMS); do \
		CGO_ENABLED=0 GOOS=$${platform%/*} GOARCH=$${platform#*/} $(BUILD_DIR)/ocb --config builder-config.yaml; \
		mv $(OTELCOL_BIN) $(DIST_DIR)/otelcol-kafkatimelag_$(VERSION)_$${platform%/*}_$${platform#*/}; \
	done
	cd $(DIST_DIR) && sha256sum otelcol-kafkatimelag_* > SHA256SUMS

## bench: Go benchmarks (in-process Kafka) and the scale program against the built collector (BENCHMARKS.md)
# BENCHTIME and SCALEBENCH_FLAGS (e.g. SCALEBENCH_FLAGS='-workloads 50x2000
# -naive=false') override the defaults. The collector is built first; the
# scale program runs it as a subprocess and measures that process alone.
bench: build
	cd $(RECEIVER_DIR) && $(GO) test -run '^$$' -bench . -benchmem -benchtime=$(or $(BENCHTIME),3s) -timeout 60m ./...
	$(GO) build -o $(BUILD_DIR)/scalebench ./cmd/scalebench
	$(BUILD_DIR)/scalebench -collector $(OTELCOL_BIN) $(SCALEBENCH_FLAGS)
	$(BUILD_DIR)/scalebench -collector $(OTELCOL_BIN) -extra-config testdata/otlp-http-large-cluster.yaml $(SCALEBENCH_FLAGS)

## bench-prometheus: the collector and a real Prometheus 3 (OTLP) at 90,000 pairs (BENCHMARKS.md)
# Builds Prometheus 3 into ~/.cache/otelcol-kafkatimelag the first time (about
# 14 minutes). BENCH_PROMETHEUS_FLAGS overrides or adds scalebench flags, e.g.
# '-prometheus-path scrape -prometheus prometheus' for the pull path.
bench-prometheus: build
	$(GO) build -o $(BUILD_DIR)/scalebench ./cmd/scalebench
	prom3="$$(deploy/prometheus/build-prometheus3.sh)"; \
	$(BUILD_DIR)/scalebench -collector $(OTELCOL_BIN) -workloads 30x3000 -collection-interval 15s \
		-prometheus "$$prom3" -prometheus-path otlp -extra-config testdata/scalebench-trusted-stamps.yaml $(BENCH_PROMETHEUS_FLAGS)

## clean: remove build output
clean:
	rm -rf $(BUILD_DIR)
