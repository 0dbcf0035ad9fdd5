#!/usr/bin/env bash
# The kind node image for hosts where no registry gives kindest/node: built here, reproducibly, from
#   - a Debian bookworm root filesystem (debootstrap; systemd, Debian's containerd and runc, iptables, CNI plugins),
#   - the pinned Kubernetes binaries (hack/ensure-binaries.sh and `hack/ensure-binaries.sh node`),
#   - kind's own node files (entrypoint, systemd units, /kind/bin scripts), read from the Go module cache for the
#     kind version ensure-binaries.sh pins, never copied into this repository,
#   - the images kubeadm runs (control plane, kube-proxy, CoreDNS, etcd, pause), each one static binary, preloaded
#     into the node's containerd so that nothing is pulled.
#
#   hack/e2e/node-image.sh PAUSE-REF PAUSE-ARCHIVE    prints the node image's reference
#
# The provider's image store is the cache: the image is tagged with a hash of every input above, and a run whose
# inputs are unchanged builds nothing (`podman`/`docker image exists`). With podman that store is under
# ~/.cache/ome-selector/kind-podman (lib.sh), so it outlives `make e2e-down`. The Debian root filesystem is cached
# as a tar under ~/.cache/ome-selector/kind-node.
#
# What differs from kindest/node, and why (each harmless where it is not needed):
#   - containerd 1.6 from Debian with restrict_oom_score_adj: without CAP_SYS_RESOURCE no sandbox could start;
#   - the kubelet runs with --fail-cgroupv1=false: cgroup v1 hosts are still supported by v1.36, though deprecated;
#   - a static bridge CNI instead of kindnetd (an image from a registry): single node, no masquerading;
#   - an egress sink: on a network with no default route (podman --internal), ClusterIPs still need one to be
#     DNATed; the sink is an empty bridge, so anything not for the cluster ends inside the node.
set -euo pipefail
shopt -s inherit_errexit
# shellcheck source=hack/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

DEBIAN_SUITE=bookworm
NODE_PACKAGES=systemd,dbus,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,bash,ca-certificates,curl,jq,procps,containerd,runc,containernetworking-plugins,socat,iputils-ping,netcat-openbsd
POD_SUBNET=10.244.0.0/24

sha() { sha256sum | cut -c1-16; }

