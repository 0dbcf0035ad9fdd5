"""How large an object the product reads (SPEC §8 bounded resources): lengths only, named by field."""

from __future__ import annotations

from typing import Any

import pytest

from ome_selector.api.bounds import MAX_FORMAT_ENTRIES, MAX_PIPELINE_COMPONENTS, oversized

ENTRY = {"modelFormat": {"name": "safetensors"}}


def _pipeline(components: int) -> dict[str, Any]:
    return {"className": "P", "additionalComponents": {f"c{i}": {"library": "l"} for i in range(components)}}


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ({"supportedModelFormats": [ENTRY] * MAX_FORMAT_ENTRIES}, None),
        (
            {"supportedModelFormats": [ENTRY] * (MAX_FORMAT_ENTRIES + 1)},
            "spec.supportedModelFormats has 1001 entries, more than the 1000 ome-selector reads",
        ),
        ({"diffusionPipeline": _pipeline(MAX_PIPELINE_COMPONENTS)}, None),
        (
            {"diffusionPipeline": _pipeline(MAX_PIPELINE_COMPONENTS + 1)},
            "its diffusion pipelines have 1001 additionalComponents, more than the 1000 ome-selector reads",
        ),
        (
            {"supportedModelFormats": [ENTRY | {"diffusionPipeline": _pipeline(2)}] * 501},
            "its diffusion pipelines have 1002 additionalComponents, more than the 1000 ome-selector reads",
        ),
        ({"modelParameterSize": "1" * 1_000_000, "supportedModelFormats": "not a list"}, None),
        ({"diffusionPipeline": {"additionalComponents": ["not", "a", "mapping"]}}, None),
    ],
    ids=["entries at the limit", "entries over", "components at", "components over", "summed", "odd", "odd2"],
)
def test_oversized_names_the_field_over_its_limit(spec: dict[str, Any], reason: str | None) -> None:
    assert oversized({"spec": spec}) == reason


def test_a_body_without_a_spec_is_never_oversized() -> None:
    assert oversized({}) is None
    assert oversized({"spec": ["x"] * 5000}) is None
