#!/usr/bin/env bash
# `make e2e-kind`: a throw-away kind cluster, the image built and loaded into it, the chart installed with its
# default values, the e2e scenario (harness/scenario.py, the same code the RBAC integration test
# runs), an upgrade that must keep the webhook CA, the documented uninstall, and the cluster deleted again.
#
# Needs a Docker engine and kind (e.g. `go install sigs.k8s.io/kind@v0.30.0`); helm and kubectl come from
# hack/ensure-binaries.sh. Not part of `make test`.
#
#   IMAGE=ome-selector:dev  KIND_CLUSTER=ome-selector-e2e  KIND_NODE_IMAGE=kindest/node:v1.36.x  KEEP_CLUSTER=1
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${IMAGE:-ome-selector:dev}
CLUSTER=${KIND_CLUSTER:-ome-selector-e2e}
KIND=${KIND:-kind}
PYTHON=${PYTHON:-.venv/bin/python}
RELEASE=ome-selector
NAMESPACE=ome-selector
SCENARIO_NAMESPACE=ome-selector-e2e

say() { printf '\n== e2e-kind: %s\n' "$*"; }
die() { printf 'e2e-kind: %s\n' "$*" >&2; exit 2; }

command -v docker >/dev/null || die "docker is required"
docker info >/dev/null 2>&1 || die "no Docker engine is reachable (docker info failed)"
command -v "$KIND" >/dev/null || die "kind is required (go install sigs.k8s.io/kind@latest, or set KIND=/path/to/kind)"
[ -x "$PYTHON" ] || die "$PYTHON not found; run 'make venv'"
bindir=$(hack/ensure-binaries.sh)
HELM="$bindir/helm"
KUBECTL="$bindir/kubectl"

workdir=$(mktemp -d)
export KUBECONFIG="$workdir/kubeconfig"
k() { "$KUBECTL" "$@"; }

diagnose() {
  say "diagnostics"
  k -n "$NAMESPACE" get all,secret,events -o wide || true
  k -n "$NAMESPACE" logs "deployment/$RELEASE" --tail=200 || true
  k get validatingwebhookconfiguration "$RELEASE" -o yaml || true
}
finish() {
  status=$?
  [ $status -eq 0 ] || diagnose
  if [ -z "${KEEP_CLUSTER:-}" ]; then
    say "deleting cluster $CLUSTER"
    "$KIND" delete cluster --name "$CLUSTER" || true
  else
    say "keeping cluster $CLUSTER (KUBECONFIG=$KUBECONFIG)"
  fi
  [ -n "${KEEP_CLUSTER:-}" ] || rm -rf "$workdir"
  exit $status
}
trap finish EXIT

say "creating kind cluster $CLUSTER"
"$KIND" create cluster --name "$CLUSTER" --kubeconfig "$KUBECONFIG" --wait 180s ${KIND_NODE_IMAGE:+--image "$KIND_NODE_IMAGE"}

say "building $IMAGE and loading it into the cluster"
docker build -t "$IMAGE" .
"$KIND" load docker-image "$IMAGE" --name "$CLUSTER"

install_args=(
  "$RELEASE" charts/ome-selector --namespace "$NAMESPACE"
  --set "image.repository=${IMAGE%:*}" --set "image.tag=${IMAGE##*:}" --set image.pullPolicy=Never
  --wait --timeout 300s
)
say "helm install"
"$HELM" install --create-namespace "${install_args[@]}"

wait_ca_bundle() {
  for _ in $(seq 90); do
    bundle=$(k get validatingwebhookconfiguration "$RELEASE" -o jsonpath='{.webhooks[0].clientConfig.caBundle}')
    [ -n "$bundle" ] && { echo "$bundle"; return 0; }
    sleep 2
  done
  die "the operator did not set the caBundle of ValidatingWebhookConfiguration $RELEASE"
}
ca_before=$(wait_ca_bundle)
stored=$(k -n "$NAMESPACE" get secret "$RELEASE-webhook-tls" -o jsonpath='{.data.ca\.crt}')
[ "$stored" = "$ca_before" ] || die "caBundle differs from the CA in Secret $RELEASE-webhook-tls"

say "e2e scenario"
"$PYTHON" -m harness.scenario --kubeconfig "$KUBECONFIG" --namespace "$SCENARIO_NAMESPACE" \
  --kubectl "$KUBECTL" --timeout 120

say "helm upgrade keeps the generated webhook CA"
"$HELM" upgrade "${install_args[@]}" --set webhook.strictSizes=true
k -n "$NAMESPACE" rollout status "deployment/$RELEASE" --timeout 180s
ca_after=$(wait_ca_bundle)
[ "$ca_after" = "$ca_before" ] || die "the webhook CA changed across helm upgrade"

say "uninstall as documented: stop, cleanup, helm uninstall (CRDs are kept)"
k -n "$NAMESPACE" scale "deployment/$RELEASE" --replicas=0
k -n "$NAMESPACE" wait --for=delete pod -l "app.kubernetes.io/instance=$RELEASE" --timeout 120s
"$PYTHON" -m ome_selector.cli.ome_selector --kubeconfig "$KUBECONFIG" cleanup
conditions=$(k -n "$SCENARIO_NAMESPACE" get isvc -o jsonpath='{.items[*].status.conditions[?(@.type=="RuntimeReady")].type}')
[ -z "$conditions" ] || die "RuntimeReady conditions left after cleanup: $conditions"
"$HELM" uninstall "$RELEASE" --namespace "$NAMESPACE" --wait
k get crd inferenceservices.ome.io >/dev/null || die "the CRDs were deleted by helm uninstall"
say "passed"
