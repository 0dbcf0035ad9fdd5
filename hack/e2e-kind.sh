#!/usr/bin/env bash
# `make e2e-kind`: a throw-away kind cluster, the image built and loaded into it, then the same end-to-end suite as
# `make e2e` (hack/e2e/suite.sh: helm install, the samples and their conditions, the shared scenario, kubectl
# output, an upgrade that must keep the webhook CA, the documented uninstall), and the cluster deleted again.
#
# Needs a Docker engine and kind (e.g. `go install sigs.k8s.io/kind@v0.30.0`); helm and kubectl come from
# hack/ensure-binaries.sh. Not part of `make test`. The last line is `e2e: N passed, M failed`.
#
#   IMAGE=ome-selector:dev  KIND_CLUSTER=ome-selector-e2e  KIND_NODE_IMAGE=kindest/node:v1.36.x  KEEP_CLUSTER=1
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/e2e/lib.sh
source hack/e2e/lib.sh

IMAGE=${IMAGE:-ome-selector:dev}
CLUSTER=${KIND_CLUSTER:-ome-selector-e2e}
KIND=${KIND:-kind}
PYTHON=$(realpath "${PYTHON:-.venv/bin/python}")

command -v docker >/dev/null || unsupported "docker is required"
docker info >/dev/null 2>&1 || unsupported "no Docker engine is reachable (docker info failed)"
command -v "$KIND" >/dev/null || unsupported "kind is required (go install sigs.k8s.io/kind@latest, or set KIND=/path/to/kind)"
[ -x "$PYTHON" ] || die "$PYTHON not found; run 'make venv'"
bindir=$(hack/ensure-binaries.sh)

workdir=$(mktemp -d)
results="$workdir/results"
touch "$results"
finish() {
  local status=$?
  trap - EXIT
  if [ -z "${KEEP_CLUSTER:-}" ]; then
    log "deleting cluster $CLUSTER"
    "$KIND" delete cluster --name "$CLUSTER" || true
  else
    log "keeping cluster $CLUSTER (KUBECONFIG=$workdir/kubeconfig)"
  fi
  summary "$results"
  [ -n "${KEEP_CLUSTER:-}" ] || rm -rf "$workdir"
  exit $status
}
trap finish EXIT

log "creating kind cluster $CLUSTER"
if ! "$KIND" create cluster --name "$CLUSTER" --kubeconfig "$workdir/kubeconfig" --wait 180s \
  ${KIND_NODE_IMAGE:+--image "$KIND_NODE_IMAGE"}; then
  echo "fail the cluster came up" >>"$results"
  exit 1
fi
echo "pass the cluster came up" >>"$results"

log "building $IMAGE and loading it into the cluster"
docker build -t "$IMAGE" .
"$KIND" load docker-image "$IMAGE" --name "$CLUSTER"

KUBECONFIG="$workdir/kubeconfig" IMAGE="$IMAGE" KUBECTL="$bindir/kubectl" HELM="$bindir/helm" PYTHON="$PYTHON" \
  E2E_RESULTS="$results" hack/e2e/suite.sh run
