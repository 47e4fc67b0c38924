# syntax=docker/dockerfile:1
# rankgate gateway image: a static binary on distroless, as a non-root user.
#
#   docker build -t rankgate .
#   docker run --rm -p 127.0.0.1:8080:8080 -v $PWD/my.yaml:/etc/rankgate/rankgate.yaml:ro \
#     -e RANKGATE_ADMIN_TOKEN=... rankgate
#
# The image's command is `serve -config /etc/rankgate/rankgate.yaml`; mount your config there
# (deploy/compose/ and deploy/helm/ do). Listening beyond loopback requires auth tokens.
# HEALTHCHECK runs the binary's own `healthcheck` subcommand (GET /healthz): the image has no shell
# and no curl. Kubernetes ignores HEALTHCHECK and uses the chart's probes instead.
# Built and run only where a container engine exists; CI (no engine) does not build it.

ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
# Modules first: this layer is cached until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w -X main.version=${VERSION}" -o /out/rankgate ./cmd/gateway

FROM gcr.io/distroless/static-debian12:nonroot
LABEL org.opencontainers.image.title="rankgate" \
      org.opencontainers.image.description="Cluster-aware ranking gateway in front of Redis Cluster" \
      org.opencontainers.image.source="https://github.com/rankgate/rankgate"
COPY --from=build /out/rankgate /rankgate
COPY rankgate.example.yaml /etc/rankgate/rankgate.example.yaml
# nonroot: uid/gid 65532 in distroless.
USER 65532:65532
ENV RANKGATE_LISTEN=0.0.0.0:8080 \
    RANKGATE_HEALTHCHECK_URL=http://127.0.0.1:8080/healthz
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["/rankgate", "healthcheck"]
ENTRYPOINT ["/rankgate"]
CMD ["serve", "-config", "/etc/rankgate/rankgate.yaml"]
