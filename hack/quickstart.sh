#!/usr/bin/env bash
# Quickstart: turn examples/quickstart into a local bare "remote" plus a
# working clone, then run gitfleet serve against it, listening on loopback
# only (metrics on 127.0.0.1:8080, METRICS_ADDR overrides it; no webhook).
# STATUS_BRANCH=B writes status/ to branch B instead of main (serve
# --status-branch), so main carries only people's commits and approvals.
#   hack/quickstart.sh BIN            serve the quickstart in $GITFLEET_QUICKSTART_DIR
#                                     (default $TMPDIR/gitfleet-quickstart), made anew
#   hack/quickstart.sh BIN --simulate preview the rollout in virtual time, in a
#                                     throwaway folder: it never touches a running quickstart
#   hack/quickstart.sh BIN --clusters serve it to three real local member clusters
#                                     (etcd + kube-apiserver each, hack/clusters.sh),
#                                     stopped again when serve ends
#   hack/quickstart.sh BIN --clusters-pull
#                                     the same members pulling: a fourth API server
#                                     is the hub (serve --hub kube), and each member
#                                     runs gitfleet agent, which applies its Works
set -euo pipefail
bin=$(realpath "${1:?usage: quickstart.sh BIN [--simulate|--clusters|--clusters-pull]}")
mode=${2:-serve}
root=$(cd "$(dirname "$0")/.." && pwd)
if [ "$mode" = "--simulate" ]; then
  # A preview writes nothing anywhere else, and deletes only its own folder.
  dir=$(mktemp -d "${TMPDIR:-/tmp}/gitfleet-simulate.XXXXXX")
  trap 'rm -rf "$dir"' EXIT
else
  dir=${GITFLEET_QUICKSTART_DIR:-${TMPDIR:-/tmp}/gitfleet-quickstart}
  rm -rf "$dir"
  mkdir -p "$dir"
