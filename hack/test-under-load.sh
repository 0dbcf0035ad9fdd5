#!/usr/bin/env bash
# hack/test-under-load.sh N: `make test` N times, each in a fresh clone of this checkout's HEAD and under CI=true
# (a skip fails there), while two busy processes keep both cores of the build machine saturated. Prints each run's
# result and duration and every test that failed at least once; exits 0 only when all N runs passed.
#
# A fresh clone builds its own .venv (`make venv`, from pip's cache) and reuses the control-plane binaries and
# Prometheus cached under ~/.cache/ome-selector, so no run is cold. The busy processes are this script's own: they
# are stopped when a run ends and when the script exits for any reason, and each also ends by itself after
# UNDER_LOAD_BUSY_SECONDS (default 1800) even if the script is killed outright. The logs stay in the directory
# printed at the end; the clones are removed.
#
# Knobs (for the script's own tests): UNDER_LOAD_SOURCE (the repository to clone, default this one),
# UNDER_LOAD_BUSY (busy processes, default 2), UNDER_LOAD_BUSY_SECONDS, MAKE (default make).
set -euo pipefail

if [[ $# -ne 1 || ! $1 =~ ^[1-9][0-9]{0,2}$ ]]; then
  echo "usage: hack/test-under-load.sh N   (N: how many runs of make test, 1 to 999)" >&2
  exit 2
fi
runs=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source_repo=${UNDER_LOAD_SOURCE:-$here}
busy_count=${UNDER_LOAD_BUSY:-2}
busy_seconds=${UNDER_LOAD_BUSY_SECONDS:-1800}
make_command=${MAKE:-make}
python=python3
[[ -x "$here/.venv/bin/python" ]] && python="$here/.venv/bin/python"
commit=$(git -C "$source_repo" rev-parse HEAD)

work=$(mktemp -d "${TMPDIR:-/tmp}/test-under-load.XXXXXX")
results="$work/results"
mkdir "$results"
# Each run's bytecode in a cache of its own, emptied with its clone: every run starts as a fresh clone does.
export PYTHONPYCACHEPREFIX="$work/pycache"
busy_pids=()
# Job control: each stage below runs as a job of its own process group with SIGINT at its default, as in a
# terminal (without it a background job ignores SIGINT, and so would every test's child process), and a signal
# to this script stops the whole stage at once instead of waiting for it to end.
set -m
stage=""

stop_busy() {
  local pid
  for pid in "${busy_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${busy_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  busy_pids=()
}

finish() {
  if [[ -n $stage ]]; then
    kill -TERM -- "-$stage" 2>/dev/null || true
    wait "$stage" 2>/dev/null || true
  fi
  stop_busy
  rm -rf "$work/clone" "$PYTHONPYCACHEPREFIX"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

# Runs "$@" as a job (see set -m above) and waits for it: a trapped signal ends the wait at once.
run_stage() {
  "$@" &
  stage=$!
  local status=0
  wait "$stage" || status=$?
  stage=""
  return "$status"
}

# One busy process: a shell loop that spins until its own deadline (a subshell: the traps above are not its).
busy() {
  local end=$((SECONDS + busy_seconds))
  while ((SECONDS < end)); do :; done
}

start_busy() {
  local index
  set +m # not jobs: in this script's process group, and no job notices when they are stopped
  for ((index = 0; index < busy_count; index++)); do
    busy &
    busy_pids+=("$!")
    echo "$!" >>"$results/busy.pids"
  done
  set -m
}

setup_clone() {
  git clone --quiet --no-checkout "$source_repo" "$1" &&
    git -C "$1" checkout --quiet --detach "$commit" &&
    cd "$1" && "$make_command" venv
}

run_tests() { cd "$1" && CI=true "$make_command" test; }

report() { (cd "$here" && PYTHONDONTWRITEBYTECODE=1 "$python" -m harness.under_load "$results" --runs "$runs" "$@"); }

echo "test-under-load: $runs run(s) of make test at ${commit:0:12}, $busy_count busy processes; logs in $results"
for ((run = 1; run <= runs; run++)); do
  clone="$work/clone"
  log="$results/run-$run.log"
  start_busy
  started=$SECONDS
  status=0
  run_stage setup_clone "$clone" >"$log" 2>&1 </dev/null || status=$?
  setup=$((SECONDS - started))
  started=$SECONDS
  if ((status == 0)); then
    run_stage run_tests "$clone" >>"$log" 2>&1 </dev/null || status=$?
  fi
  echo "$status $((SECONDS - started)) $setup" >"$results/run-$run.status"
  stop_busy
  rm -rf "$clone" "$PYTHONPYCACHEPREFIX"
  report --run "$run"
done
echo
report
