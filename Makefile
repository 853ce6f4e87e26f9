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
# First broker port of the demo cluster; must match otelcol-config.yaml.
DEMO_PORT   := 9092

.PHONY: all help build run test fmt-check vet generate generate-check mdatagen unit e2e image bench clean

all: build

## help: list the main targets
help:
	@sed -n 's/^## /  /p' $(firstword $(MAKEFILE_LIST))

## build: build the collector distribution with ocb into _build/otelcol-kafkatimelag
# Static (no cgo), so that the same binary runs in the container image.
build:
	CGO_ENABLED=0 $(GO) tool builder --config builder-config.yaml

## run: build, start the demo Kafka cluster, run the collector against it
# The demo is built and started as a binary rather than with `go run`: `go run`
# does not pass SIGTERM on to its child, so stopping it would orphan the
# cluster and keep ports 9092-9094 busy.
run: build
	$(GO) build -o $(DEMO_BIN) ./cmd/kafkademo
	@demo_pid=""; col_pid=""; \
	cleanup() { \
		trap - EXIT INT TERM; \
		for p in $$col_pid $$demo_pid; do kill -TERM "$$p" 2>/dev/null || true; done; \
		for p in $$col_pid $$demo_pid; do wait "$$p" 2>/dev/null || true; done; \
	}; \
	trap cleanup EXIT; trap 'exit 130' INT; trap 'exit 143' TERM; \
	$(DEMO_BIN) & demo_pid=$$!; \
	up=""; \
	for i in $$(seq 1 150); do \
		if (exec 3<>/dev/tcp/127.0.0.1/$(DEMO_PORT)) 2>/dev/null; then up=1; break; fi; \
		if ! kill -0 "$$demo_pid" 2>/dev/null; then echo "make run: kafkademo exited" >&2; exit 1; fi; \
		sleep 0.2; \
	done; \
	if [ -z "$$up" ]; then echo "make run: kafkademo is not listening on 127.0.0.1:$(DEMO_PORT) after 30s" >&2; exit 1; fi; \
	echo "make run: demo cluster up on 127.0.0.1:9092-9094; starting the collector (Ctrl-C stops both)" >&2; \
	echo "make run: Prometheus metrics at http://127.0.0.1:8889/metrics, health at http://127.0.0.1:13133/" >&2; \
	$(OTELCOL_BIN) --config otelcol-config.yaml & col_pid=$$!; \
	wait "$$col_pid"

## test: everything CI runs
test: fmt-check vet generate-check unit build e2e

mdatagen:
	cd tools && $(GO) build -o ../$(MDATAGEN) go.opentelemetry.io/collector/cmd/mdatagen

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

vet:
	$(GO) vet ./...
	$(GO) vet -tags e2e ./e2e/
	$(GO) vet -tags image ./deploy/container/

# The replica test runs on its own with -v: go test shows a passing test's
# per-round coverage and duplicate counts only then.
unit:
	$(GO) test -race -skip '^TestReplicasShareGroups$$' ./...
	$(GO) test -race -count=1 -v -run '^TestReplicasShareGroups$$' ./kafkatimelagreceiver/

e2e: build
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
	$(GO) test -run '^$$' -bench . -benchmem -benchtime=$(or $(BENCHTIME),3s) -timeout 60m ./kafkatimelagreceiver/...
	$(GO) build -o $(BUILD_DIR)/scalebench ./cmd/scalebench
	$(BUILD_DIR)/scalebench -collector $(OTELCOL_BIN) $(SCALEBENCH_FLAGS)
	$(BUILD_DIR)/scalebench -collector $(OTELCOL_BIN) -extra-config testdata/otlp-http-large-cluster.yaml $(SCALEBENCH_FLAGS)

## clean: remove build output
clean:
	rm -rf $(BUILD_DIR)
