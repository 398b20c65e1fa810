# syntax=docker/dockerfile:1
#
# gitfleet container image: a static Go binary on distroless, running as the
# nonroot user (65532). No shell, no package manager, no credentials inside:
# repository and webhook secrets are mounted at run time (see deploy/).
#
#   make image VERSION=v0.1.0
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=v0.1.0 -t ghcr.io/gitfleet/gitfleet:v0.1.0 .
#
# The build stage runs on the builder's own platform and cross-compiles
# (CGO_ENABLED=0, GOOS/GOARCH from TARGETOS/TARGETARCH), so multi-arch
# builds need no emulation.

FROM --platform=$BUILDPLATFORM golang:1.26-bookworm AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
WORKDIR /src

# Dependencies first: this layer is reused until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download && go mod verify

COPY . .
RUN --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} GOFLAGS=-mod=readonly \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
      -o /out/gitfleet ./cmd/gitfleet

# The final image has no shell to create directories with: prepare the
# default cache folder here (copied with nonroot ownership below).
RUN mkdir -p /out/cache/gitfleet

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
LABEL org.opencontainers.image.title="gitfleet" \
      org.opencontainers.image.description="GitOps daemon for staged rollouts across Kubernetes fleets: KubeFleet-compatible update runs driven from, and reported to, a Git repository" \
      org.opencontainers.image.source="https://github.com/gitfleet/gitfleet" \
      org.opencontainers.image.url="https://github.com/gitfleet/gitfleet" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}"

COPY --from=build /out/gitfleet /gitfleet
COPY --from=build --chown=65532:65532 /out/cache/ /var/cache/

# `serve` without --cache-dir caches the clone under the user cache
# directory ($XDG_CACHE_HOME), i.e. /var/cache/gitfleet/<repo>-<branch>.
# It must be writable: mount a volume there when the root filesystem is
# read-only (deploy/ mounts an emptyDir and passes --cache-dir).
ENV XDG_CACHE_HOME=/var/cache

USER 65532:65532
WORKDIR /home/nonroot

# 8080: /metrics, /healthz, /readyz (--metrics-addr); 9090: /webhook (--webhook-addr).
EXPOSE 8080 9090

ENTRYPOINT ["/gitfleet"]
CMD ["serve", "--help"]
