"""OME's published data, vendored under ``tests/data`` twice: the catalog (``config/runtimes``,
``config/models``) and the CRDs of the five kinds (``config/crd/full``) at two commits of OME's main branch.

The catalog-wide tests (explain, lint, the beside-OME install checks) run on every snapshot of
:data:`SNAPSHOTS`; what differs between them (how many objects, how many findings) is written per snapshot
where the tests assert it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["OME_5E4857E", "OME_CFA05C6", "SNAPSHOTS", "V13_CRD_PROFILES", "OmeSnapshot"]

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"


@dataclass(frozen=True, slots=True)
class OmeSnapshot:
    """One vendored copy of OME's data: ``id`` is the short commit (also the pytest id)."""

    id: str
    commit: str
    #: The catalog directory, holding ``runtimes/`` and ``models/`` as OME's ``config/`` does.
    catalog: Path
    #: The directory of OME's five CRDs.
    crds: Path
    #: The integration suite's name for a control plane with these CRDs (the ``crd_profile`` fixture).
    profile: str


OME_CFA05C6 = OmeSnapshot(
    "cfa05c6",
    "cfa05c6967648a1bd62e2d96221f06aa1dec95fe",
    DATA / "ome-catalog",
    DATA / "ome-crds",
    "ome",
)
"""The first snapshot (before OME's v1.3 InferenceService fields)."""

OME_5E4857E = OmeSnapshot(
    "5e4857e",
    "5e4857e087fe5613c82c6d931cbed281a4a957f9",
    DATA / "ome-2026-08-21" / "catalog",
    DATA / "ome-2026-08-21" / "crds",
    "ome-5e4857e",
)
"""OME's main of 2026-08-21 (through PR #782): five more runtimes, two more models; CRDs with
``spec.deploymentMode``, ``spec.runtime.autoSync`` (default true) and ``spec.runtime.revision``."""

SNAPSHOTS = (OME_CFA05C6, OME_5E4857E)

V13_CRD_PROFILES = frozenset({"ours", OME_5E4857E.profile})
"""The CRD profiles whose InferenceService schema holds OME v1.3's fields (``spec.runtime.autoSync``,
``spec.deploymentMode``): ours, and OME's since they were added; OME's at cfa05c6 predate them."""


#: The four runtime names both snapshots define in two files each: (name, earlier file, later file) under
#: ``runtimes/srt/``, in kubectl's walk order.
DUPLICATES = (
    ("srt-qwen2-5-32b-instruct", "Qwen/Qwen2.5-32B-Instruct-rt.yaml", "Qwen/qwen2-5-32b-instruct-rt.yaml"),
    ("srt-qwen3-embedding-0-6b", "Qwen/Qwen3-Embedding-0.6B-rt.yaml", "Qwen/qwen3-embedding-0-6b-rt.yaml"),
    (
        "srt-llama-3-2-11b-vision-instruct",
        "meta/llama-3-2-11b-vision-instruct-rt.yaml",
        "unsloth/llama-3-2-11b-vision-instruct-rt.yaml",
    ),
    (
        "srt-mixtral-8x7b-instruct",
        "mistralai/mixtral-8x7b-instruct-v0-1-rt.yaml",
        "mixtral-8x7b-instruct-rt.yaml",
    ),
)


def duplicate_warnings(directory: str) -> list[str]:
    """The warnings explain and lint print for the four runtimes defined twice, the catalog named
    ``directory`` (SPEC §6)."""
    return [
        f"Warning: ClusterServingRuntime {name} is defined twice: in {directory}/runtimes/srt/{first} and in "
        f"{directory}/runtimes/srt/{last}; the last one is used, as kubectl apply leaves it"
        for name, first, last in DUPLICATES
    ]
