"""What `--apply` and the operator write onto a model: only the learned fields its spec lacks (SPEC §10).

Table-driven cases for each way a field can be present or absent, and hypothesis properties over arbitrary
specs: the patch never names a key the model sets, and applying it (RFC 7386) fills every learned field the
model lacked while leaving every value anyone set as it was.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ome_selector.modelfiles import (
    LEARNABLE_FIELDS,
    ModelMetadata,
    NameVersion,
    describe_fill,
    fill_patch,
    missing_fields,
)

LLAMA = ModelMetadata(
    source="hf://meta-llama/Llama-3.2-3B-Instruct",
    parameter_count=3_212_749_824,
    estimated=False,
    model_format=NameVersion("safetensors", "1.0.0"),
    architecture="LlamaForCausalLM",
    framework=NameVersion("transformers", "4.45.0.dev0"),
    quantization=None,
    max_tokens=131072,
    files=(),
)
EVERYTHING = {
    "modelParameterSize": "3.21B",
    "modelFormat": {"name": "safetensors", "version": "1.0.0"},
    "modelArchitecture": "LlamaForCausalLM",
    "modelFramework": {"name": "transformers", "version": "4.45.0.dev0"},
    "maxTokens": 131072,
}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(None, EVERYTHING, id="no spec"),
        pytest.param({}, EVERYTHING, id="empty spec"),
        pytest.param(
            {"storage": {"storageUri": "hf://x/y"}, "disabled": False}, EVERYTHING, id="other fields only"
        ),
        pytest.param(dict(EVERYTHING), {}, id="complete"),
        pytest.param(
            {"modelParameterSize": "3B", "maxTokens": 4096},
            {
                key: value
                for key, value in EVERYTHING.items()
                if key not in ("modelParameterSize", "maxTokens")
            },
            id="a size and a context length someone set stay",
        ),
        pytest.param(
            {"modelParameterSize": None, "modelArchitecture": ""},
            EVERYTHING,
            id="null and empty strings are absent",
        ),
        pytest.param(
            {"modelParameterSize": "4b"} | {k: v for k, v in EVERYTHING.items() if k != "modelParameterSize"},
            {},
            id="a size that reads as 0 is still set",
        ),
        pytest.param(
            {"maxTokens": 0} | {k: v for k, v in EVERYTHING.items() if k != "maxTokens"},
            {},
            id="maxTokens 0 is set",
        ),
        pytest.param(
            {"modelFormat": {"name": "pytorch"}, "modelFramework": {"name": "vllm"}},
            {"modelParameterSize": "3.21B", "modelArchitecture": "LlamaForCausalLM", "maxTokens": 131072},
            id="a named format or framework is set, also without a version",
        ),
        pytest.param(
            {"modelFormat": {"version": "2.0.0"}, "modelFramework": {"name": "", "version": "9"}},
            {
                **EVERYTHING,
                "modelFormat": {"name": "safetensors"},
                "modelFramework": {"name": "transformers"},
            },
            id="without a name: only the name is filled, a version someone wrote stays",
        ),
        pytest.param(
            {"modelFormat": {"name": None, "operator": "Equal", "weight": 1}},
            EVERYTHING,
            id="CRD defaults in a nameless format do not block it",
        ),
        pytest.param(
            {"modelFormat": "safetensors", "modelFramework": ["transformers"]},
            {k: v for k, v in EVERYTHING.items() if k not in ("modelFormat", "modelFramework")},
            id="values the product cannot read count as set",
        ),
        pytest.param(["not", "a", "mapping"], {}, id="a spec that is not a mapping gets nothing"),
    ],
)
def test_only_absent_fields_are_filled(spec: Any, expected: dict[str, Any]) -> None:
    assert fill_patch(spec, LLAMA) == expected


def test_nothing_learned_is_nothing_to_fill() -> None:
    nothing = replace(
        LLAMA,
        parameter_count=None,
        model_format=None,
        architecture=None,
        framework=None,
        max_tokens=None,
    )
    assert fill_patch({}, nothing) == {}
    assert missing_fields({}) == LEARNABLE_FIELDS


def test_quantization_and_a_version_less_format_are_filled_as_learned() -> None:
    diffusers = replace(LLAMA, model_format=NameVersion("diffusers", None), quantization="fp8")
    patch = fill_patch({}, diffusers)
    assert patch["modelFormat"] == {"name": "diffusers"}
    assert patch["quantization"] == "fp8"


@pytest.mark.parametrize(
    ("spec", "missing"),
    [
        (None, LEARNABLE_FIELDS),
        ({}, LEARNABLE_FIELDS),
        (EVERYTHING | {"quantization": "fp8"}, ()),
        (EVERYTHING, ("quantization",)),
        (
            {"modelFormat": {"version": "1"}, "maxTokens": 0},
            tuple(f for f in LEARNABLE_FIELDS if f != "maxTokens"),
        ),
        ("garbage", ()),
    ],
)
def test_missing_fields(spec: Any, missing: tuple[str, ...]) -> None:
    assert missing_fields(spec) == missing


def test_describe_fill_lists_the_fields_in_order_and_says_estimated() -> None:
    patch = fill_patch({"modelArchitecture": "X"}, replace(LLAMA, estimated=True))
    assert describe_fill(patch, replace(LLAMA, estimated=True)) == [
        "modelParameterSize 3.21B (estimated from config.json)",
        "modelFormat safetensors 1.0.0",
        "modelFramework transformers 4.45.0.dev0",
        "maxTokens 131072",
    ]
    assert describe_fill({"modelFormat": {"name": "diffusers"}}) == ["modelFormat diffusers"]


# --- properties ---------------------------------------------------------------------------------------------

_leaf = st.one_of(st.none(), st.just(""), st.text(max_size=4), st.integers(-1, 10), st.booleans())
_name_version = st.one_of(
    _leaf,
    st.fixed_dictionaries({}, optional={"name": _leaf, "version": _leaf, "operator": _leaf}),
)
_specs = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {},
        optional={
            "modelParameterSize": _leaf,
            "modelFormat": _name_version,
            "modelArchitecture": _leaf,
            "modelFramework": _name_version,
            "quantization": _leaf,
            "maxTokens": _leaf,
            "disabled": st.booleans(),
        },
    ),
)
_optional_name_version = st.one_of(
    st.none(),
    st.builds(NameVersion, st.text(min_size=1, max_size=4), st.one_of(st.none(), st.text(max_size=4))),
)
_metadata = st.builds(
    ModelMetadata,
    source=st.just("hf://o/m"),
    parameter_count=st.one_of(st.none(), st.integers(0, 10**13)),
    estimated=st.booleans(),
    model_format=_optional_name_version,
    architecture=st.one_of(st.none(), st.text(max_size=4)),
    framework=_optional_name_version,
    quantization=st.one_of(st.none(), st.sampled_from(["int4", "fp8"])),
    max_tokens=st.one_of(st.none(), st.integers(1, 10**6)),
    files=st.just(()),
)


def _absent(value: Any) -> bool:
    return value is None or value == ""


def _leaves(document: Any, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    if isinstance(document, dict):
        found: dict[tuple[str, ...], Any] = {}
        for key, value in document.items():
            found |= _leaves(value, (*path, key))
        return found
    return {path: document}


def _merge(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch, as the apiserver applies it."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value)
    return result


@given(_specs, _metadata)
def test_the_patch_never_names_a_key_the_model_sets(spec: Any, metadata: ModelMetadata) -> None:
    patch = fill_patch(spec, metadata)
    for path, value in _leaves(patch).items():
        assert not _absent(value), (path, patch)  # the patch never deletes (null) nor blanks a field
        current: Any = spec or {}
        for key in path:
            current = current.get(key) if isinstance(current, dict) else None
        assert _absent(current), (path, spec, patch)


@given(_specs, _metadata)
def test_applying_the_patch_keeps_every_value_set_and_fills_what_was_learned(
    spec: Any, metadata: ModelMetadata
) -> None:
    patched = _merge(spec or {}, fill_patch(spec, metadata))
    for path, value in _leaves(spec or {}).items():
        if not _absent(value):
            assert _leaves(patched)[path] == value
    assert missing_fields(patched) == tuple(
        field for field in missing_fields(spec) if fill_patch({}, metadata).get(field) is None
    )
