#!/usr/bin/env bash
# Provides pinned control-plane test binaries (kube-apiserver, kubectl, etcd, helm) and prints
# the directory holding them on stdout. Progress goes to stderr.
#
# `hack/ensure-binaries.sh node` provides what `make e2e` builds its kind node image from instead (kubelet,
# kubeadm, kube-controller-manager, kube-scheduler, kube-proxy from the same Kubernetes version, crictl, the
# CoreDNS that kubeadm deploys) and kind itself, always cached or built from Go modules the same way.
#
# Sources, first that works wins:
#   1. $KUBEBUILDER_ASSETS (must hold kube-apiserver, etcd and kubectl; helm is optional there)
#   2. a cache under ${XDG_CACHE_HOME:-~/.cache}/ome-selector keyed by every version
#   3. the official envtest archive (kube-apiserver, etcd, kubectl), failing fast when offline
#   4. a build from Go modules through a throw-away wrapper module (nothing lands in the repo)
# helm is never in the envtest archive, so it is always cached or built with `go install`.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-1.36.3}"
ETCD_VERSION="${ETCD_VERSION:-3.6.16}"
HELM_VERSION="${HELM_VERSION:-3.22.0}"
CRICTL_VERSION="${CRICTL_VERSION:-1.34.0}"
# The CoreDNS version `kubeadm config images list` names for $K8S_VERSION.
COREDNS_VERSION="${COREDNS_VERSION:-1.14.2}"
KIND_VERSION="${KIND_VERSION:-0.33.0}"
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/ome-selector"
BIN_DIR="$CACHE_ROOT/k8s-v$K8S_VERSION-etcd-v$ETCD_VERSION-helm-v$HELM_VERSION"
NODE_DIR="$CACHE_ROOT/node-k8s-v$K8S_VERSION-crictl-v$CRICTL_VERSION-coredns-v$COREDNS_VERSION-kind-v$KIND_VERSION"
NODE_BINARIES=(kubelet kubeadm kube-controller-manager kube-scheduler kube-proxy)
ENVTEST_URL="https://github.com/kubernetes-sigs/controller-tools/releases/download/envtest-v$K8S_VERSION/envtest-v$K8S_VERSION-$(go env GOOS 2>/dev/null || echo linux)-$(go env GOARCH 2>/dev/null || echo amd64).tar.gz"

log() { printf 'ensure-binaries: %s\n' "$*" >&2; }
have_all() { local dir="$1"; shift; for b in "$@"; do [[ -x "$dir/$b" ]] || return 1; done; }

case "${1:-}" in
  "") mode=control-plane ;;
  node) mode=node ;;
  *) log "usage: $0 [node]"; exit 2 ;;
esac

if [[ $mode == node ]] && have_all "$NODE_DIR" "${NODE_BINARIES[@]}" crictl coredns kind; then
  echo "$NODE_DIR"; exit 0
fi

if [[ $mode == control-plane && -n "${KUBEBUILDER_ASSETS:-}" ]] && have_all "$KUBEBUILDER_ASSETS" kube-apiserver etcd kubectl; then
  if [[ -x "$KUBEBUILDER_ASSETS/helm" ]]; then
    echo "$KUBEBUILDER_ASSETS"; exit 0
  fi
  # Reuse the assets and only add helm beside them in our cache.
  mkdir -p "$BIN_DIR"
  for b in kube-apiserver etcd kubectl; do ln -sf "$KUBEBUILDER_ASSETS/$b" "$BIN_DIR/$b"; done
fi

if [[ $mode == control-plane ]] && have_all "$BIN_DIR" kube-apiserver etcd kubectl helm; then
  echo "$BIN_DIR"; exit 0
fi

started=$(date +%s)

if [[ $mode == control-plane ]] && ! have_all "$BIN_DIR" kube-apiserver etcd kubectl; then
  mkdir -p "$BIN_DIR"
  tmp=$(mktemp -d)
  if curl -fsSL --connect-timeout 5 --max-time 300 -o "$tmp/envtest.tgz" "$ENVTEST_URL" 2>/dev/null \
     && tar -xzf "$tmp/envtest.tgz" -C "$tmp"; then
    found=$(dirname "$(find "$tmp" -name kube-apiserver -type f | head -n1)")
    for b in kube-apiserver etcd kubectl; do install -m 0755 "$found/$b" "$BIN_DIR/$b"; done
    log "installed the envtest archive for v$K8S_VERSION"
  else
    log "envtest archive unreachable; building from Go modules (about 6 minutes on 2 cores, then cached)"
  fi
  rm -rf "$tmp"
