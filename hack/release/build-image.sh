#!/usr/bin/env bash
# The release image for every platform, with buildah (`make release-image`): one build of the unchanged Dockerfile
# per platform, joined in a manifest list, labelled with where and from what it was built
# (org.opencontainers.image.source/revision/created, from git). Writes dist/ome-selector-<version>.oci.tar (an OCI
# archive holding every platform) and, with PUSH=1, pushes the list to $IMAGE.
#
#   IMAGE=ghcr.io/ome-selector/ome-selector:0.1.0 PLATFORMS=linux/amd64,linux/arm64 hack/release/build-image.sh
#
# Environment: IMAGE (required), PLATFORMS (default linux/amd64,linux/arm64), SOURCE (the repository URL), PUSH=1,
# BUILDAH_ARGS (more `buildah build` arguments, e.g. --runtime=runc on a hybrid cgroup layout). A platform other
# than the host's needs a qemu-user binfmt handler (Debian: qemu-user-static and binfmt-support; the CI workflow
# uses docker/setup-qemu-action); without one this says so and stops before building anything.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
: "${IMAGE:?IMAGE must name the image, e.g. ghcr.io/ome-selector/ome-selector:0.1.0}"
PLATFORMS=${PLATFORMS:-linux/amd64,linux/arm64}
SOURCE=${SOURCE:-https://github.com/ome-selector/ome-selector}
VERSION=$(sed -n 's/^__version__ = "\(.*\)"/\1/p' "$REPO/src/ome_selector/__init__.py")
REVISION=$(git -C "$REPO" rev-parse HEAD)
# The commit's time, not the build's: two builds of one commit carry the same labels.
CREATED=$(TZ=UTC0 git -C "$REPO" show -s --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ HEAD)
OUT="$REPO/dist/ome-selector-$VERSION.oci.tar"

die() { echo "build-image: $*" >&2; exit 1; }
command -v buildah >/dev/null || die "needs buildah (Debian: apt-get install buildah)"
[[ -z $(git -C "$REPO" status --porcelain --untracked-files=no) ]] \
  || echo "build-image: warning: the work tree has uncommitted changes; the revision label is HEAD's" >&2

host_arch() { case $(uname -m) in x86_64) echo amd64 ;; aarch64) echo arm64 ;; *) uname -m ;; esac; }
qemu_name() { case $1 in amd64) echo x86_64 ;; arm64) echo aarch64 ;; *) echo "$1" ;; esac; }

IFS=, read -ra platforms <<<"$PLATFORMS"
for platform in "${platforms[@]}"; do
  arch=${platform#linux/}
  [[ $platform == linux/* ]] || die "only linux platforms are built, not $platform"
  if [[ $arch != "$(host_arch)" && ! -e /proc/sys/fs/binfmt_misc/qemu-$(qemu_name "$arch") ]]; then
    die "cannot build $platform on this $(host_arch) host: no qemu-user binfmt handler" \
      "(/proc/sys/fs/binfmt_misc/qemu-$(qemu_name "$arch")); install qemu-user-static, or set PLATFORMS"
  fi
done

manifest="localhost/ome-selector-release:$VERSION"
buildah manifest rm "$manifest" >/dev/null 2>&1 || true
buildah manifest create "$manifest" >/dev/null
for platform in "${platforms[@]}"; do
  echo "build-image: building $platform (revision $REVISION, created $CREATED)" >&2
  # shellcheck disable=SC2086 # BUILDAH_ARGS is a list of words
  buildah build --platform "$platform" --manifest "$manifest" --layers \
    --build-arg "VERSION=$VERSION" --build-arg "SOURCE=$SOURCE" \
    --build-arg "REVISION=$REVISION" --build-arg "CREATED=$CREATED" \
    ${BUILDAH_ARGS:-} --file "$REPO/Dockerfile" "$REPO"
done
mkdir -p "$REPO/dist"
rm -f "$OUT"
buildah manifest push --all "$manifest" "oci-archive:$OUT:$IMAGE"
echo "build-image: wrote $OUT ($PLATFORMS)" >&2
if [[ ${PUSH:-} == 1 ]]; then
  buildah manifest push --all "$manifest" "docker://$IMAGE"
  echo "build-image: pushed $IMAGE" >&2
fi
