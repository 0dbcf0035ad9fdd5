"""The fields the CRDs declare, for lint's unknown-field finding (SPEC §11 ``SCHM001``), generated from the
project's CRDs (``manifests/crds/``) and OME's (``tests/data/ome-crds/``) into the package's
``ome_selector/api/crdfields.json``.

The product cannot read OME's 5 MB of CRDs at run time (they are test data), so it ships this digest: for each
kind a tree of the declared property names, each distinct subtree once (OME's pod templates repeat the same
container schema many times). ``python -m harness.crdfields`` rewrites the file;
``tests/unit/api/test_crdfields.py`` fails while it differs from what the CRDs give.

Each node is ``{"p": {name: node}, "i": node, "v": node, "open": 1}``, by index into ``nodes``: ``p`` the
declared properties, ``i`` the schema of array items, ``v`` that of map values (``additionalProperties``),
``open`` set where unknown fields are kept (``x-kubernetes-preserve-unknown-fields``, or
``additionalProperties: true``). The two schemas are merged: a field is declared when either declares it, and
a node is open as OME's schema has it where OME's has the node (OME's are the strict structural schemas a
cluster running OME enforces; ours keep what the product does not read), else as ours has it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.crds import CRD_DIR, OME_CRD_DIR, crd_documents

__all__ = ["OUTPUT", "generate"]

OUTPUT = Path(__file__).resolve().parents[1] / "src" / "ome_selector" / "api" / "crdfields.json"


def _schemas(directory: Path) -> dict[str, dict[str, Any]]:
    """The v1beta1 ``openAPIV3Schema`` of each kind of the CRDs in ``directory``."""
    schemas: dict[str, dict[str, Any]] = {}
    for document in crd_documents(directory):
        for version in document["spec"]["versions"]:
            if version["name"] == "v1beta1":
                schemas[document["spec"]["names"]["kind"]] = version["schema"]["openAPIV3Schema"]
    return schemas


def _open(schema: dict[str, Any]) -> bool:
    return (
        bool(schema.get("x-kubernetes-preserve-unknown-fields")) or schema.get("additionalProperties") is True
    )


def _sub(schema: dict[str, Any] | None, key: str) -> dict[str, Any] | None:
    value = schema.get(key) if schema is not None else None
    return value if isinstance(value, dict) else None


class _Nodes:
    """Distinct nodes, each kept once, by index."""

    def __init__(self) -> None:
        self.nodes: list[dict[str, Any]] = []
        self.index: dict[str, int] = {}

    def merge(self, ome: dict[str, Any] | None, ours: dict[str, Any] | None) -> int:
        node: dict[str, Any] = {}
        if _open(ome if ome is not None else ours or {}):
            node["open"] = 1
        ome_properties = _sub(ome, "properties") or {}
        our_properties = _sub(ours, "properties") or {}
        if ome_properties or our_properties:
            node["p"] = {
                name: self.merge(ome_properties.get(name), our_properties.get(name))
                for name in sorted(ome_properties.keys() | our_properties.keys())
            }
        for key, part in (("items", "i"), ("additionalProperties", "v")):
            if _sub(ome, key) is not None or _sub(ours, key) is not None:
                node[part] = self.merge(_sub(ome, key), _sub(ours, key))
        text = json.dumps(node, sort_keys=True)
        if text not in self.index:
            self.index[text] = len(self.nodes)
            self.nodes.append(node)
        return self.index[text]


def generate() -> str:
    """The text of ``crdfields.json`` for the CRDs as they are now."""
    ome, ours = _schemas(OME_CRD_DIR), _schemas(CRD_DIR)
    nodes = _Nodes()
    kinds = {kind: nodes.merge(ome.get(kind), ours.get(kind)) for kind in sorted(ome.keys() | ours.keys())}
    return json.dumps({"kinds": kinds, "nodes": nodes.nodes}, sort_keys=True, separators=(",", ":")) + "\n"


if __name__ == "__main__":
    OUTPUT.write_text(generate(), encoding="utf-8")
