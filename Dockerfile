# The container image of the otelcol-kafkatimelag collector distribution,
# built from a plain checkout with any of
#
#   docker build -t otelcol-kafkatimelag .
#   podman build -t otelcol-kafkatimelag .
#   buildah build -t otelcol-kafkatimelag .
#
# (`make image` runs whichever is installed), or for both published
# platforms at once: docker buildx build --platform linux/amd64,linux/arm64 .
# The build stage runs ocb with the Go toolchain image on the build
# machine's platform and cross-compiles for the target's, so no emulation is
# needed; the image itself is FROM scratch: the static collector binary, the
# CA bundle (TLS to the brokers and to exporters) and the default
# configuration. It needs the golang image and the Go module proxy.
# deploy/container/dockerfile_test.go checks this file in `make test`.

# The Go release go.mod's toolchain line and the release workflow pin.
ARG GO_VERSION=1.26.8

FROM --platform=$BUILDPLATFORM docker.io/library/golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
# The modules first, in a layer of their own: a change to the sources reuses
# it, and only a change to a go.mod or go.sum downloads them again. ocb is
# built for the build machine here too (go tool would build it for the
# target).
COPY go.mod go.sum ./
COPY kafkatimelagreceiver/go.mod kafkatimelagreceiver/go.sum kafkatimelagreceiver/
RUN go mod download && (cd kafkatimelagreceiver && go mod download) && \
    go build -o /usr/local/bin/ocb go.opentelemetry.io/collector/cmd/builder
COPY . .
ARG TARGETOS
ARG TARGETARCH
# ocb compiles the distribution for the target; static (no cgo), since the
# image has no C library.
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH ocb --config builder-config.yaml

FROM scratch
# VERSION is builder-config.yaml's dist.version; the release workflow sets
# both to the release's, and REVISION to its commit.
ARG VERSION=0.1.0-dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="otelcol-kafkatimelag" \
      org.opencontainers.image.description="OpenTelemetry Collector with the Kafka consumer-group time lag receiver" \
      org.opencontainers.image.source="https://github.com/otelcol-kafkatimelag/otelcol-kafkatimelag" \
      org.opencontainers.image.url="https://github.com/otelcol-kafkatimelag/otelcol-kafkatimelag" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0"

COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /src/_build/otelcol-kafkatimelag /otelcol-kafkatimelag
# The default configuration; mount another file over it (Kubernetes: a
# ConfigMap at /etc/otelcol-kafkatimelag) or pass --config.
COPY deploy/container/config.yaml /etc/otelcol-kafkatimelag/config.yaml

# Not root: an unprivileged id with no entry in /etc/passwd (there is none).
USER 10001:10001

# 13133: health check (healthcheckv2, component status); 8889: the lag
# metrics for Prometheus; 8888: the collector's own metrics.
EXPOSE 13133 8889 8888

ENTRYPOINT ["/otelcol-kafkatimelag"]
CMD ["--config=/etc/otelcol-kafkatimelag/config.yaml"]
