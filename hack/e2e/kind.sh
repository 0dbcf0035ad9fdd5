#!/usr/bin/env bash
# `make e2e`, `make e2e-up`, `make e2e-down`: ome-selector as users run it (the image from the unchanged
# Dockerfile, the chart, the operator's pods) in a kind cluster. See README "Run it in a kind cluster".
#
#   hack/e2e/kind.sh e2e    build or reuse everything, create the cluster, load the image, run hack/e2e/suite.sh,
#                           delete the cluster and restore the host; the last line is `e2e: N passed, M failed`
#   hack/e2e/kind.sh up     the cluster with the operator installed, left running; prints the KUBECONFIG to use
#   hack/e2e/kind.sh down   delete it and restore the host
#
# The provider is Docker where an engine answers, else podman (installed from Debian). The node image is
# kindest/node v1.36.x where Docker can pull it, else built here from the pinned binaries (hack/e2e/node-image.sh).
# With podman every file lives under $STATE (.e2e/ in the checkout) but the image store (the cache), the cluster
# runs on a podman network of its own that is --internal (no route off this machine, no DNS forwarding), and the
# teardown undoes what podman and kind change on the host (recorded at `up`): the network and its interfaces,
# podman's IPAM database and /run/netns mounts, /lib/modules when it was made for kind, sysctls, cgroup
# directories.
#
# Environment: E2E_PROVIDER=docker|podman (default: detected), E2E_NODE_IMAGE (a node image to use as is).
set -euo pipefail
shopt -s inherit_errexit
# shellcheck source=hack/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
E2E="$REPO/hack/e2e"
PYTHON=${PYTHON:-$REPO/.venv/bin/python}
CLUSTER=ome-selector-e2e
NETWORK=kind  # the network kind's podman provider uses; made here first, --internal
# The Kubernetes 1.36 node image kind v0.33.0 publishes (its release notes: only the digest guarantees an image
# built for that release).
KINDEST_NODE=kindest/node:v1.36.4@sha256:099e049362a1526b2db71494e1947aae99bd16290d7c895f2b7ea312e3cbfaed
HOSTREC="$STATE/host"
# Host paths podman and kind use whatever they are told; removed at teardown when `up` made them.
HOST_PATHS=(/lib/modules /run/netns /run/containers /run/libpod /var/lib/containers /etc/containers/networks
  /dev/shm/libpod_lock /var/lib/cni /etc/cni /run/runc)

# --- provider and host checks -----------------------------------------------------------------------------------

choose_provider() {
  if [[ -n ${E2E_PROVIDER:-} ]]; then
    PROVIDER=$E2E_PROVIDER
  elif command -v docker >/dev/null && timeout 20 docker info >/dev/null 2>&1; then
    PROVIDER=docker
  else
    PROVIDER=podman
  fi
  export PROVIDER
}

# What kind and this script need from the host, checked before anything is made (exit 3, one line).
check_host() {
  [[ $(uname -s) == Linux ]] || unsupported "needs Linux (this is $(uname -s))"
  if [[ $PROVIDER == podman ]]; then
    [[ $(id -u) == 0 ]] || unsupported "no Docker engine answers, and podman as kind's provider needs root here"
    command -v apt-get >/dev/null || command -v podman >/dev/null \
      || unsupported "no Docker engine answers, and podman is neither installed nor installable (no apt-get)"
    ensure_packages "${PODMAN_PACKAGES[@]}" "${E2E_PACKAGES[@]}"
    grep -qw overlay /proc/filesystems || unsupported "the kernel has no overlay filesystem (podman's and containerd's storage)"
    [[ -n $(awk '$3 ~ /^cgroup2?$/' /proc/mounts) ]] || unsupported "no cgroup filesystem is mounted"
    if [[ $(cgroup_layout) != v2 && ! -d /sys/fs/cgroup/systemd ]]; then
      unsupported "cgroup v1 without a name=systemd hierarchy: kind's node (systemd) cannot run here"
    fi
    if [[ ! -d /lib/modules ]]; then  # made at `create`, removed at teardown
      { mkdir /lib/modules && rmdir /lib/modules; } 2>/dev/null \
        || unsupported "kind mounts /lib/modules into the node, and /lib/modules neither exists nor can be created"
    fi
  else
    command -v docker >/dev/null || unsupported "docker is required"
  fi
  command -v go >/dev/null || unsupported "needs go to build kind, the binaries and the images (see README)"
}