PAUSE_REF=${1:?usage: $0 PAUSE-REF PAUSE-ARCHIVE}
PAUSE_ARCHIVE=${2:?usage: $0 PAUSE-REF PAUSE-ARCHIVE}
CP_BIN=$("$REPO/hack/ensure-binaries.sh")
NODE_BIN=$("$REPO/hack/ensure-binaries.sh" node)
K8S_VERSION=$("$NODE_BIN/kubelet" --version | awk '{ print $2 }')
KIND_VERSION=$("$NODE_BIN/kind" version | awk '{ print $2 }')
KIND_FILES=$(cd /tmp && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" \
  | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')/images/base/files
[[ -f $KIND_FILES/usr/local/bin/entrypoint ]] || die "kind's node files are not in the Go module cache ($KIND_FILES)"

WORK=""
cleanup() {
  [[ -n $WORK && -d $WORK ]] || return 0
  [[ ! -f $WORK/containerd.pid ]] || { kill "$(<"$WORK/containerd.pid")" 2>/dev/null || true; sleep 1; }
  awk -v w="$WORK" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do umount -l "$m" || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

rootfs_tar() { # -> ROOTFS_TAR: the Debian root filesystem, debootstrapped once per package list
  local key mirror
  key=$(printf '%s %s\n' "$DEBIAN_SUITE" "$NODE_PACKAGES" | sha)
  ROOTFS_TAR="$KIND_NODE_CACHE/debian-$DEBIAN_SUITE-$key.rootfs.tar"
  [[ ! -f $ROOTFS_TAR ]] || return 0
  local began; began=$(date +%s.%N); mirror=$(debian_mirror)
  log "debootstrap $DEBIAN_SUITE for the kind node from $mirror (about a minute, then cached)"
  mkdir -p "$KIND_NODE_CACHE"
  local dir; dir=$(mktemp -d "$KIND_NODE_CACHE/.debootstrap.XXXXXX")
  if ! debootstrap --variant=minbase --include="$NODE_PACKAGES" "$DEBIAN_SUITE" "$dir/rootfs" "$mirror" \
    >"$dir/debootstrap.log" 2>&1; then
    tail -n 30 "$dir/debootstrap.log" >&2; rm -rf "$dir"; die "debootstrap of the node failed"
  fi
  rm -rf "$dir"/rootfs/var/cache/apt/archives/*.deb "$dir"/rootfs/var/lib/apt/lists/* "$dir"/rootfs/var/log/*.log
  tar --numeric-owner --xattrs --xattrs-include='*' -C "$dir/rootfs" -cf "$dir/rootfs.tar" .
  mv "$dir/rootfs.tar" "$ROOTFS_TAR"
  rm -rf "$dir"
  find "$KIND_NODE_CACHE" -maxdepth 1 -name "debian-$DEBIAN_SUITE-*.rootfs.tar" ! -path "$ROOTFS_TAR" -delete
  log "node root filesystem made in $(since "$began")s"
}

node_key() {
  {
    echo "$K8S_VERSION $KIND_VERSION $PAUSE_REF $POD_SUBNET"
    basename "$ROOTFS_TAR"; basename "$CP_BIN"; basename "$NODE_BIN"
    cat "$0"
    (cd "$KIND_FILES" && find . -type f | LC_ALL=C sort | xargs sha256sum)
  } | sha
}

# `<component> <reference>` for each image reference on stdin (registry.k8s.io/coredns/coredns:v1.14.2 -> coredns).
image_components() { awk -F'[/:]' '{ print $(NF - 1), $0 }'; }

# The images `kubeadm config images list` names.
kubeadm_images() {
  "$NODE_BIN/kubeadm" config images list --kubernetes-version "$K8S_VERSION" 2>/dev/null | image_components
}

buildah_() { buildah --root "$WORK/buildah" --runroot "$WORK/buildah-run" --storage-driver vfs "$@"; }

# component_image REF ENTRYPOINT FILE...: a docker-archive of one image holding FILEs (`source:target`).
component_image() {
  local ref="$1" entrypoint="$2" c spec; shift 2
  c=$(buildah_ from scratch)
  for spec in "$@"; do buildah_ copy -q "$c" "${spec%%:*}" "${spec#*:}" >/dev/null; done
  buildah_ config --entrypoint "$entrypoint" --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$c"
  buildah_ commit -q "$c" "$ref" >/dev/null
  buildah_ rm "$c" >/dev/null
  buildah_ push -q "$ref" "docker-archive:$WORK/images/${ref//[\/:]/_}.tar:$ref"
}

# kube-proxy needs iptables (nft and legacy), conntrack and their libraries: taken from the node's own rootfs.
kube_proxy_tree() {
  local root="$1" tree="$WORK/kube-proxy" lib f
  mkdir -p "$tree/usr/sbin" "$tree/usr/local/bin"
  cp "$NODE_BIN/kube-proxy" "$tree/usr/local/bin/"
  cp -a "$root/usr/sbin/xtables-nft-multi" "$root/usr/sbin/xtables-legacy-multi" "$root/usr/sbin/conntrack" "$tree/usr/sbin/"
  for f in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
    ln -s xtables-nft-multi "$tree/usr/sbin/$f"
  done
  for f in iptables-legacy iptables-legacy-save iptables-legacy-restore ip6tables-legacy ip6tables-legacy-save ip6tables-legacy-restore; do
    ln -s xtables-legacy-multi "$tree/usr/sbin/$f"
  done
  mkdir -p "$tree/usr/lib/x86_64-linux-gnu" "$tree/lib64"
  cp -a "$root/usr/lib/x86_64-linux-gnu/xtables" "$tree/usr/lib/x86_64-linux-gnu/"
  # Every shared library the binaries and the extensions need, resolved inside the node's rootfs.
  for lib in $(chroot "$root" sh -c 'ldd /usr/sbin/xtables-nft-multi /usr/sbin/xtables-legacy-multi /usr/sbin/conntrack /usr/lib/x86_64-linux-gnu/xtables/*.so 2>/dev/null' \
    | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\/lib64\// { print $1 }' | sort -u); do
    mkdir -p "$tree$(dirname "$lib")"
    cp -L "$root$lib" "$tree$lib"
  done
  [[ -e $tree/lib64/ld-linux-x86-64.so.2 ]] || cp -L "$root/lib64/ld-linux-x86-64.so.2" "$tree/lib64/"
  echo "$tree"
}

component_images() {
  local root="$1" component ref
  mkdir -p "$WORK/images"
  while read -r component ref; do
    case $component in
      kube-apiserver) component_image "$ref" '["/usr/local/bin/kube-apiserver"]' "$CP_BIN/kube-apiserver:/usr/local/bin/kube-apiserver" ;;
      kube-controller-manager | kube-scheduler)
        component_image "$ref" "[\"/usr/local/bin/$component\"]" "$NODE_BIN/$component:/usr/local/bin/$component" ;;
      kube-proxy) component_image "$ref" '["/usr/local/bin/kube-proxy"]' "$(kube_proxy_tree "$root"):/" ;;
      etcd) component_image "$ref" '["/usr/local/bin/etcd"]' "$CP_BIN/etcd:/usr/local/bin/etcd" ;;
      coredns) component_image "$ref" '["/coredns"]' "$NODE_BIN/coredns:/coredns" ;;
      pause) PAUSE_TARGET=$ref ;;
      *) die "kubeadm names an image this script cannot make: $ref" ;;
    esac
  done < <(kubeadm_images)
  [[ -n ${PAUSE_TARGET:-} ]] || die "kubeadm names no pause image"
}

# The host's containerd, run only to unpack the images into the node's /var/lib/containerd (CRI plugin off).
preload_images() {
  local root="$1" sock="$WORK/containerd.sock" f i
  mkdir -p "$WORK/containerd-state"
  cat >"$WORK/containerd.toml" <<EOF
version = 2
root = "$root/var/lib/containerd"
state = "$WORK/containerd-state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$WORK/containerd-opt"
EOF
  containerd --config "$WORK/containerd.toml" >"$WORK/containerd.log" 2>&1 9>&- &
  echo $! >"$WORK/containerd.pid"
  for ((i = 0; i < 60; i++)); do ctr -a "$sock" version >/dev/null 2>&1 && break; sleep 0.5; done
  ctr -a "$sock" version >/dev/null 2>&1 || { tail "$WORK/containerd.log" >&2; die "the preload containerd did not start"; }
  for f in "$WORK"/images/*.tar; do ctr -a "$sock" -n k8s.io images import "$f" >/dev/null; done
  ctr -a "$sock" -n k8s.io images import "$PAUSE_ARCHIVE" >/dev/null
  ctr -a "$sock" -n k8s.io images tag --force "$PAUSE_REF" "$PAUSE_TARGET" >/dev/null
  ctr -a "$sock" -n k8s.io images rm "$PAUSE_REF" >/dev/null
  log "preloaded: $(ctr -a "$sock" -n k8s.io images ls -q | tr '\n' ' ')"
  kill "$(<"$WORK/containerd.pid")"
  wait "$(<"$WORK/containerd.pid")" 2>/dev/null || true
  rm -f "$WORK/containerd.pid"
}

# kind's node files, then this project's settings on top.
assemble() {
  local root="$1" f
  # As kind's base image: no units but ours start in the container, and systemd is init.
  find "$root/lib/systemd/system/sysinit.target.wants/" -name systemd-tmpfiles-setup.service -delete
  rm -f "$root"/lib/systemd/system/multi-user.target.wants/* "$root"/etc/systemd/system/*.wants/* \
    "$root"/lib/systemd/system/local-fs.target.wants/* "$root"/lib/systemd/system/sockets.target.wants/*udev* \
    "$root"/lib/systemd/system/sockets.target.wants/*initctl* "$root"/lib/systemd/system/basic.target.wants/*
  echo "ReadKMsg=no" >>"$root/etc/systemd/journald.conf"
  ln -sf /usr/lib/systemd/systemd "$root/sbin/init"

  install -D -m 0755 "$KIND_FILES"/usr/local/bin/* -t "$root/usr/local/bin/"
  install -D -m 0644 "$KIND_FILES"/kind/README.txt -t "$root/kind/"
  install -D -m 0755 "$KIND_FILES"/kind/bin/* -t "$root/kind/bin/"
  install -D -m 0644 "$KIND_FILES"/etc/crictl.yaml -t "$root/etc/"
  install -D -m 0644 "$KIND_FILES"/etc/sysctl.d/* -t "$root/etc/sysctl.d/"
  for f in kubelet.service kubelet.slice undo-mount-hacks.service containerd.service; do
    install -D -m 0644 "$KIND_FILES/etc/systemd/system/$f" -t "$root/etc/systemd/system/"
  done
  install -D -m 0644 "$KIND_FILES"/etc/systemd/system/kubelet.service.d/* -t "$root/etc/systemd/system/kubelet.service.d/"
  # Debian's containerd is in /usr/bin.
  sed -i 's#^ExecStart=/usr/local/bin/containerd#ExecStart=/usr/bin/containerd#' "$root/etc/systemd/system/containerd.service"
  # kind's kubelet arguments, and cgroup v1 allowed (deprecated, still supported by v1.36).
  sed '/^KUBELET_EXTRA_ARGS=/s#$# --fail-cgroupv1=false#' "$KIND_FILES/etc/default/kubelet" >"$root/etc/default/kubelet"

  mkdir -p "$root/etc/containerd"
  cat >"$root/etc/containerd/config.toml" <<EOF
version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_TARGET"
  # Without CAP_SYS_RESOURCE a sandbox cannot lower its oom_score_adj below containerd's: clamp it instead.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "/etc/cni/net.d"
EOF
  mkdir -p "$root/etc/cni/net.d"
  cat >"$root/etc/cni/net.d/10-e2e-bridge.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "e2e-bridge", "plugins": [
  {"type": "bridge", "bridge": "e2ebr0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_SUBNET"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}
]}
EOF
  mkdir -p "$root/kind/manifests"
  cat >"$root/kind/manifests/default-storage.yaml" <<'EOF'
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/host-path
EOF
  # With no default route (an --internal network) ClusterIP traffic has nowhere to be routed before kube-proxy's
  # DNAT; the sink gives it a route, and anything else ends in an empty bridge inside the node.
  cat >"$root/usr/local/bin/egress-sink" <<'EOF'
#!/bin/sh
ip -4 route show default | grep -q . && exit 0
ip link add egress-sink type bridge && ip link set egress-sink up && ip route add default dev egress-sink metric 1000
EOF
  chmod 0755 "$root/usr/local/bin/egress-sink"
  cat >"$root/etc/systemd/system/egress-sink.service" <<'EOF'
[Unit]
Description=A default route into an empty bridge when the node has none
Before=containerd.service kubelet.service

[Service]
Type=oneshot
ExecStart=/usr/local/bin/egress-sink

[Install]
WantedBy=multi-user.target
EOF

  echo "$K8S_VERSION" >"$root/kind/version"
  install -m 0755 "$NODE_BIN/kubelet" "$NODE_BIN/kubeadm" "$CP_BIN/kubectl" "$root/usr/bin/"
  install -m 0755 "$NODE_BIN/crictl" "$root/usr/local/bin/"
  mkdir -p "$root/etc/kubernetes/manifests"
  chroot "$root" systemctl enable kubelet.service containerd.service undo-mount-hacks.service egress-sink.service >/dev/null 2>&1
  chroot "$root" systemctl mask systemd-binfmt.service >/dev/null 2>&1
}

main() {
  local began key ref
  rootfs_tar
  key=$(node_key)
  ref="localhost/ome-selector-kind-node:$K8S_VERSION-$key"
  if "$PROVIDER" image exists "$ref" 2>/dev/null || "$PROVIDER" image inspect "$ref" >/dev/null 2>&1; then
    echo "$ref"; return 0
  fi
  began=$(date +%s.%N)
  log "building the kind node image $ref"
  mkdir -p "$KIND_NODE_CACHE"
  WORK=$(mktemp -d "$KIND_NODE_CACHE/.build.XXXXXX")
  mkdir "$WORK/node"
  tar --numeric-owner --xattrs --xattrs-include='*' -C "$WORK/node" -xf "$ROOTFS_TAR"
  component_images "$WORK/node"
  assemble "$WORK/node"
  preload_images "$WORK/node"
  tar --numeric-owner --xattrs --xattrs-include='*' -C "$WORK/node" -c . \
    | "$PROVIDER" import --change 'ENV container=docker' \
      --change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' --change 'STOPSIGNAL SIGRTMIN+3' - "$ref" >/dev/null
  # Older builds of the node image are of no further use.
  "$PROVIDER" images --format '{{.Repository}}:{{.Tag}}' 2>/dev/null \
    | grep '^localhost/ome-selector-kind-node:' | grep -vxF "$ref" | xargs -r "$PROVIDER" rmi >/dev/null 2>&1 || true
  log "built the kind node image in $(since "$began")s"
  echo "$ref"
}

main
