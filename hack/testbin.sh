#!/usr/bin/env bash
# testbin.sh builds the Kubernetes binaries that gitfleet's member-cluster
# tests start on 127.0.0.1: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl and kwok, all from the Go module proxy.
#
# They land in a cache outside the repository (GITFLEET_TESTBIN, default
# ~/.cache/gitfleet/testbin/<versions>); a rerun with every binary present
# takes well under a second. The last line printed is that directory:
#
#   export GITFLEET_TESTBIN="$(hack/testbin.sh | tail -1)"
#
# A cold build takes about 15 minutes on 2 cores, most of it kube-apiserver.
set -euo pipefail

KUBERNETES_VERSION=v1.37.0
STAGING_VERSION=v0.37.0
ETCD_VERSION=v3.6.16
KWOK_VERSION=v0.8.0

dir="${GITFLEET_TESTBIN:-${XDG_CACHE_HOME:-$HOME/.cache}/gitfleet/testbin/k8s-${KUBERNETES_VERSION}-etcd-${ETCD_VERSION}-kwok-${KWOK_VERSION}}"
bins=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok)

have_all() {
  local b
  for b in "${bins[@]}"; do [[ -x "$dir/$b" ]] || return 1; done
}

if have_all; then
  echo "$dir"
  exit 0
fi

mkdir -p "$dir"
src="$dir/.src"
mkdir -p "$src"
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOWORK=off
flags=(-trimpath -ldflags "-s -w")
log() { echo "testbin: $*" >&2; }

# Kubernetes: the k8s.io/kubernetes module requires every staging module at
# v0.0.0 and replaces it with ./staging/...; a module of our own replaces
# them with their published versions instead.
build_kubernetes() {
  local m="$src/kubernetes"
  mkdir -p "$m"
  local gomod
  gomod="$(cd "$m" && go mod download -json "k8s.io/kubernetes@${KUBERNETES_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
  {
    echo "module gitfleet.invalid/testbin/kubernetes"
    echo
    echo "go 1.26.0"
    echo
    echo "require k8s.io/kubernetes ${KUBERNETES_VERSION}"
    echo
    echo "replace ("
    grep -oE 'k8s.io/[a-z0-9-]+ v0\.0\.0$' "$gomod" | sort -u | while read -r mod _; do
      echo "	$mod => $mod ${STAGING_VERSION}"
    done
    echo ")"
  } >"$m/go.mod"
  log "building kube-apiserver, kube-controller-manager, kube-scheduler and kubectl ${KUBERNETES_VERSION} (slow when cold)"
  (cd "$m" && go build "${flags[@]}" -o "$dir/" \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler \
    k8s.io/kubernetes/cmd/kubectl)
}

# etcd's server module has no main package of its own; a one-line wrapper
# calls etcdmain as the etcd binary does.
build_etcd() {
  local m="$src/etcd"
  mkdir -p "$m"
  cat >"$m/go.mod" <<EOF
module gitfleet.invalid/testbin/etcd

go 1.26.0

require go.etcd.io/etcd/server/v3 ${ETCD_VERSION}
EOF
  cat >"$m/main.go" <<'EOF'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
EOF
  log "building etcd ${ETCD_VERSION}"
  (cd "$m" && go build "${flags[@]}" -o "$dir/etcd" .)
}

build_kwok() {
  log "building kwok ${KWOK_VERSION}"
  (cd "$src" && GOBIN="$dir" go install "${flags[@]}" "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}")
}

[[ -x "$dir/etcd" ]] || build_etcd
[[ -x "$dir/kwok" ]] || build_kwok
for b in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
  if [[ ! -x "$dir/$b" ]]; then build_kubernetes; break; fi
done

have_all || { log "missing binaries in $dir"; exit 1; }
echo "$dir"
