# ome-selector developer entry points. `make demo` and `make test` are all a fresh clone needs.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
CLUSTER_DIR := .cluster
# Bytecode goes to a cache outside the work tree (no test writes into it), so it is compiled once, not at each
# start: pytest's assertion rewriting of every test module in each worker (10 s of CPU a worker, 3 s warm),
# and the imports of every CLI process the tests start.
export PYTHONPYCACHEPREFIX ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/ome-selector/pycache
unexport PYTHONDONTWRITEBYTECODE
# pytest-xdist workers for the test targets (0: one process). Each test file runs whole on one worker, and each
# worker that runs an integration test starts its own control plane on free ports. Three keep both cores busy
# while tests wait on the apiserver: `make test` 10.5 -> about 5 minutes warm on the 2-core build machine.
TEST_WORKERS ?= 3
# (make test hands out the integration files first, the slowest, so the quick unit files fill the end.)
PYTEST := $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile

.PHONY: help venv lint typecheck unit packaging integration prometheus test demo bench bench-scale chaos binaries cluster-up cluster-down clean

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]'
	touch $@

venv: $(VENV)/.installed ## create the virtual environment with pinned dependencies

lint: venv ## ruff
	$(BIN)/ruff check src harness tests bench
	$(BIN)/ruff format --check src harness tests bench

typecheck: venv ## mypy --strict (src, harness, tests, bench) and the import-linter contracts
	$(BIN)/mypy
	$(BIN)/lint-imports

binaries: ## build or reuse kube-apiserver, etcd, kubectl and helm (prints their directory)
	@hack/ensure-binaries.sh

unit: venv ## unit tests only
	$(PYTEST) tests/unit

packaging: venv ## the chart (its alerts with promtool), the wheel, the image payload, the CRDs and the krew manifest
	@bindir=$$(hack/ensure-binaries.sh) && promdir=$$(hack/ensure-prometheus.sh) && \
	  OME_SELECTOR_BIN_DIR="$$bindir" PROMETHEUS_BIN_DIR="$$promdir" $(PYTEST) tests/packaging

integration: venv ## integration tests only (against the local control plane; a real Prometheus for the alerts)
	@bindir=$$(hack/ensure-binaries.sh) && promdir=$$(hack/ensure-prometheus.sh) && \
	  OME_SELECTOR_BIN_DIR="$$bindir" PROMETHEUS_BIN_DIR="$$promdir" $(PYTEST) tests/integration

prometheus: ## provide prometheus and promtool from Debian's package (prints their directory)
	@hack/ensure-prometheus.sh

# Integration tests need the control-plane binaries, the alert tests Prometheus (Debian's package,
# hack/ensure-prometheus.sh). Under CI a failure to provide them fails the run; elsewhere the tests skip with one
# loud line (see tests/conftest.py).
test: lint typecheck ## lint, types, unit, packaging and integration tests
	@bindir=$$(hack/ensure-binaries.sh) || { \
	  if [ -n "$$CI" ]; then echo "make test: the control-plane binaries could not be provided (see above); CI needs them" >&2; exit 1; fi; \
	  bindir=""; }; \
	promdir=$$(hack/ensure-prometheus.sh) || { \
	  if [ -n "$$CI" ]; then echo "make test: Prometheus could not be provided (see above); CI needs it" >&2; exit 1; fi; \
	  promdir=""; }; \
	OME_SELECTOR_BIN_DIR="$$bindir" PROMETHEUS_BIN_DIR="$$promdir" $(PYTEST) tests/integration tests/packaging tests/unit

demo: venv ## start a local control plane, apply the samples and show what a user sees
	@bindir=$$(hack/ensure-binaries.sh) && OME_SELECTOR_BIN_DIR="$$bindir" $(PY) -m harness.demo

# BENCH_OUT=run.json: the selection core's figures go to run.json, the catalog impact review's to run-impact.json,
# fan-out and memory to run-fanout.json, the admission latencies to run-admission.json.
bench: venv ## benchmarks (never part of make test): selection core, lint, catalog impact, model files, fan-out and memory, admission latency, recovery, hostile input
	$(PY) -m bench $(if $(BENCH_OUT),--out $(BENCH_OUT))
	$(PY) -m bench.lint
	$(PY) -m bench.impact $(if $(BENCH_OUT),--out $(basename $(BENCH_OUT))-impact.json)
	$(PY) -m bench.modelfiles
	$(PY) -m bench.hostile_models $(if $(BENCH_BEFORE),--before $(BENCH_BEFORE))
	@bindir=$$(hack/ensure-binaries.sh) && export OME_SELECTOR_BIN_DIR="$$bindir" && \
	  $(PY) -m bench.fanout $(if $(BENCH_OUT),--out $(basename $(BENCH_OUT))-fanout.json) && \
	  $(PY) -m bench.admission $(if $(BENCH_OUT),--out $(basename $(BENCH_OUT))-admission.json) && \
	  $(PY) -m bench.recovery $(if $(BENCH_OUT),--out $(basename $(BENCH_OUT))-recovery.json) && \
	  $(PY) -m bench.hostile

