"""The project's CRDs (``manifests/crds/``, the one copy) and OME's own (``tests/data/ome-crds/``, vendored):
read them, and install them into a cluster.

The operator never reads these files (the chart and the plain install ship them), so they live with the
harness: the local control plane installs ours, the integration suite's second CRD profile installs OME's
(SPEC §0: beside OME), and the tests check them.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

__all__ = ["CRD_DIR", "CRD_NAMES", "OME_CRD_DIR", "crd_documents", "install_crds", "ome_crd_documents"]

CRD_DIR = Path(__file__).resolve().parents[1] / "manifests" / "crds"
OME_CRD_DIR = Path(__file__).resolve().parents[1] / "tests" / "data" / "ome-crds"
"""OME's CRDs of the same five kinds as OME publishes them (config/crd/full at commit cfa05c69)."""
CRD_NAMES: tuple[str, ...] = (
    "basemodels.ome.io",
    "clusterbasemodels.ome.io",
    "clusterservingruntimes.ome.io",
    "inferenceservices.ome.io",
    "servingruntimes.ome.io",
)
"""The names of the shipped CRDs, in file-name order."""

ESTABLISH_TIMEOUT_S = 60.0
# libyaml when present: OME's CRDs are 5 MB of YAML, 25 s for the pure-Python loader on a busy machine.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def crd_documents(directory: Path = CRD_DIR) -> list[dict[str, Any]]:
    """Every CRD of ``directory`` (default: the shipped ones) as a dict, ready for
    ``create_custom_resource_definition``; sorted by file name.

    Raises ``RuntimeError`` when the files do not hold exactly the expected CRDs, so a broken checkout fails
    loudly instead of installing a partial set.
    """
    documents: list[dict[str, Any]] = []
    for file in sorted(directory.glob("*.yaml")):
        for document in yaml.load_all(file.read_text(encoding="utf-8"), Loader=_LOADER):
            if document is None:
                continue
            if not isinstance(document, dict) or document.get("kind") != "CustomResourceDefinition":
                raise RuntimeError(f"{file.name}: not a CustomResourceDefinition")
            documents.append(document)
    names = tuple(sorted(str(document["metadata"]["name"]) for document in documents))
    if names != CRD_NAMES:
        raise RuntimeError(f"expected the CRDs {list(CRD_NAMES)}, found {list(names)}")
    return documents


def ome_crd_documents(directory: Path = OME_CRD_DIR) -> list[dict[str, Any]]:
    """OME's five CRDs (default ``tests/data/ome-crds/``; every snapshot in :mod:`harness.ome_data`), as
    :func:`crd_documents` reads ours."""
    return crd_documents(directory)


def install_crds(kubeconfig: Path, documents: list[dict[str, Any]] | None = None) -> None:
    """Create (or replace) every CRD of ``documents`` (default: ours); wait until they are served."""
    api_client = config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
    with api_client:
        # Plain dict bodies, and answers read as JSON (_preload_content=False): the typed client models would
        # only re-encode the same YAML, and decoding OME's 1.7 MB schemas into them takes seconds each.
        extensions: Any = client.ApiextensionsV1Api(api_client)

        def read(name: str) -> dict[str, Any]:
            response = extensions.read_custom_resource_definition(name, _preload_content=False)
            body: dict[str, Any] = json.loads(response.data)
            return body

        names = []
        for document in crd_documents() if documents is None else documents:
            name = document["metadata"]["name"]
            names.append(name)
            try:
                extensions.create_custom_resource_definition(document, _preload_content=False)
            except ApiException as error:
                if error.status != 409:
                    raise
                version = read(name)["metadata"]["resourceVersion"]
                metadata = {**document["metadata"], "resourceVersion": version}
                extensions.replace_custom_resource_definition(
                    name, {**document, "metadata": metadata}, _preload_content=False
                )
        deadline = time.monotonic() + ESTABLISH_TIMEOUT_S
        pending = set(names)
        while pending:
            for name in sorted(pending):
                conditions = (read(name).get("status") or {}).get("conditions") or []
                if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                    pending.discard(name)
            if pending:
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"CRDs not Established after {ESTABLISH_TIMEOUT_S:.0f}s: {sorted(pending)}"
                    )
                time.sleep(0.1)
