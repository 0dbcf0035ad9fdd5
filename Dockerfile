# syntax=docker/dockerfile:1
# ome-selector operator image: `make image` (IMAGE=ome-selector:dev). Two stages: the first builds the project's
# wheel and installs it with its pinned dependencies (constraints.txt) into a virtual environment; the second is a
# clean slim Python with only that environment, run as a non-root user. No compilers or build tools are in it.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY pyproject.toml constraints.txt README.md ./
COPY manifests/crds ./manifests/crds
COPY src ./src
# The wheel carries the CRDs as package data (src/ome_selector/crd_manifests links to manifests/crds).
RUN pip wheel --no-deps --wheel-dir /wheels . \
 && python -m venv /opt/ome-selector \
 && /opt/ome-selector/bin/pip install --constraint constraints.txt /wheels/ome_selector-*.whl \
 && /opt/ome-selector/bin/pip uninstall --yes pip setuptools \
 && find /opt/ome-selector -name '__pycache__' -type d -prune -exec rm -rf {} +

FROM ${PYTHON_IMAGE}
# The release version: ome_selector.__version__ (tests/packaging/test_version.py keeps the two equal).
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="ome-selector" \
      org.opencontainers.image.description="Runtime selection for OME InferenceServices (operator and admission webhook)" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/ome-selector/bin:$PATH \
    HOME=/tmp
RUN groupadd --gid 65532 nonroot \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin nonroot
COPY --from=build /opt/ome-selector /opt/ome-selector
USER 65532:65532
EXPOSE 8080 9443
ENTRYPOINT ["ome-selector", "run"]