# SCALE_SIZES="10000 30000 100000" adds the 100k size (about 23 minutes in all); BENCH_OUT=run.json: the figures
# go to run-scale.json.
SCALE_SIZES ?= 10000 30000
bench-scale: venv ## scale benchmark (never part of make test or make bench): 10k/30k InferenceServices, ~10 min
	@bindir=$$(hack/ensure-binaries.sh) && OME_SELECTOR_BIN_DIR="$$bindir" \
	  $(PY) -m bench.scale --sizes $(SCALE_SIZES) $(if $(BENCH_OUT),--out $(basename $(BENCH_OUT))-scale.json)

# SEED=N STEPS=K replays a schedule (a failure prints its seed); CHECK_EVERY=N checks the invariants every N steps;
# FAULT_SHARE=0.6 draws more faults (soak runs).
SEED ?= 1
STEPS ?= 30
CHECK_EVERY ?= 5
FAULT_SHARE ?= 0.3
chaos: venv ## seeded fault injection: two replicas, faults on the control plane, invariants against the cluster
	@bindir=$$(hack/ensure-binaries.sh) && OME_SELECTOR_BIN_DIR="$$bindir" \
	  $(PY) -m harness.chaos --seed $(SEED) --steps $(STEPS) --check-every $(CHECK_EVERY) --fault-share $(FAULT_SHARE)

cluster-up: venv ## start kube-apiserver + etcd in the background; kubeconfig at .cluster/kubeconfig
	@bindir=$$(hack/ensure-binaries.sh) && OME_SELECTOR_BIN_DIR="$$bindir" $(PY) -m harness.controlplane up --dir $(CLUSTER_DIR)

cluster-down: venv ## stop the background control plane
	@$(PY) -m harness.controlplane down --dir $(CLUSTER_DIR)

clean: cluster-down ## remove the virtual environment and local state
	rm -rf $(VENV) $(CLUSTER_DIR) .mypy_cache .ruff_cache .pytest_cache .hypothesis "$(PYTHONPYCACHEPREFIX)$(CURDIR)"

# --- the deployable product: chart, plain manifests, image ------------------------------
IMAGE ?= ome-selector:dev

.PHONY: manifests chart-lint chart-readme image release-image sbom workflow-lint

manifests: venv ## copy manifests/crds into the chart and render manifests/install.yaml from it (default values)
	@bindir=$$(hack/ensure-binaries.sh) && OME_SELECTOR_BIN_DIR="$$bindir" $(PY) -m harness.chart

chart-readme: venv ## write the chart README's values table and the schema's descriptions and defaults from values.yaml
	$(PY) -m harness.chart_docs

chart-lint: venv ## as chart-testing lints: helm lint --strict per ci/*-values.yaml, yamllint, Chart.yaml schema; docs current
	@bindir=$$(hack/ensure-binaries.sh) && for values in charts/ome-selector/ci/*-values.yaml; do \
	  "$$bindir/helm" lint --strict --kube-version "$$(sed -n 's/^K8S_VERSION="$${K8S_VERSION:-\(.*\)}"/\1/p' hack/ensure-binaries.sh)" \
	  charts/ome-selector --values "$$values" || exit 1; done
	$(BIN)/yamllint --strict -c hack/chart/lintconf.yaml charts/ome-selector/Chart.yaml charts/ome-selector/values.yaml \
	  charts/ome-selector/ci
	$(BIN)/yamale -s hack/chart/chart_schema.yaml charts/ome-selector/Chart.yaml
	$(PY) -m harness.chart_docs --check

image: ## build the container image $(IMAGE) (needs a Docker engine)
	docker build -t $(IMAGE) .

# PLATFORMS=linux/amd64 (default: linux/amd64,linux/arm64); PUSH=1 pushes the manifest list to $(RELEASE_IMAGE).
RELEASE_IMAGE ?= ghcr.io/ome-selector/ome-selector:$(shell sed -n 's/^__version__ = "\(.*\)"/\1/p' src/ome_selector/__init__.py)
release-image: ## multi-arch image with buildah (OCI labels source/revision/created), an OCI archive in dist/
	IMAGE=$(RELEASE_IMAGE) hack/release/build-image.sh

sbom: ## CycloneDX SBOM of the image's Python environment (requirements.lock) into dist/
	hack/release/sbom.sh

workflow-lint: ## actionlint on .github/workflows (installed from the Go module proxy into a temporary GOBIN)
	hack/release/actionlint.sh

# --- make e2e: the image, the chart and the operator's pods in a kind cluster (Docker, else podman) ---

.PHONY: e2e e2e-up e2e-down

e2e: venv ## kind cluster (Docker, else podman), the image loaded, the chart, the e2e suite, teardown
	@PYTHON=$(abspath $(PY)) hack/e2e/kind.sh e2e

e2e-up: venv ## the same kind cluster with the operator installed, left running (prints the KUBECONFIG line)
	@PYTHON=$(abspath $(PY)) hack/e2e/kind.sh up

e2e-down: ## delete the e2e-up cluster and restore the host
	@hack/e2e/kind.sh down
