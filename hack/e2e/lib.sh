# Shared by the `make e2e` scripts (sourced, not run): paths, logging and the host checks.
# shellcheck shell=bash disable=SC2034 # the variables are for the scripts that source this file

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# Everything a cluster run creates lives here and is removed by `make e2e-down`.
STATE=${E2E_STATE:-$REPO/.e2e}
# Build results that survive a run: the node binaries (hack/ensure-binaries.sh node), the images, the kind node's
# Debian root filesystem and, with podman, its image store (the node image, tagged by a hash of its inputs).
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/ome-selector"
IMAGE_CACHE="$CACHE_ROOT/e2e-images"
KIND_NODE_CACHE="$CACHE_ROOT/kind-node"
PODMAN_STORE="$CACHE_ROOT/kind-podman"
# docker or podman: the kind provider (hack/e2e/kind.sh chooses it; the node image is imported into its store).
PROVIDER=${PROVIDER:-podman}

# The shared end-to-end scenario, run as `python -m $SCENARIO_MODULE`; harness/ is importable from the checkout.
SCENARIO_MODULE=${SCENARIO_MODULE:-harness.scenario}
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"

# Debian packages the image and node-image builds need, and podman where no Docker engine answers (apt-get
# installs the missing ones).
E2E_PACKAGES=(containerd runc buildah debootstrap)
PODMAN_PACKAGES=(podman netavark containernetworking-plugins iptables)

# One `make e2e`, `e2e-up` or `e2e-down` at a time on a host: the cluster name, the podman network and paths like
# /run/netns are shared. hack/e2e/kind.sh holds it on fd 9 until it exits; the provider's processes start without
# that fd, so a cluster left up by `make e2e-up` does not hold it (kind.sh refuses a second cluster instead).
HOST_LOCK=${E2E_HOST_LOCK:-/run/lock/ome-selector-e2e.lock}

log() { printf 'e2e: %s\n' "$*" >&2; }
# A condition this host cannot meet: one line, non-zero exit.
unsupported() { printf 'e2e: cannot run here: %s\n' "$*" >&2; exit 3; }
die() { printf 'e2e: %s\n' "$*" >&2; exit 1; }

# The last line of `make e2e`, from the `pass|fail <check>` lines of a results file.
summary() {
  local passed failed
  passed=$(grep -c '^pass ' "$1" || true)
  failed=$(grep -c '^fail ' "$1" || true)
  echo "e2e: $passed passed, $failed failed"
}

# Seconds since an earlier `date +%s.%N`, one decimal.
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

require_host() {
  [[ $(uname -s) == Linux ]] || unsupported "needs Linux (this is $(uname -s))"
  [[ $(id -u) == 0 ]] || unsupported "needs root (buildah builds the image, debootstrap its base)"
  unshare --net --mount --pid --fork --mount-proc true 2>/dev/null \
    || unsupported "cannot create network, mount and PID namespaces (unshare failed)"
  grep -qw overlay /proc/filesystems || unsupported "the kernel has no overlay filesystem (containerd's snapshotter)"
  grep -q ' cgroup2\? ' /proc/mounts || unsupported "no cgroup filesystem is mounted"
}

ensure_packages() { # ensure_packages PACKAGE...
  local missing=() p
  for p in "$@"; do
    [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == *"ok installed"* ]] || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  command -v apt-get >/dev/null || unsupported "needs Debian packages ${missing[*]} and there is no apt-get"
  log "installing ${missing[*]} with apt-get"
  apt-get update -qq >&2 || unsupported "apt-get update failed; needs Debian packages ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 \
    || unsupported "apt-get could not install ${missing[*]}"
}

# The Debian mirror apt already uses for bookworm (deb822 or one-line sources), else deb.debian.org.
debian_mirror() {
  local found="" suite=bookworm
  if compgen -G '/etc/apt/sources.list.d/*.sources' >/dev/null; then
    found=$(awk -v suite="$suite" 'BEGIN { RS = "" }
      $0 ~ "Suites:[^\n]*[ \t]" suite "([ \t]|\n|$)" { if (match($0, /URIs:[ \t]*[^ \t\n]+/)) {
        s = substr($0, RSTART, RLENGTH); sub(/URIs:[ \t]*/, "", s); print s; exit } }' \
      /etc/apt/sources.list.d/*.sources)
  fi
  if [[ -z $found && -f /etc/apt/sources.list ]]; then
    found=$(awk -v suite="$suite" '$1 == "deb" && $3 == suite { print $2; exit }' /etc/apt/sources.list)
  fi
  echo "${DEBIAN_MIRROR:-${found:-http://deb.debian.org/debian}}"
}

# podman's configuration for every podman (and kind) call: its image store in the cache, everything else (run
# state, network definitions, temporary files) under $STATE, so nothing lands in /var/lib/containers or
# /etc/containers. runc, because crun refuses hybrid cgroup layouts; rlimits the host's hard limits allow.
podman_env() {
  local dir="$STATE/podman" nofile nproc
  nofile=$(ulimit -Hn)
  [[ $nofile == unlimited || $nofile -gt 1048576 ]] && nofile=1048576
  # conmon runs with at most 32768 processes here; a higher RLIMIT_NPROC for the node is refused (EPERM).
  nproc=$(ulimit -Hu)
  [[ $nproc == unlimited || $nproc -gt 32768 ]] && nproc=32768
  mkdir -p "$dir/networks" "$dir/tmp" "$PODMAN_STORE"
  cat >"$dir/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
[network]
network_config_dir = "$dir/networks"
[engine]
runtime = "runc"
tmp_dir = "$dir/tmp"
EOF
  cat >"$dir/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$PODMAN_STORE/storage"
runroot = "$dir/run"
EOF
  export CONTAINERS_CONF="$dir/containers.conf" CONTAINERS_STORAGE_CONF="$dir/storage.conf"
  export KIND_EXPERIMENTAL_PROVIDER=podman
}

host_lock() {
  mkdir -p "$(dirname "$HOST_LOCK")"
  exec 9>"$HOST_LOCK"
  flock -n 9 || { log "another make e2e runs on this host; waiting for it"; flock 9; }
}

# cgroup layout: v2 (unified), v1, or hybrid (v1 controllers plus an empty cgroup2 mount).
cgroup_layout() {
  if [[ $(stat -fc %T /sys/fs/cgroup) == cgroup2fs ]]; then
    echo v2
  elif grep -q ' cgroup2 ' /proc/mounts; then
    echo hybrid
  else
    echo v1
  fi
}

# The CA bundle the host configures for pip, if any (the image build needs it for PyPI behind a TLS proxy).
pip_ca_bundle() {
  local candidate
  for candidate in "${PIP_CERT:-}" "${REQUESTS_CA_BUNDLE:-}" "${SSL_CERT_FILE:-}"; do
    if [[ -n $candidate && -f $candidate ]]; then echo "$candidate"; return 0; fi
  done
  return 1
}