fi

command -v go >/dev/null || { log "go is required to build the binaries and was not found"; exit 1; }
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

# build_kubernetes DIR COMMAND...: the Kubernetes commands, built into DIR.
build_kubernetes() {
  local into="$1"; shift
  local minor="${K8S_VERSION#1.}"; minor="${minor%%.*}"
  local staging="0.${K8S_VERSION#1.}"
  mkdir -p "$work/k8s" && cd "$work/k8s"
  go mod init local.invalid/k8sbin >/dev/null 2>&1
  local gomod
  gomod=$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
  # Every staging module k8s.io/kubernetes requires at v0.0.0 is replaced by its published tag.
  sed -n 's/^\t\(k8s\.io\/[a-z0-9-]*\) v0\.0\.0\( \/\/ indirect\)\{0,1\}$/\1/p' "$gomod" | while read -r m; do
    go mod edit -replace="$m=$m@v$staging"
  done
  go get "k8s.io/kubernetes@v$K8S_VERSION" >&2
  local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=v$K8S_VERSION
    -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor
    -X k8s.io/component-base/version.gitTreeState=clean
    -X k8s.io/client-go/pkg/version.gitVersion=v$K8S_VERSION
    -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
  for cmd in "$@"; do
    log "building $cmd v$K8S_VERSION"
    go build -trimpath -ldflags "$ldflags" -o "$into/$cmd" "k8s.io/kubernetes/cmd/$cmd" >&2
  done
}

build_etcd() {
  mkdir -p "$work/etcd" && cd "$work/etcd"
  go mod init local.invalid/etcdbin >/dev/null 2>&1
  go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" >&2
  log "building etcd v$ETCD_VERSION"
  go build -trimpath -ldflags "-s -w" -o "$BIN_DIR/etcd" go.etcd.io/etcd/server/v3 >&2
}

build_helm() {
  log "building helm v$HELM_VERSION"
  GOBIN="$work/helm-bin" go install -trimpath \
    -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=v$HELM_VERSION" \
    "helm.sh/helm/v3/cmd/helm@v$HELM_VERSION" >&2
  install -m 0755 "$work/helm-bin/helm" "$BIN_DIR/helm"
}

build_crictl() {
  log "building crictl v$CRICTL_VERSION"
  GOBIN="$work/crictl-bin" go install -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=v$CRICTL_VERSION" \
    "sigs.k8s.io/cri-tools/cmd/crictl@v$CRICTL_VERSION" >&2
  install -m 0755 "$work/crictl-bin/crictl" "$NODE_DIR/crictl"
}

build_coredns() {
  log "building coredns v$COREDNS_VERSION"
  GOBIN="$work/coredns-bin" go install -trimpath -ldflags "-s -w" "github.com/coredns/coredns@v$COREDNS_VERSION" >&2
  install -m 0755 "$work/coredns-bin/coredns" "$NODE_DIR/coredns"
}

build_kind() {
  log "building kind v$KIND_VERSION"
  GOBIN="$work/kind-bin" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kind@v$KIND_VERSION" >&2
  install -m 0755 "$work/kind-bin/kind" "$NODE_DIR/kind"
}

if [[ $mode == node ]]; then
  mkdir -p "$NODE_DIR"
  [[ -x "$NODE_DIR/kind" ]] || build_kind
  have_all "$NODE_DIR" "${NODE_BINARIES[@]}" || build_kubernetes "$NODE_DIR" "${NODE_BINARIES[@]}"
  [[ -x "$NODE_DIR/crictl" ]] || build_crictl
  [[ -x "$NODE_DIR/coredns" ]] || build_coredns
  "$NODE_DIR/kubelet" --version >&2
  log "ready in $NODE_DIR after $(( $(date +%s) - started ))s"
  echo "$NODE_DIR"
  exit 0
fi

[[ -x "$BIN_DIR/etcd" ]] || build_etcd
[[ -x "$BIN_DIR/kube-apiserver" && -x "$BIN_DIR/kubectl" ]] || build_kubernetes "$BIN_DIR" kube-apiserver kubectl
[[ -x "$BIN_DIR/helm" ]] || build_helm

"$BIN_DIR/kube-apiserver" --version >&2
log "ready in $BIN_DIR after $(( $(date +%s) - started ))s"
echo "$BIN_DIR"