fi
git init -q --bare -b main "$dir/fleet.git"
git clone -q "$dir/fleet.git" "$dir/fleet" 2>/dev/null
cp "$root"/examples/quickstart/*.yaml "$dir/fleet/"
if [ "$mode" = "--clusters" ]; then
  echo "starting member1, member2 and member3 (the first time builds them: make testbin, ~30 min)..." >&2
  # Set first: a Ctrl-C while they start stops those already started.
  trap '"$root/hack/clusters.sh" --stop "$dir/clusters"' EXIT
  kubeconfig=$("$root/hack/clusters.sh" "$dir/clusters" member1 member2 member3 | tail -1)
  kubectl=$("$root/hack/testbin.sh" | tail -1)/kubectl
  # Each member is reached through the kubeconfig context of its name.
  for m in member1 member2 member3; do
    sed -i "/name: $m\$/,/^---/ s|gitfleet.io/driver: simulated|gitfleet.io/driver: kubeconfig:$m|" "$dir/fleet/members.yaml"
  done
  sed -i '/gitfleet.io\/sim-available-after/d' "$dir/fleet/members.yaml"
fi
if [ "$mode" = "--clusters-pull" ]; then
  echo "starting the hub and member1, member2 and member3 (the first time builds them: make testbin, ~30 min)..." >&2
  agents=()
  # Set first, as above. The agents may be gone already (Ctrl-C reaches
  # them too): under set -e a failing kill would end the trap before the
  # clusters stop.
  trap 'kill "${agents[@]}" 2>/dev/null || true; "$root/hack/clusters.sh" --stop "$dir/clusters"' EXIT
  kubeconfig=$("$root/hack/clusters.sh" "$dir/clusters" hub member1 member2 member3 | tail -1)
  kubectl=$("$root/hack/testbin.sh" | tail -1)/kubectl
  "$kubectl" --kubeconfig "$kubeconfig" --context hub apply --server-side -f "$root/config/crd/" >/dev/null
  # Each member pulls: the hub writes its Works, its agent applies them.
  sed -i "s|gitfleet.io/driver: simulated|gitfleet.io/driver: work|" "$dir/fleet/members.yaml"
  sed -i '/gitfleet.io\/sim-available-after/d' "$dir/fleet/members.yaml"
  # The run comes once the agents joined (below): a member is not picked
  # before its agent joins, as with KubeFleet, and a run initialized
  # before finds no member and fails for good.
  mv "$dir/fleet/run.yaml" "$dir/run.yaml"
fi
(
  cd "$dir/fleet"
  git checkout -q -b main 2>/dev/null || true
  git add .
  git -c user.name="${GIT_AUTHOR_NAME:-quickstart}" -c user.email="${GIT_AUTHOR_EMAIL:-quickstart@example.com}" \
    commit -q -m "Quickstart fleet: 3 members, example-placement, example-strategy$([ -f run.yaml ] && echo ", example-run")"
  git push -q origin main
)

if [ "$mode" = "--simulate" ]; then
  "$bin" simulate --repo "$dir/fleet"
  exit
fi

status_args=()
where="Status commits go to main here; on a shared repository keep them off it:
STATUS_BRANCH=gitfleet-status make run (serve --status-branch gitfleet-status)."
watch="cd $dir/fleet && git pull -q && $bin get runs --repo ."
describe="$bin describe run example-run --repo $dir/fleet"
if [ -n "${STATUS_BRANCH:-}" ]; then
  status_args=(--status-branch "$STATUS_BRANCH")
  # status/ lives on its own branch: read it from a second worktree.
  watch="cd $dir/fleet && git fetch -q && (test -d ../status || git worktree add -q ../status origin/$STATUS_BRANCH) && git -C ../status checkout -q --detach origin/$STATUS_BRANCH && $bin get runs --repo ../status"
  describe="$bin describe run example-run --repo $dir/status"
  where="Status commits go to branch $STATUS_BRANCH; main keeps your commits and the approval requests."
fi

cat <<MSG
Quickstart fleet repository
  remote:        $dir/fleet.git
  your clone:    $dir/fleet
gitfleet is rolling example-run out: member2 (staging), a 1m soak, then member3
and member1 (canary), then it waits for your approval.

Watch it:
  $watch
  $describe
  curl -s ${METRICS_ADDR:-127.0.0.1:8080}/metrics | grep fleet_workload_update_run
Approve (the same change the pushed branch gitfleet/approve/example-run-after-canary holds):
  cd $dir/fleet && git pull -q && $bin approve example-run-after-canary --repo . --commit && git push -q
  # or merge the branch; --no-ff makes the merge commit yours, so gitfleet names you as the approver:
  #   git fetch -q origin && git merge --no-ff origin/gitfleet/approve/example-run-after-canary && git push
Roll out a change: edit test-cm in workload.yaml, commit, push, and add a new run file.
$where
Stop with Ctrl-C.

MSG
if [ "$mode" = "--clusters" ]; then
  cat <<MSG
The members are real API servers (kubeconfig: $kubeconfig). Watch test-cm appear
on member2 first, then on member3 and member1:
  $kubectl --kubeconfig $kubeconfig --context member2 get cm -n test-namespace
  $kubectl --kubeconfig $kubeconfig --context member1 get cm test-cm -n test-namespace -o jsonpath='{.data.key}'

MSG
  "$bin" serve --repo "file://$dir/fleet.git" --cache-dir "$dir/cache" --interval 5s \
    --metrics-addr "${METRICS_ADDR:-127.0.0.1:8080}" --kubeconfig "$kubeconfig" "${status_args[@]}"
  exit
fi
if [ "$mode" = "--clusters-pull" ]; then
  cat <<MSG
The hub and the members are real API servers (kubeconfig: $kubeconfig); gitfleet
holds no member credentials: each member's agent (logs in $dir/agent-<member>.log)
pulls its Works from the hub as its MemberCluster's spec.identity
($dir/hub-<member>.kubeconfig), which the hub grants only its namespace
fleet-member-<member>. Once the three agents joined, the quickstart commits
example-run (a run committed before its members joined would pick none of
them and fail, as on KubeFleet). Watch test-cm appear on member2 first:
  $kubectl --kubeconfig $kubeconfig --context member2 get cm -n test-namespace
  $kubectl --kubeconfig $kubeconfig --context hub get works -A
  $kubectl --kubeconfig $kubeconfig --context hub get memberclusters

MSG
  # Each agent reaches the hub as its MemberCluster's spec.identity
  # (members.yaml: fleet-system/fleet-member-agent-<member>), which serve
  # grants only the member's namespace; each starts once it does (before,
  # it would wait too, its log full of Forbidden).
  hub_server=$("$kubectl" --kubeconfig "$kubeconfig" config view -o jsonpath='{.clusters[?(@.name=="hub")].cluster.server}')
  "$kubectl" --kubeconfig "$kubeconfig" --context hub create namespace fleet-system >/dev/null
  for m in member1 member2 member3; do
    "$kubectl" --kubeconfig "$kubeconfig" --context hub -n fleet-system create serviceaccount "fleet-member-agent-$m" >/dev/null
    token=$("$kubectl" --kubeconfig "$kubeconfig" --context hub -n fleet-system create token "fleet-member-agent-$m" --duration 24h)
    cat >"$dir/hub-$m.kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: hub
  cluster:
    server: $hub_server
    insecure-skip-tls-verify: true
users:
- name: fleet-member-agent-$m
  user:
    token: $token
contexts:
- name: hub
  context:
    cluster: hub
    user: fleet-member-agent-$m
current-context: hub
KUBECONFIG
    chmod 600 "$dir/hub-$m.kubeconfig"
    (
      until "$kubectl" --kubeconfig "$kubeconfig" --context hub -n "fleet-member-$m" get rolebinding "fleet-rolebinding-$m" >/dev/null 2>&1; do
        sleep 1
      done
      exec "$bin" agent --hub-kubeconfig "$dir/hub-$m.kubeconfig" --member-name "$m" \
        --kubeconfig "$kubeconfig" --context "$m"
    ) >"$dir/agent-$m.log" 2>&1 &
    agents+=($!)
  done
  (
    for m in member1 member2 member3; do
      until "$kubectl" --kubeconfig "$kubeconfig" --context hub wait --for=condition=Joined --timeout 1h "membercluster/$m" >/dev/null 2>&1; do
        sleep 1
      done
    done
    cd "$dir/fleet"
    mv "$dir/run.yaml" run.yaml
    git add run.yaml
    git -c user.name="${GIT_AUTHOR_NAME:-quickstart}" -c user.email="${GIT_AUTHOR_EMAIL:-quickstart@example.com}" \
      commit -q -m "example-run, once member1, member2 and member3 joined"
    # serve pushes status commits to main meanwhile.
    until git pull -q --rebase origin main && git push -q origin main; do
      sleep 1
    done
    echo "all three agents joined: pushed example-run" >&2
  ) >"$dir/run-commit.log" 2>&1 &
  agents+=($!)
  "$bin" serve --repo "file://$dir/fleet.git" --cache-dir "$dir/cache" --interval 5s \
    --metrics-addr "${METRICS_ADDR:-127.0.0.1:8080}" --hub kube --hub-kubeconfig "$kubeconfig" --hub-context hub "${status_args[@]}"
  exit
fi
exec "$bin" serve --repo "file://$dir/fleet.git" --cache-dir "$dir/cache" --interval 5s \
  --metrics-addr "${METRICS_ADDR:-127.0.0.1:8080}" "${status_args[@]}"
