#!/usr/bin/env bash
# The images a `make e2e` node runs, built or reused, with no Docker engine and no image registry:
#   - pause: the pod sandbox, a tiny static Go program (hack/e2e/pause/main.go);
#   - a Debian bookworm Python base made with debootstrap, standing in for python:3.11-slim-bookworm;
#   - ome-selector itself, from the unchanged Dockerfile with buildah, on that base.
# Each is cached as an OCI archive under ~/.cache/ome-selector/e2e-images, keyed by a hash of its inputs, so the
# project image is rebuilt only when the Dockerfile or the files it copies change. Prints the archives, one a
# line: `<name> <path>` (the image reference inside each archive, and the file).
#
# Host differences handled here: a hybrid cgroup layout makes buildah run RUN steps with runc (crun refuses it);
# a CA bundle configured for pip on the host (PIP_CERT, REQUESTS_CA_BUNDLE, SSL_CERT_FILE) is mounted into the
# build's RUN steps only, and the finished image is checked not to contain it.
set -euo pipefail
# shellcheck source=hack/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

DEBIAN_SUITE=bookworm
BASE_PACKAGES=python3,python3-venv,python3-pip,python-is-python3
PAUSE_SOURCE="$REPO/hack/e2e/pause/main.go"
SYSTEM_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt

sha() { sha256sum | cut -c1-16; }

# Host paths that buildah and runc create whatever --root says; removed again when this run created them.
HOST_PATHS=(/var/lib/containers /run/runc /run/containers /etc/cni /etc/containers/networks)
created_paths=()
note_host_paths() { local p; for p in "${HOST_PATHS[@]}"; do [[ -e $p ]] || created_paths+=("$p"); done; }
remove_created_paths() { local p; for p in "${created_paths[@]}"; do rm -rf "$p"; done; created_paths=(); }

# Work directories on the cache's filesystem, always removed (with anything mounted under them).
WORK=""
cleanup_work() {
  [[ -n $WORK && -d $WORK ]] || return 0
  awk -v w="$WORK" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do umount -l "$m" || true; done
  rm -rf "$WORK"
}
trap 'cleanup_work; remove_created_paths' EXIT
new_work() { mkdir -p "$IMAGE_CACHE"; WORK=$(mktemp -d "$IMAGE_CACHE/.build.XXXXXX"); }

# buildah keeps its storage in the work directory (vfs: no mounts) and never touches the host's.
buildah_() { buildah --root "$WORK/storage" --runroot "$WORK/run" --storage-driver vfs "$@"; }

keep_newest() { # keep_newest N PATTERN: remove all but the N most recently built or used versions of one artifact
  find "$IMAGE_CACHE" -maxdepth 1 -name "$2" -printf '%T@ %p\n' | sort -rn | tail -n +$(($1 + 1)) \
    | while read -r _ f; do rm -f "$f"; done
}

# Each builder sets its result in a global (no command substitution: the cleanup trap must see the work dir).
pause_archive() { # -> PAUSE_REF, PAUSE_ARCHIVE
  local key out
  key=$( { cat "$PAUSE_SOURCE"; go version; } | sha)
  out="$IMAGE_CACHE/pause-$key.oci.tar"
  if [[ ! -f $out ]]; then
    local began; began=$(date +%s.%N)
    new_work; note_host_paths
    mkdir "$WORK/src" && cp "$PAUSE_SOURCE" "$WORK/src/" && printf 'module local.invalid/pause\n\ngo 1.21\n' >"$WORK/src/go.mod"
    (cd "$WORK/src" && CGO_ENABLED=0 GOFLAGS="" GOTOOLCHAIN=local go build -trimpath -ldflags "-s -w" -o "$WORK/pause" .)
    local c; c=$(buildah_ from scratch)
    buildah_ copy -q "$c" "$WORK/pause" /pause >/dev/null
    buildah_ config --entrypoint '["/pause"]' --user 65535:65535 "$c"
    buildah_ commit -q "$c" "localhost/pause:$key" >/dev/null
    buildah_ push -q "localhost/pause:$key" "oci-archive:$WORK/out.tar:localhost/pause:$key"
    mv "$WORK/out.tar" "$out"
    cleanup_work; remove_created_paths
    keep_newest 1 'pause-*.oci.tar'
    log "built the pause image in $(since "$began")s"
  fi
  PAUSE_REF="localhost/pause:$key" PAUSE_ARCHIVE="$out"
}

