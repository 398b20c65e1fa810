#!/usr/bin/env bash
# clusters.sh starts local member clusters for the real-cluster quickstart:
# per name, etcd + kube-apiserver on 127.0.0.1 from the binaries of
# hack/testbin.sh, and writes a kubeconfig with one context per name.
#   hack/clusters.sh DIR NAME...   starts them in the background (their
#                                  PIDs in DIR/pids, logs in DIR/<name>/)
#                                  and prints the kubeconfig's path
#   hack/clusters.sh --stop DIR    kills them
set -euo pipefail
if [ "${1:-}" = "--stop" ]; then
  dir=${2:?usage: clusters.sh --stop DIR}
  [ -f "$dir/pids" ] && while read -r pid; do kill -9 -- "-$pid" 2>/dev/null || true; done <"$dir/pids"
  rm -f "$dir/pids"
  exit 0
fi
dir=${1:?usage: clusters.sh DIR NAME...}
shift
bin=$("$(dirname "$0")/testbin.sh" | tail -1)
mkdir -p "$dir"
: >"$dir/pids"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
kubeconfig="$dir/kubeconfig"
{
  echo "apiVersion: v1"
  echo "kind: Config"
  echo "clusters:"
} >"$kubeconfig.clusters"
: >"$kubeconfig.users"
: >"$kubeconfig.contexts"
for name in "$@"; do
  d="$dir/$name"
  rm -rf "$d"
  mkdir -p "$d"
  token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
  echo "$token,admin,admin,\"system:masters\"" >"$d/tokens.csv"
  openssl genrsa -out "$d/sa.key" 2048 2>/dev/null
  openssl rsa -in "$d/sa.key" -pubout -out "$d/sa.pub" 2>/dev/null
  etcd_port=$(port) peer_port=$(port) api_port=$(port)
  setsid "$bin/etcd" --name default --data-dir "$d/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "default=http://127.0.0.1:$peer_port" --unsafe-no-fsync --log-level warn >"$d/etcd.log" 2>&1 &
  echo $! >>"$dir/pids"
  setsid "$bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" --bind-address 127.0.0.1 \
    --secure-port "$api_port" --cert-dir "$d/certs" --token-auth-file "$d/tokens.csv" --authorization-mode RBAC \
    --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$d/sa.pub" \
    --service-account-signing-key-file "$d/sa.key" --service-cluster-ip-range 10.0.0.0/24 \
    --endpoint-reconciler-type none --disable-admission-plugins ServiceAccount >"$d/kube-apiserver.log" 2>&1 &
  echo $! >>"$dir/pids"
  printf -- "- name: %s\n  cluster:\n    server: https://127.0.0.1:%s\n    insecure-skip-tls-verify: true\n" "$name" "$api_port" >>"$kubeconfig.clusters"
  printf -- "- name: %s\n  user:\n    token: %s\n" "$name" "$token" >>"$kubeconfig.users"
  printf -- "- name: %s\n  context:\n    cluster: %s\n    user: %s\n" "$name" "$name" "$name" >>"$kubeconfig.contexts"
done
{
  cat "$kubeconfig.clusters"
  echo "users:"
  cat "$kubeconfig.users"
  echo "contexts:"
  cat "$kubeconfig.contexts"
  echo "current-context: $1"
} >"$kubeconfig"
chmod 600 "$kubeconfig"
rm -f "$kubeconfig".clusters "$kubeconfig".users "$kubeconfig".contexts
for name in "$@"; do
  for _ in $(seq 1 300); do
    "$bin/kubectl" --kubeconfig "$kubeconfig" --context "$name" get --raw /readyz >/dev/null 2>&1 && break
    sleep 0.2
  done
  "$bin/kubectl" --kubeconfig "$kubeconfig" --context "$name" get --raw /readyz >/dev/null ||
    { echo "clusters: $name did not become ready; see $dir/$name/kube-apiserver.log" >&2; exit 1; }
done
echo "$kubeconfig"
