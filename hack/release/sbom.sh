#!/usr/bin/env bash
# A CycloneDX SBOM of the image's Python environment (`make sbom`): requirements.lock (every runtime dependency,
# pinned with hashes: what the Dockerfile installs) and the project itself, installed into a throw-away virtual
# environment exactly as the Dockerfile does, then described by cyclonedx-py (PyPI package cyclonedx-bom, in a
# second throw-away environment so it never enters the first). Writes dist/ome-selector-<version>.cdx.json.
#
# Environment: PYTHON (default python3; the image's is 3.11), CYCLONEDX_BOM (the cyclonedx-bom version pin).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
PYTHON=${PYTHON:-python3}
CYCLONEDX_BOM=${CYCLONEDX_BOM:-7.5.0}
VERSION=$(sed -n 's/^__version__ = "\(.*\)"/\1/p' "$REPO/src/ome_selector/__init__.py")
OUT="$REPO/dist/ome-selector-$VERSION.cdx.json"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
"$PYTHON" -m venv "$WORK/image"
"$WORK/image/bin/pip" install --quiet --require-hashes --requirement "$REPO/requirements.lock"
"$WORK/image/bin/pip" install --quiet --no-deps --no-build-isolation --no-index "$REPO"
# The Dockerfile removes the installers from the image: so does the SBOM's environment.
"$WORK/image/bin/pip" uninstall --quiet --yes pip setuptools wheel

"$PYTHON" -m venv "$WORK/tool"
"$WORK/tool/bin/pip" install --quiet "cyclonedx-bom==$CYCLONEDX_BOM"
mkdir -p "$REPO/dist"
"$WORK/tool/bin/cyclonedx-py" environment --output-reproducible --output-format JSON --output-file "$OUT" \
  --pyproject "$REPO/pyproject.toml" --mc-type application "$WORK/image/bin/python"
echo "sbom: wrote $OUT ($(grep -c '"bom-ref"' "$OUT") components)" >&2
