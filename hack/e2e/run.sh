#!/usr/bin/env bash
# `make e2e`, `make e2e-up`, `make e2e-down`: ome-selector as users run it (the image, the chart, a pod) in a real
# single-node cluster on this machine. Needs Linux and root; see README "Run it in a real cluster on this machine".
#
#   hack/e2e/run.sh e2e    build or reuse everything, bring the cluster up, run hack/e2e/suite.sh, tear down;
#                          the last line is `e2e: N passed, M failed`
#   hack/e2e/run.sh up     the cluster with the operator installed, left running (kubeconfig: .e2e/kubeconfig)
#   hack/e2e/run.sh down   stop it and restore the host
set -euo pipefail
# shellcheck source=hack/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
E2E="$REPO/hack/e2e"
PYTHON=${PYTHON:-$REPO/.venv/bin/python}

# Build or reuse the binaries and images (each part timed); sets ARCHIVES (`<reference> <file>`, one each).
prepare() {
  local began
  require_host
  host_lock
  # Refused here, before a failed start's teardown could remove a cluster that `make e2e-up` left running.
  [[ ! -e $STATE/run ]] || die "a cluster is already up in $STATE (make e2e-down first)"
  began=$(date +%s.%N); ensure_packages "${E2E_PACKAGES[@]}" containernetworking-plugins iptables nftables; log "packages ready in $(since "$began")s"
  began=$(date +%s.%N); "$REPO/hack/ensure-binaries.sh" >/dev/null; log "control-plane binaries ready in $(since "$began")s"
  began=$(date +%s.%N); "$REPO/hack/ensure-binaries.sh" node >/dev/null; log "node binaries ready in $(since "$began")s"
  began=$(date +%s.%N); mapfile -t ARCHIVES < <("$E2E/images.sh"); log "images ready in $(since "$began")s"
  ((${#ARCHIVES[@]} == 2)) || die "building the images failed"
  [[ -x $PYTHON ]] || die "$PYTHON not found; run 'make venv'"
}

suite_env() {
  export KUBECONFIG="$STATE/kubeconfig" KUBECTL="$STATE/bin/kubectl" HELM="$STATE/bin/helm" PYTHON
  export IMAGE="${ARCHIVES[1]%% *}"
}

RESULTS=""

# Teardown whatever happened, counted as a check; then the summary, the very last line.
finish() {
  local rc=$? began
  trap - EXIT
  trap '' INT TERM
  ((rc != 130)) || echo "fail the run was interrupted" >>"$RESULTS"
  began=$(date +%s.%N)
  if "$E2E/cluster.sh" down; then
    echo "pass teardown restored the host" >>"$RESULTS"
  else
    echo "fail teardown restored the host" >>"$RESULTS"
  fi
  log "teardown in $(since "$began")s"
  summary "$RESULTS"
  if ((rc == 0)) && ! grep -q '^fail ' "$RESULTS"; then rm -f "$RESULTS"; exit 0; fi
  rm -f "$RESULTS"
  exit 1
}

e2e() {
  local began status=0
  prepare
  RESULTS=$(mktemp)
  trap finish EXIT
  trap 'exit 130' INT TERM  # an interrupted run tears down too
  if ! "$E2E/cluster.sh" up "${ARCHIVES[@]}"; then
    echo "fail the cluster came up" >>"$RESULTS"
    exit 1
  fi
  echo "pass the cluster came up" >>"$RESULTS"
  suite_env
  began=$(date +%s.%N)
  E2E_RESULTS="$RESULTS" "$E2E/suite.sh" run || status=$?
  log "suite ran in $(since "$began")s"
  return "$status"
}

up() {
  prepare
  "$E2E/cluster.sh" up "${ARCHIVES[@]}" || { "$E2E/cluster.sh" down || true; exit 1; }
  suite_env
  if ! "$E2E/suite.sh" install; then
    log "the operator did not install; the cluster stays up for a look (make e2e-down removes it)"
  fi
  cat <<EOF

The cluster is up, with ome-selector installed in namespace ome-selector. To use it:
  export KUBECONFIG=$STATE/kubeconfig PATH=$STATE/bin:\$PATH CONTAINER_RUNTIME_ENDPOINT=unix://$STATE/run/containerd.sock
  kubectl apply -f samples/ && kubectl get isvc -A -o wide
Remove it with: make e2e-down
EOF
}

case "${1:-}" in
  e2e) e2e ;;
  up) up ;;
  down) require_host; host_lock; "$E2E/cluster.sh" down ;;
  *) die "usage: $0 e2e|up|down" ;;
esac