# --- host records (podman) --------------------------------------------------------------------------------------

cgroup_dirs() { find /sys/fs/cgroup -mindepth 1 -maxdepth 2 -type d 2>/dev/null | sort; }
host_rules() {
  { iptables-save; ip6tables-save; } 2>/dev/null | sed -e '/^#/d' -e 's/\[[0-9]*:[0-9]*\]/[0:0]/'
  ! command -v nft >/dev/null || nft list ruleset 2>/dev/null
}
host_links() { ip -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }' | sort; }

record_host() {
  mkdir -p "$HOSTREC"
  local p
  sysctls save "$HOSTREC/sysctl.json"
  for p in "${HOST_PATHS[@]}"; do [[ -e $p ]] || echo "$p"; done >"$HOSTREC/created-paths"
  cgroup_dirs >"$HOSTREC/cgroups"
  host_rules >"$HOSTREC/rules"
  host_links >"$HOSTREC/links"
}

# sysctls save FILE | restore FILE: every readable, writable /proc/sys entry, and putting back those that changed
# (restore prints what it could not). The node is privileged: its systemd and kubelet set host-wide values
# (fs.file-max, fs.protected_*, kernel.panic, vm.overcommit_memory, ...), and netavark sets net.ipv4.ip_forward.
sysctls() {
  python3 - "$@" <<'PY'
import json, os, sys
action, path = sys.argv[1:]
root = "/proc/sys"
skip = ("fs/binfmt_misc", "kernel/random", "kernel/ns_last_pid", "kernel/usermodehelper", "vm/drop_caches")
if action == "save":
    values = {}
    for top, dirs, files in os.walk(root):
        for name in files:
            full = os.path.join(top, name)
            rel = os.path.relpath(full, root)
            if rel.startswith(skip) or not os.access(full, os.R_OK | os.W_OK):
                continue
            try:
                with open(full) as f:
                    values[rel] = f.read()
            except OSError:
                pass
    with open(path, "w") as f:
        json.dump(values, f)
    sys.exit(0)
with open(path) as f:
    values = json.load(f)
for rel, saved in sorted(values.items()):
    full = os.path.join(root, rel)
    try:
        with open(full) as f:
            if f.read() == saved:
                continue
        with open(full, "w") as f:
            f.write(saved)
        with open(full) as f:
            now = f.read()
    except OSError:
        continue  # an interface that is gone, or an entry that cannot be set back
    if now != saved:
        print(f"sysctl {rel.replace('/', '.')} is {now.strip()!r}, was {saved.strip()!r}")
PY
}

# A /24 for the node network that overlaps no route or address on the host: `<subnet> <gateway>`.
pick_subnet() { { ip -4 route show table all; ip -4 -o addr show; } | free_subnet; }

# The first /24 of 10.231.7.0 - 10.231.255.0 that overlaps no address or network named on stdin.
free_subnet() {
  python3 -c '
import ipaddress, re, sys
used = [ipaddress.ip_network(m, strict=False) for m in re.findall(r"\b\d+\.\d+\.\d+\.\d+(?:/\d+)?\b", sys.stdin.read())]
used = [n for n in used if n.prefixlen > 0]
for third in range(7, 256):
    net = ipaddress.ip_network(f"10.231.{third}.0/24")
    if not any(net.overlaps(u) for u in used):
        print(net, net[1])
        break
else:
    sys.exit("no free /24 in 10.231.0.0/16")
'
}

# --- build ------------------------------------------------------------------------------------------------------

