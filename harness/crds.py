"""The project's CRDs (``manifests/crds/``, the one copy) and OME's own (``tests/data/ome-crds/``, vendored):
read them, and install them into a cluster.

The operator never reads these files (the chart and the plain install ship them), so they live with the
harness: the local control plane installs ours, the integration suite's second CRD profile installs OME's
(SPEC §0: beside OME), and the tests check them.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

import yaml
from kubernetes import config
from kubernetes.client.exceptions import ApiException

__all__ = [
    "CRD_DIR",
    "CRD_NAMES",
    "OME_CRD_DIR",
    "crd_documents",
    "install_crds",
    "ome_crd_documents",
    "wait_served",
]

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

#: The CRD files, parsed, by their content (:func:`_documents_as_json`).
JSON_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ome-selector" / "crd-json"
ESTABLISH_TIMEOUT_S = 120.0  # OME's schemas on a saturated 2-core machine took over 60 s
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
# libyaml when present: OME's CRDs are 5 MB of YAML, 25 s for the pure-Python loader on a busy machine.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def crd_documents(directory: Path = CRD_DIR) -> list[dict[str, Any]]:
    """Every CRD of ``directory`` (default: the shipped ones) as a dict, ready for
    ``create_custom_resource_definition``; sorted by file name. Each call returns fresh dicts.

    Raises ``RuntimeError`` when the files do not hold exactly the expected CRDs, so a broken checkout fails
    loudly instead of installing a partial set.
    """
    files = tuple(sorted(directory.glob("*.yaml")))
    return [
        json.loads(text) for text in _documents_as_json(files, tuple(f.stat().st_mtime_ns for f in files))
    ]


@functools.lru_cache(maxsize=8)
def _documents_as_json(files: tuple[Path, ...], _mtimes: tuple[int, ...]) -> tuple[str, ...]:
    """The CRDs of ``files``, each as JSON text, parsed once per process and content, and kept on disk by
    content (JSON_CACHE): OME's 5 MB of YAML take seconds to construct, and every test worker reads them."""
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.name.encode() + b"\0" + file.read_bytes() + b"\0")
    cached = JSON_CACHE / f"{digest.hexdigest()[:32]}.json"
    with contextlib.suppress(OSError, ValueError):
        kept: list[str] = json.loads(cached.read_text(encoding="utf-8"))
        os.utime(cached)  # its last use, for the pruning
        return tuple(kept)
    texts = _parsed_as_json(files)
    with contextlib.suppress(OSError):
        JSON_CACHE.mkdir(parents=True, exist_ok=True)
        week_ago = time.time() - 7 * 24 * 3600
        for other in JSON_CACHE.glob("*.json"):
            if other.stat().st_mtime < week_ago:  # CRDs of other branches or commits, unused for a week
                other.unlink(missing_ok=True)
        partial = cached.with_name(f"{cached.name}.{os.getpid()}")
        partial.write_text(json.dumps(list(texts)), encoding="utf-8")
        partial.replace(cached)  # whole or not at all, for a reader in another worker
    return texts


def _parsed_as_json(files: tuple[Path, ...]) -> tuple[str, ...]:
    documents: list[dict[str, Any]] = []
    for file in files:
        for document in yaml.load_all(file.read_text(encoding="utf-8"), Loader=_LOADER):
            if document is None:
                continue
            if not isinstance(document, dict) or document.get("kind") != "CustomResourceDefinition":
                raise RuntimeError(f"{file.name}: not a CustomResourceDefinition")
            documents.append(document)
    names = tuple(sorted(str(document["metadata"]["name"]) for document in documents))
    if names != CRD_NAMES:
        raise RuntimeError(f"expected the CRDs {list(CRD_NAMES)}, found {list(names)}")
    return tuple(json.dumps(document) for document in documents)


def ome_crd_documents(directory: Path = OME_CRD_DIR) -> list[dict[str, Any]]:
    """OME's five CRDs (default ``tests/data/ome-crds/``; every snapshot in :mod:`harness.ome_data`), as
    :func:`crd_documents` reads ours."""
    return crd_documents(directory)


