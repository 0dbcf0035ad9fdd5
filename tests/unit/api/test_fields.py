"""The fields the CRDs declare (SPEC §11 SCHM001): the packaged digest is what the CRDs give, unknown fields
are found with the closest declared name, and hostile bodies cost bounded work."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from harness.crdfields import OUTPUT, generate
from ome_selector.api.fields import MAX_UNKNOWN, UnknownField, declared_kinds, unknown_fields
from ome_selector.api.manifests import read_manifest


def test_the_packaged_digest_is_what_the_crds_give() -> None:
    """Regenerate with ``python -m harness.crdfields`` after changing a CRD."""
    assert OUTPUT.read_text(encoding="utf-8") == generate()


def test_every_kind_is_declared() -> None:
    assert declared_kinds() == {
        "BaseModel",
        "ClusterBaseModel",
        "ClusterServingRuntime",
        "InferenceService",
        "ServingRuntime",
    }


@dataclass(frozen=True)
class Case:
    id: str
    body: dict[str, Any]
    found: list[UnknownField]


def runtime(spec: dict[str, Any], kind: str = "ClusterServingRuntime") -> dict[str, Any]:
    return {"apiVersion": "ome.io/v1beta1", "kind": kind, "metadata": {"name": "r"}, "spec": spec}


CASES = [
    Case("a clean runtime", runtime({"supportedModelFormats": [{"modelFormat": {"name": "x"}}]}), []),
    Case(
        "a missing s",
        runtime({"supportedModelFormat": [{"modelFormat": {"name": "x"}}]}),
        [UnknownField(("spec", "supportedModelFormat"), "supportedModelFormats")],
    ),
    Case(
        "letter case",
        runtime({"supportedModelFormats": [{"autoselect": True}]}, kind="ServingRuntime"),
        [UnknownField(("spec", "supportedModelFormats", 0, "autoselect"), "autoSelect")],
    ),
    Case(
        "in a size range, and nothing close",
        runtime({"modelSizeRange": {"mx": "8B", "zzzzzz": 1}}),
        [
            UnknownField(("spec", "modelSizeRange", "mx"), "max"),
            UnknownField(("spec", "modelSizeRange", "zzzzzz"), None),
        ],
    ),
    Case(
        "in OME's container schema (our CRD keeps containers as written)",
        runtime({"containers": [{"name": "c", "imagee": "x"}]}),
        [UnknownField(("spec", "containers", 0, "imagee"), "image")],
    ),
    Case(
        "a top-level typo",
        {**runtime({}), "sepc": {}},
        [UnknownField(("sepc",), "spec")],
    ),
    Case(
        "metadata, status and map values are not looked into",
        {
            **runtime({"engineConfig": {"annotations": {"anything": "x"}}}),
            "metadata": {"name": "r", "whatever": 1},
            "status": {"free": 1},
        },
        [],
    ),
    Case(
        "a field only our CRD declares (OME v1.3's deploymentMode)",
        {
            "apiVersion": "ome.io/v1beta1",
            "kind": "InferenceService",
            "spec": {"deploymentMode": "RawDeployment"},
        },
        [],
    ),
    Case("another kind", {"apiVersion": "v1", "kind": "ConfigMap", "data": {"x": "y"}, "sepc": 1}, []),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_unknown_fields(case: Case) -> None:
    assert sorted(unknown_fields(case.body), key=repr) == sorted(case.found, key=repr)


def test_many_unknown_fields_are_cut() -> None:
    body = runtime({f"field{index}": index for index in range(10_000)})
    assert len(unknown_fields(body)) == MAX_UNKNOWN


def test_aliases_do_not_multiply_the_work() -> None:
    """A container named nine times whose env var is named nine times, each with a typo: visited once, so
    one finding, not 81 (and a deeper tree of aliases costs its size, not its paths)."""
    text = """\
env: &env {name: E, valeu: x}
container: &container {name: c, env: [*env, *env, *env, *env, *env, *env, *env, *env, *env]}
"""
    text += "apiVersion: ome.io/v1beta1\nkind: ClusterServingRuntime\nmetadata: {name: r}\n"
    text += "spec: {containers: [" + ", ".join(["*container"] * 9) + "]}\n"
    (item,) = read_manifest(text)
    found = [unknown for unknown in unknown_fields(item.body) if unknown.parts[0] == "spec"]
    assert found == [UnknownField(("spec", "containers", 0, "env", 0, "valeu"), "value")]
