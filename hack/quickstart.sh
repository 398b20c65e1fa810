#!/usr/bin/env bash
# Quickstart: turn examples/quickstart into a local bare "remote" plus a
# working clone, then run gitfleet serve against it (metrics on
# 127.0.0.1:8080; METRICS_ADDR overrides it).
#   hack/quickstart.sh BIN            serve the quickstart in $GITFLEET_QUICKSTART_DIR
#                                     (default $TMPDIR/gitfleet-quickstart), made anew
#   hack/quickstart.sh BIN --simulate preview the rollout in virtual time, in a
#                                     throwaway folder: it never touches a running quickstart
set -euo pipefail
bin=$(realpath "${1:?usage: quickstart.sh BIN [--simulate]}")
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
(
  cd "$dir/fleet"
  git checkout -q -b main 2>/dev/null || true
  git add .
  git -c user.name="${GIT_AUTHOR_NAME:-quickstart}" -c user.email="${GIT_AUTHOR_EMAIL:-quickstart@example.com}" \
    commit -q -m "Quickstart fleet: 3 members, example-placement, example-strategy, example-run"
  git push -q origin main
)

if [ "$mode" = "--simulate" ]; then
  "$bin" simulate --repo "$dir/fleet"
  exit
fi

cat <<MSG
Quickstart fleet repository
  remote:        $dir/fleet.git
  your clone:    $dir/fleet
gitfleet is rolling example-run out: member2 (staging), a 1m soak, then member3
and member1 (canary), then it waits for your approval.

Watch it:
  cd $dir/fleet && git pull -q && $bin get runs --repo .
  $bin describe run example-run --repo $dir/fleet
  curl -s ${METRICS_ADDR:-127.0.0.1:8080}/metrics | grep fleet_workload_update_run
Approve (the same change the pushed branch gitfleet/approve/example-run-after-canary holds):
  cd $dir/fleet && git pull -q && $bin approve example-run-after-canary --repo . --commit && git push -q
  # or: git merge origin/gitfleet/approve/example-run-after-canary && git push
Roll out a change: edit test-cm in workload.yaml, commit, push, and add a new run file.
Stop with Ctrl-C.

MSG
exec "$bin" serve --repo "file://$dir/fleet.git" --cache-dir "$dir/cache" --interval 5s --metrics-addr "${METRICS_ADDR:-127.0.0.1:8080}"