def install_crds(kubeconfig: Path, documents: list[dict[str, Any]] | None = None) -> None:
    """Create (or replace) every CRD of ``documents`` (default: ours); wait until they are served."""
    api_client = config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
    with api_client:
        names = []
        for document in crd_documents() if documents is None else documents:
            name = document["metadata"]["name"]
            names.append(name)
            try:
                _call(api_client, "POST", CRD_PATH, document)
            except ApiException as error:
                if error.status != 409:
                    raise
                version = _call(api_client, "GET", f"{CRD_PATH}/{name}")["metadata"]["resourceVersion"]
                metadata = {**document["metadata"], "resourceVersion": version}
                _call(api_client, "PUT", f"{CRD_PATH}/{name}", {**document, "metadata": metadata})
        _wait_established(api_client, set(names))


def _call(api_client: Any, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    """One request with plain JSON bodies both ways: the typed client would validate OME's 1.7 MB schemas
    into its models before sending them, and decode them again from every answer, seconds of CPU per CRD."""
    _, url, headers, _, _ = api_client.param_serialize(
        method,
        path,
        header_params={"Accept": "application/json", "Content-Type": "application/json"},
        auth_settings=["BearerToken"],
    )
    response = api_client.call_api(method, url, header_params=headers, body=body)
    response.read()
    if not 200 <= response.status < 300:
        raise ApiException(http_resp=response)
    answer: dict[str, Any] = json.loads(response.data)
    return answer


def wait_served(kubeconfig: Path, documents: list[dict[str, Any]]) -> None:
    """Wait until the apiserver's discovery lists every served version of the kinds of ``documents``: an
    apiserver that found the CRDs in etcd (harness.etcd_seeds) installs their handlers a moment after it is
    ready."""
    wanted = {
        (f"/apis/{document['spec']['group']}/{version['name']}", document["spec"]["names"]["plural"])
        for document in documents
        for version in document["spec"]["versions"]
        if version.get("served", True)
    }
    api_client = config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
    deadline = time.monotonic() + ESTABLISH_TIMEOUT_S
    with api_client:
        while wanted:
            path = min(wanted)[0]
            try:
                served = {resource["name"] for resource in _call(api_client, "GET", path)["resources"]}
            except ApiException as error:
                if error.status != 404:
                    raise
                served = set()
            wanted -= {(p, plural) for p, plural in wanted if p == path and plural in served}
            if wanted and time.monotonic() > deadline:
                raise TimeoutError(f"not served after {ESTABLISH_TIMEOUT_S:.0f}s: {sorted(wanted)}")
            if wanted:
                time.sleep(0.1)


def _established(crd: dict[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def _wait_established(api_client: Any, names: set[str]) -> None:
    """Wait on a watch of the CRDs (its first events are their current states) until each of ``names`` is
    Established: one answer per change, where a poll would re-read every 1.7 MB schema ten times a second."""
    pending = set(names)
    deadline = time.monotonic() + ESTABLISH_TIMEOUT_S
    while pending:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"CRDs not Established after {ESTABLISH_TIMEOUT_S:.0f}s: {sorted(pending)}")
        _, url, headers, _, _ = api_client.param_serialize(
            "GET",
            CRD_PATH,
            query_params=[("watch", "true"), ("timeoutSeconds", str(max(1, int(left))))],
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        response = api_client.call_api("GET", url, header_params=headers, _request_timeout=left + 5)
        try:
            if response.status != 200:
                response.read()
                raise ApiException(http_resp=response)
            buffered = b""
            for chunk in response.response.stream(2**16, decode_content=True):
                buffered += chunk
                *lines, buffered = buffered.split(b"\n")
                for line in lines:
                    event = json.loads(line) if line.strip() else {}
                    crd = event.get("object") or {}
                    if _established(crd):
                        pending.discard((crd.get("metadata") or {}).get("name"))
                if not pending:
                    break
        finally:
            response.response.release_conn()
