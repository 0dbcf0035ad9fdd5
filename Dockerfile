# syntax=docker/dockerfile:1
# ome-selector operator image: `make image` (IMAGE=ome-selector:dev). Two stages: the first installs the pinned
# dependencies into a virtual environment, every file checked against its hash in requirements.lock (generated
# from constraints.txt; CONTRIBUTING.md says how), then the project itself, built offline with the locked
# setuptools; the second is a clean slim Python with only that environment, run as a non-root user. No
# compilers or build tools are in it, and no package installer: the environment's pip, setuptools and wheel go,
# so do the base's own pip and the pip wheel ensurepip would install. hf-xet, the Hub client's native Xet
# downloader, goes too: only headers are ever read, over plain HTTP range requests (SPEC §10).
#
# The base is pinned by digest: python:3.11-slim-bookworm as published on 2026-08-24 (the digest is recorded
# from a public record of that date, not pulled here). Refresh it with
#   docker buildx imagetools inspect python:3.11-slim-bookworm --format '{{json .Manifest.Digest}}'
# (or `crane digest python:3.11-slim-bookworm`) and keep the tag in front of the digest for readers;
# `--build-arg PYTHON_IMAGE=<image>` overrides it for one build.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm@sha256:2e32f7d302adc1c37428355c1e646897c0c53f4fd60b6a551245fb90ee129f91

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY pyproject.toml requirements.lock README.md ./
COPY src ./src
RUN python -m venv /opt/ome-selector \
 && /opt/ome-selector/bin/pip install --require-hashes --requirement requirements.lock \
 && /opt/ome-selector/bin/pip install --no-deps --no-build-isolation --no-index . \
 && /opt/ome-selector/bin/pip uninstall --yes hf-xet pip setuptools wheel \
 && find /opt/ome-selector -name '__pycache__' -type d -prune -exec rm -rf {} +

FROM ${PYTHON_IMAGE}
# The release version: ome_selector.__version__ (tests/packaging/test_version.py keeps the two equal).
ARG VERSION=0.1.0
# Where and from what the image was built: hack/release/build-image.sh passes the commit and its time (RFC 3339).
ARG SOURCE=https://github.com/ome-selector/ome-selector
ARG REVISION=unknown
ARG CREATED=1970-01-01T00:00:00Z
LABEL org.opencontainers.image.title="ome-selector" \
      org.opencontainers.image.description="Runtime selection for OME InferenceServices (operator and admission webhook)" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/ome-selector/bin:$PATH \
    HOME=/tmp
RUN groupadd --gid 65532 nonroot \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin nonroot
COPY --from=build /opt/ome-selector /opt/ome-selector
# The base's pip (and the wheels of ensurepip), wherever this base keeps them; then check that it is gone.
RUN for d in /usr/local/lib/python3*/site-packages /usr/local/lib/python3*/ensurepip/_bundled \
      /usr/lib/python3/dist-packages /usr/lib/python3*/ensurepip/_bundled; do rm -rf "$d"/pip*; done \
 && rm -f /usr/local/bin/pip* /usr/bin/pip* \
 && ! python3 -c 'import pip' 2>/dev/null
USER 65532:65532
EXPOSE 8080 9443
ENTRYPOINT ["ome-selector", "run"]
