# Everything runs through the Go toolchain in go.mod: ocb is a `tool` in
# go.mod (go.opentelemetry.io/collector/cmd/builder v0.165.0), so nothing is
# installed globally.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c

GO          ?= go
BUILD_DIR   := _build
OTELCOL_BIN := $(BUILD_DIR)/otelcol-kafkatimelag
DEMO_BIN    := $(BUILD_DIR)/kafkademo
# The container image `make image` builds, and the archive it is saved to.
IMAGE       ?= otelcol-kafkatimelag:0.1.0-dev
IMAGE_TAR   := $(BUILD_DIR)/otelcol-kafkatimelag-image.tar
# mdatagen, pinned in tools/go.mod (a module of its own, so that its
# dependencies stay out of the collector's).
MDATAGEN    := $(BUILD_DIR)/mdatagen
# helm, pinned in tools/go.mod too (helm.sh/helm/v3 v3.22.0).
HELM        := $(BUILD_DIR)/helm
CHART       := deploy/helm/otelcol-kafkatimelag

.PHONY: all help build run run-prometheus demo test prometheus-tools rules-test fmt-check vet generate generate-check mdatagen helm helm-sync helm-check unit e2e image bench bench-prometheus clean

all: build

## help: list the main targets
help:
	@sed -n 's/^## /  /p' $(firstword $(MAKEFILE_LIST))

## build: build the collector distribution with ocb into _build/otelcol-kafkatimelag
# Static (no cgo), so that the same binary runs in the container image.
build:
	CGO_ENABLED=0 $(GO) tool builder --config builder-config.yaml

## run: build, start the demo Kafka cluster, run the collector against it
run: build demo
	deploy/run-demo.sh

## run-prometheus: `make run` plus a real Prometheus (UI on 127.0.0.1:19090) with the alerting rules
run-prometheus: build demo prometheus-tools
	deploy/run-demo.sh --prometheus

demo:
	$(GO) build -o $(DEMO_BIN) ./cmd/kafkademo

## test: everything CI runs
test: fmt-check vet generate-check unit build rules-test helm-check e2e

# prometheus and promtool on PATH; installs Debian's package when missing
# (as root; CI is).
prometheus-tools:
	deploy/prometheus/install-prometheus.sh

## rules-test: promtool checks and unit-tests the alerting and migration rules in deploy/prometheus
rules-test: prometheus-tools
	cd deploy/prometheus && promtool check rules kafka-timelag-rules.yml migration-rules.yml && \
		promtool test rules kafka-timelag-rules.test.yml migration-rules.test.yml

mdatagen:
	cd tools && $(GO) build -o ../$(MDATAGEN) go.opentelemetry.io/collector/cmd/mdatagen

helm:
	cd tools && $(GO) build -o ../$(HELM) helm.sh/helm/v3/cmd/helm

## helm-sync: copy the alerting rules and the dashboard into the Helm chart (helm reads only the chart's own files)
helm-sync:
	cp deploy/prometheus/kafka-timelag-rules.yml deploy/grafana/kafka-timelag.json $(CHART)/files/

## helm-check: helm lint and helm template of the chart with every shipped values file, each document decoded strictly, the collector config validated with the built binary
helm-check: helm build prometheus-tools
	HELM_BIN="$(CURDIR)/$(HELM)" OTELCOL_BIN="$(CURDIR)/$(OTELCOL_BIN)" $(GO) test -tags helm -count=1 -v ./deploy/helm/ ./deploy/operator/

## generate: regenerate the receiver's metric code and docs from kafkatimelagreceiver/metadata.yaml
generate: mdatagen
	cd kafkatimelagreceiver && ../$(MDATAGEN) metadata.yaml

# Fails when the generated code in the tree is not what mdatagen writes.
generate-check: mdatagen
	tools/check-generated.sh $(MDATAGEN)

# _build holds ocb's generated sources, which are not ours to format.
fmt-check:
	@unformatted="$$(find . -name '*.go' -not -path './$(BUILD_DIR)/*' -not -path './.git/*' -print0 | xargs -0 -r gofmt -l)"; \
	if [ -n "$$unformatted" ]; then echo "gofmt: these files need formatting (run gofmt -w):" >&2; echo "$$unformatted" >&2; exit 1; fi

# The receiver is a module of its own (kafkatimelagreceiver/go.mod); the root
# module holds the distribution's tests, the demo, the benchmarks and deploy.
RECEIVER_DIR := kafkatimelagreceiver

vet:
	$(GO) vet ./...
	cd $(RECEIVER_DIR) && $(GO) vet ./...
	$(GO) vet -tags e2e ./e2e/
	$(GO) vet -tags image ./deploy/container/
	$(GO) vet -tags helm ./deploy/helm/ ./deploy/operator/

# The replica test runs on its own with -v: go test shows a passing test's
# per-round coverage and duplicate counts only then.
unit:
	$(GO) test -race ./...
	cd $(RECEIVER_DIR) && $(GO) test -race -skip '^TestReplicasShareGroups$$' ./...
	cd $(RECEIVER_DIR) && $(GO) test -race -count=1 -v -run '^TestReplicasShareGroups$$' .

# The e2e tests run the collector, the demo cluster and a real Prometheus
# (PROMETHEUS_BIN, or prometheus on PATH).
e2e: build prometheus-tools
	OTELCOL_BIN="$(CURDIR)/$(OTELCOL_BIN)" $(GO) test -tags e2e -race -count=1 -v ./e2e/

## image: build the container image with podman (installed with apt-get when missing, as root) and check it
# podman needs no daemon; `podman run` does not work on these machines (crun
# cannot set rlimits without cgroup delegation), so the check exports the
# image's files and runs the binary from them (deploy/container/image_test.go).
image: build
	deploy/container/build.sh $(OTELCOL_BIN) $(IMAGE) $(IMAGE_TAR)
	IMAGE=$(IMAGE) $(GO) test -tags image -count=1 -v ./deploy/container/

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
		-prometheus "$$prom3" -prometheus-path otlp $(BENCH_PROMETHEUS_FLAGS)

## clean: remove build output
clean:
	rm -rf $(BUILD_DIR)
