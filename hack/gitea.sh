#!/usr/bin/env bash
# gitea.sh builds the Gitea server that gitfleet's forge tests start on
# 127.0.0.1 (internal/testing/giteatest), from the Go module proxy.
#
# The binary lands in a cache outside the repository (GITFLEET_GITEA_DIR,
# default ~/.cache/gitfleet/gitea/<version>); a rerun with the binary present
# takes well under a second. The last line printed is the binary's path:
#
#   export GITFLEET_GITEA="$(hack/gitea.sh | tail -1)"
#
# Gitea's go.mod has replace directives, so `go install gitea@version` is
# refused; the build runs in the module's own directory in the module cache
# instead (read-only there: -mod=readonly, nothing is written beside it).
# SQLite is compiled in by mattn/go-sqlite3 (cgo, gcc; no libsqlite3 needed).
# Without the bindata tag the server reads templates and assets from its
# source tree: tests point STATIC_ROOT_PATH at the directory printed by
#   go mod download -json code.gitea.io/gitea@<version>   (its "Dir").
# A cold build took 9m43s on 2 heavily loaded cores (about 5 minutes of CPU).
set -euo pipefail

GITEA_VERSION=v1.26.1

dir="${GITFLEET_GITEA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gitfleet/gitea/${GITEA_VERSION}}"
bin="$dir/gitea"
log() { echo "gitea: $*" >&2; }

if [[ -x "$bin" ]]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$dir"
export GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=1
src="$(go mod download -json "code.gitea.io/gitea@${GITEA_VERSION}" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
[[ -d "$src" ]] || { log "no source tree for code.gitea.io/gitea@${GITEA_VERSION}"; exit 1; }

log "building gitea ${GITEA_VERSION} with sqlite (slow when cold)"
# The SDK asks the server for its version; main.Version makes it a real one.
(cd "$src" && go build -trimpath -tags 'sqlite sqlite_unlock_notify' \
  -ldflags "-s -w -X main.Version=${GITEA_VERSION#v}" -o "$bin.tmp" .)
mv "$bin.tmp" "$bin"
echo "$bin"
