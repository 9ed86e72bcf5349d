#!/usr/bin/env bash
# Builds the guardd Debian package into dist/: a static binary, the hardened
# systemd unit, the default configuration, the guardd system user and its
# state directory (packaging/). nfpm runs as a pinned tool through `go run`,
# so it is not a dependency of the guardd module.
#
#   VERSION=1.2.3 GOARCH=arm64 scripts/deb.sh
set -euo pipefail
cd "$(dirname "$0")/.."
NFPM=github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.43.0   # later versions need modules the Go proxy does not serve
export GOARCH=${GOARCH:-$(go env GOARCH)}
export VERSION=${VERSION:-0.0.0+g$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
mkdir -p dist
BINARY=dist/guardd   # packaging/nfpm.yaml takes it from here
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$BINARY" ./cmd/guardd
go run "$NFPM" package --config packaging/nfpm.yaml --packager deb --target dist/
ls dist/*.deb