base_rootfs() { # -> BASE_ROOTFS
  local key out
  key=$(printf '%s %s\n' "$DEBIAN_SUITE" "$BASE_PACKAGES" | sha)
  out="$IMAGE_CACHE/python-$DEBIAN_SUITE-$key.rootfs.tar"
  if [[ ! -f $out ]]; then
    local began mirror; began=$(date +%s.%N); mirror=$(debian_mirror)
    log "debootstrap $DEBIAN_SUITE with $BASE_PACKAGES from $mirror (about a minute, then cached)"
    new_work
    debootstrap --variant=minbase --include="$BASE_PACKAGES" "$DEBIAN_SUITE" "$WORK/rootfs" "$mirror" \
      >"$WORK/debootstrap.log" 2>&1 || { tail -n 30 "$WORK/debootstrap.log" >&2; die "debootstrap failed"; }
    rm -rf "$WORK"/rootfs/var/cache/apt/archives/*.deb "$WORK"/rootfs/var/lib/apt/lists/* "$WORK"/rootfs/var/log/*.log
    tar --numeric-owner -C "$WORK/rootfs" -cf "$WORK/rootfs.tar" .
    mv "$WORK/rootfs.tar" "$out"
    cleanup_work
    keep_newest 1 "python-$DEBIAN_SUITE-*.rootfs.tar"
    log "made the Python base in $(since "$began")s"
  fi
  BASE_ROOTFS="$out"
}

# The build context the Dockerfile sees (.dockerignore), hashed with the Dockerfile and the base.
project_key() {
  local base="$1"
  {
    basename "$base"
    cat "$REPO/Dockerfile" "$REPO/.dockerignore"
    tar -C "$REPO" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
      --exclude=__pycache__ --exclude='*.pyc' --exclude='*.egg-info' \
      -cf - pyproject.toml requirements.lock README.md src
  } | sha
}

project_archive() { # -> PROJECT_REF, PROJECT_ARCHIVE
  local base="$1" key out ref
  key=$(project_key "$base")
  ref="localhost/ome-selector:$key"
  out="$IMAGE_CACHE/ome-selector-$key.oci.tar"
  if [[ ! -f $out ]]; then
    local began; began=$(date +%s.%N)
    log "building $ref from the Dockerfile with buildah"
    new_work; note_host_paths
    local c; c=$(buildah_ from scratch)
    buildah_ add -q "$c" "$base" / >/dev/null
    buildah_ config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd python3 "$c"
    buildah_ commit -q "$c" localhost/ome-selector-e2e-python:base >/dev/null
    buildah_ rm "$c" >/dev/null

    local args=(--pull=never --layers=false --network=host --build-arg PYTHON_IMAGE=localhost/ome-selector-e2e-python:base)
    [[ $(cgroup_layout) != hybrid ]] || args+=(--runtime=runc)
    local ca=""
    if ca=$(pip_ca_bundle); then
      # Mounted over the base's system bundle, which Debian's pip reads, for the RUN steps only: a bind mount is
      # never part of a layer, and its target already exists, so no empty mount point is left in the image.
      args+=(--volume="$ca:$SYSTEM_CA_BUNDLE:ro")
      log "pip in the build trusts $ca (mounted for RUN steps only)"
    fi
    buildah_ bud "${args[@]}" --tag "$ref" --file "$REPO/Dockerfile" "$REPO" >"$WORK/build.log" 2>&1 \
      || { tail -n 40 "$WORK/build.log" >&2; die "buildah bud failed (log above)"; }
    [[ -z $ca ]] || check_no_build_ca "$ref" "$ca"
    buildah_ push -q "$ref" "oci-archive:$WORK/out.tar:$ref"
    mv "$WORK/out.tar" "$out"
    cleanup_work; remove_created_paths
    # A few versions: checkouts of different branches share the cache (and one `make e2e` runs at a time).
    keep_newest 3 'ome-selector-*.oci.tar'
    log "built $ref in $(since "$began")s"
  else
    touch "$out"  # used now: keep_newest keeps the most recently built or used
  fi
  PROJECT_REF="$ref" PROJECT_ARCHIVE="$out"
}

# The build-time CA must not reach the product image.
check_no_build_ca() {
  local ref="$1" ca="$2" c mnt size leaks
  c=$(buildah_ from --pull=never "$ref")
  mnt=$(buildah_ mount "$c")
  size=$(stat -c %s "$ca")
  leaks=$(find "$mnt" -xdev -type f -size "${size}c" -exec cmp -s "$ca" {} \; -print | sed "s|^$mnt||")
  buildah_ umount "$c" >/dev/null
  buildah_ rm "$c" >/dev/null
  [[ -z $leaks ]] || die "the image carries the build-time CA bundle: $leaks"
}

main() {
  require_host
  ensure_packages "${E2E_PACKAGES[@]}"
  command -v go >/dev/null || unsupported "needs go to build the pause image"
  pause_archive
  base_rootfs
  project_archive "$BASE_ROOTFS"
  echo "$PAUSE_REF $PAUSE_ARCHIVE"
  echo "$PROJECT_REF $PROJECT_ARCHIVE"
}

main "$@"