# Binaries, the project image and the node image, each built or reused (each part timed). Sets CP_BIN, NODE_BIN,
# KIND, PROJECT_REF, PROJECT_ARCHIVE (podman) and NODE_IMAGE.
prepare() {
  local began archives
  began=$(date +%s.%N); CP_BIN=$("$REPO/hack/ensure-binaries.sh"); log "control-plane binaries ready in $(since "$began")s"
  began=$(date +%s.%N); NODE_BIN=$("$REPO/hack/ensure-binaries.sh" node); log "node binaries and kind ready in $(since "$began")s"
  KIND="$NODE_BIN/kind"
  [[ -x $PYTHON ]] || die "$PYTHON not found; run 'make venv'"

  began=$(date +%s.%N)
  if [[ $PROVIDER == docker ]]; then
    PROJECT_REF=ome-selector:dev
    docker build -q -t "$PROJECT_REF" "$REPO" >/dev/null
  else
    mapfile -t archives < <("$E2E/images.sh")
    ((${#archives[@]} == 2)) || die "building the images failed"
    PROJECT_REF=${archives[1]%% *} PROJECT_ARCHIVE=${archives[1]#* }
  fi
  log "image $PROJECT_REF ready in $(since "$began")s"

  began=$(date +%s.%N)
  if [[ -n ${E2E_NODE_IMAGE:-} ]]; then
    NODE_IMAGE=$E2E_NODE_IMAGE
  elif [[ $PROVIDER == docker ]] && docker pull -q "$KINDEST_NODE" >/dev/null 2>&1; then
    NODE_IMAGE=$KINDEST_NODE
  else
    # No registry, or podman: the image built here (its settings are what rootful podman on cgroup v1 without
    # CAP_SYS_RESOURCE needs; E2E_NODE_IMAGE=kindest/node:... uses the stock one instead).
    [[ -n ${archives[*]:-} ]] || mapfile -t archives < <("$E2E/images.sh")
    NODE_IMAGE=$("$E2E/node-image.sh" "${archives[0]%% *}" "${archives[0]#* }")
  fi
  log "node image $NODE_IMAGE ready in $(since "$began")s"
}

# --- cluster ----------------------------------------------------------------------------------------------------

kubectl_() { "$CP_BIN/kubectl" --kubeconfig "$STATE/kubeconfig" "$@"; }

# A Corefile (stdin) without its `forward` directive, one line or a block.
corefile_without_forwarding() {
  awk '/^[ \t]*forward[ \t]/ { skip = ($NF == "{"); next } skip && /^[ \t]*}[ \t]*$/ { skip = 0; next } !skip'
}

# The node has no route off this machine: CoreDNS answers for the cluster only, it forwards nothing. (The suite
# needs no DNS: the restarted pods come up while it starts.)
coredns_forwards_nothing() {
  local corefile
  corefile=$(kubectl_ -n kube-system get configmap coredns -o jsonpath='{.data.Corefile}' | corefile_without_forwarding)
  kubectl_ -n kube-system patch configmap coredns --type merge \
    -p "$(python3 -c 'import json, sys; print(json.dumps({"data": {"Corefile": sys.argv[1]}}))' "$corefile")" >/dev/null
  kubectl_ -n kube-system rollout restart deployment coredns >/dev/null
}

create() {
  local began config=() subnet gateway ip
  mkdir -p "$STATE/bin"
  ln -sf "$CP_BIN/kubectl" "$CP_BIN/helm" "$KIND" "$STATE/bin/"
  # (9>&-: conmon and the node outlive this script under `make e2e-up`; they must not hold the host lock.)
  if [[ $PROVIDER == podman ]]; then
    mkdir -p /lib/modules
    read -r subnet gateway < <(pick_subnet)
    podman network create --driver bridge --internal --disable-dns --subnet "$subnet" --gateway "$gateway" \
      "$NETWORK" >/dev/null 9>&-
  fi
  if [[ $NODE_IMAGE == localhost/ome-selector-kind-node:* ]]; then
    # The node image's own CNI (no kindnetd) on the pod subnet it was built for; small ranges.
    cat >"$STATE/kind.yaml" <<EOF
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
networking:
  ipFamily: ipv4
  disableDefaultCNI: true
  podSubnet: 10.244.0.0/24
  serviceSubnet: 10.96.0.0/24
EOF
    config=(--config "$STATE/kind.yaml")
  fi
  began=$(date +%s.%N)
  "$KIND" create cluster --name "$CLUSTER" --image "$NODE_IMAGE" --kubeconfig "$STATE/kubeconfig" --wait 180s \
    "${config[@]}" >&2 9>&-
  log "cluster created in $(since "$began")s"
  if [[ $PROVIDER == podman ]]; then
    # Back at once to what the host had: the node needs none of the host-wide values its systemd and kubelet set,
    # nor forwarding on the host (node and host talk over the bridge; the pods' forwarding is the node's own).
    sysctls restore "$HOSTREC/sysctl.json" >&2
    # netavark publishes no ports on an --internal network: talk to the API server at the node's address (it is
    # in the serving certificate).
    ip=$(podman inspect -f "{{.NetworkSettings.Networks.$NETWORK.IPAddress}}" "$CLUSTER-control-plane")
    sed -i "s#server: https://127.0.0.1:[0-9]*#server: https://$ip:6443#" "$STATE/kubeconfig"
    coredns_forwards_nothing
  fi
  began=$(date +%s.%N)
  if [[ $PROVIDER == docker ]]; then
    "$KIND" load docker-image "$PROJECT_REF" --name "$CLUSTER" >&2
  else
    "$KIND" load image-archive "$PROJECT_ARCHIVE" --name "$CLUSTER" >&2
  fi
  log "image loaded in $(since "$began")s"
}

suite_env() {
  export KUBECONFIG="$STATE/kubeconfig" KUBECTL="$CP_BIN/kubectl" HELM="$CP_BIN/helm" PYTHON IMAGE="$PROJECT_REF"
}

# --- teardown ---------------------------------------------------------------------------------------------------

own_mounts() {
  local p prefixes=("$STATE/" "$PODMAN_STORE/") created
  created=$(cat "$HOSTREC/created-paths" 2>/dev/null || true)
  for p in $created; do prefixes+=("$p/" "$p"); done
  awk '{ print $2 }' /proc/mounts | while read -r m; do
    for p in "${prefixes[@]}"; do [[ $m/ == "$p"* || $m == "$p" ]] && { echo "$m"; break; }; done
  done | sort -r
}

# Delete the cluster and restore the host; goes through every step whatever fails, a Ctrl-C does not cut it
# short, and what it could not undo is reported at the end (exit 1).
down() {
  set +e
  trap '' INT TERM
  if [[ ! -d $STATE ]]; then log "nothing to tear down ($STATE does not exist)"; return 0; fi
  local began; began=$(date +%s.%N)
  PROVIDER=$(cat "$STATE/provider" 2>/dev/null || echo podman)
  [[ $PROVIDER != podman ]] || podman_env
  local kind; kind=$(readlink "$STATE/bin/kind" 2>/dev/null || true)
  [[ -x $kind ]] || kind=$(find "$CACHE_ROOT" -maxdepth 2 -name kind -type f -perm -u+x 2>/dev/null | head -n1)
  if [[ -n $kind ]]; then
    "$kind" delete cluster --name "$CLUSTER" --kubeconfig "$STATE/kubeconfig" >/dev/null 2>&1 || log "kind delete cluster failed"
  fi
  if [[ $PROVIDER == podman ]]; then
    # The store is ours alone: whatever a cut-short create left (containers, anonymous volumes) goes too.
    podman rm --all --force --volumes >/dev/null 2>&1
    podman volume prune --force >/dev/null 2>&1
    podman network rm --force "$NETWORK" >/dev/null 2>&1
    restore_host
  fi
  local leftovers=""
  [[ $PROVIDER != podman ]] || leftovers=$(leftovers)
  rm -rf "$STATE"
  if [[ -n $leftovers ]]; then
    log "teardown left these behind:"
    printf '  %s\n' "$leftovers" >&2
    return 1
  fi
  log "torn down in $(since "$began")s; the host is as before"
}

restore_host() {
  local m d
  # /run/netns: podman bind-mounts it onto itself (and a netns file per container) when it made it.
  for m in $(own_mounts); do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
  if [[ -f $HOSTREC/cgroups ]]; then
    for d in $(comm -13 "$HOSTREC/cgroups" <(cgroup_dirs)); do
      find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
    done
  fi
  [[ ! -f $HOSTREC/sysctl.json ]] || sysctls restore "$HOSTREC/sysctl.json" >/dev/null
  if [[ -f $HOSTREC/created-paths ]]; then
    # netavark's IPAM database (/run/containers/networks/ipam.db) and the rest of what podman made here.
    while read -r m; do rm -rf "$m" 2>/dev/null || rmdir "$m" 2>/dev/null; done <"$HOSTREC/created-paths"
  fi
  # podman's own files under $STATE and the image store's run-time state.
  rm -rf "$STATE/podman"
}

# What the teardown could not undo, one item a line (empty when the host is as before).
leftovers() {
  local m new
  m=$(own_mounts | tr '\n' ' ')
  [[ -z ${m// /} ]] || echo "mounts: $m"
  if [[ -f $HOSTREC/links ]]; then
    new=$(comm -13 "$HOSTREC/links" <(host_links) | tr '\n' ' ')
    [[ -z ${new// /} ]] || echo "network interfaces: $new"
  fi
  if [[ -f $HOSTREC/rules ]]; then
    new=$(diff "$HOSTREC/rules" <(host_rules) | grep '^[<>]' | tr '\n' ';' || true)
    [[ -z $new ]] || echo "iptables/nft rules differ: $new"
  fi
  if [[ -f $HOSTREC/cgroups ]]; then
    new=$(comm -13 "$HOSTREC/cgroups" <(cgroup_dirs) | tr '\n' ' ')
    [[ -z ${new// /} ]] || echo "cgroup directories: $new"
  fi
  [[ ! -f $HOSTREC/sysctl.json ]] || sysctls restore "$HOSTREC/sysctl.json"
  if [[ -f $HOSTREC/created-paths ]]; then
    while read -r m; do [[ ! -e $m ]] || echo "path $m"; done <"$HOSTREC/created-paths"
  fi
  local procs; procs=$(pgrep -f "$STATE/|$PODMAN_STORE/" | grep -vx "$$" | tr '\n' ' ' || true)
  [[ -z ${procs// /} ]] || echo "processes: $procs"
}

# --- entry points -----------------------------------------------------------------------------------------------

# The host checks and the lock. Refuses a second cluster here, before a failed start's teardown could remove a
# cluster that `make e2e-up` left running.
begin() {
  choose_provider
  check_host
  host_lock
  [[ ! -e $STATE/provider ]] || die "a cluster is already up in $STATE (make e2e-down first)"
}

# The records `down` restores from, then the builds.
start() {
  mkdir -p "$STATE"
  echo "$PROVIDER" >"$STATE/provider"
  if [[ $PROVIDER == podman ]]; then record_host; podman_env; fi
  prepare
}

RESULTS=""

# Teardown whatever happened, counted as a check; then the summary, the very last line.
finish() {
  local rc=$? began
  trap - EXIT
  trap '' INT TERM
  ((rc != 130)) || echo "fail the run was interrupted" >>"$RESULTS"
  ((rc == 0)) || grep -q '^fail ' "$RESULTS" || echo "fail the run stopped before the suite (see above)" >>"$RESULTS"
  began=$(date +%s.%N)
  if (down); then
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
  trap 'exit 130' INT TERM  # an interrupted run tears down too
  begin
  RESULTS=$(mktemp)
  trap finish EXIT
  start
  if ! (create); then
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
  trap 'exit 130' INT TERM
  begin
  trap '(down) || true' EXIT
  start
  create
  suite_env
  if ! "$E2E/suite.sh" install; then
    log "the operator did not install; the cluster stays up for a look (make e2e-down removes it)"
  fi
  trap - EXIT
  cat <<EOF

The kind cluster $CLUSTER is up, with ome-selector installed in namespace ome-selector. To use it:
  export KUBECONFIG=$STATE/kubeconfig PATH=$STATE/bin:\$PATH
  kubectl apply -f samples/ && kubectl get isvc -A -o wide
Remove it with: make e2e-down
EOF
}

case "${1:-}" in
  e2e) e2e ;;
  up) up ;;
  down) host_lock; down ;;
  *) die "usage: $0 e2e|up|down" ;;
esac
