"""Layout of explain's output (SPEC §6): kubectl columns, `-` for empty cells, the JSON/YAML document."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from ome_selector.api.loading import load_resource
from ome_selector.api.resources import Model
from ome_selector.catalog.catalog import Catalog
from ome_selector.cli.render import COLUMNS, WIDE_COLUMNS, render, render_table, table_rows
from ome_selector.selection.explain import Explanation, explain


def _runtime(name: str, *, namespace: str | None = None, **spec: Any) -> dict[str, Any]:
    kind = "ServingRuntime" if namespace else "ClusterServingRuntime"
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    entry = {"modelFormat": {"name": "safetensors"}, "autoSelect": True}
    return {"apiVersion": "ome.io/v1beta1", "kind": kind, "metadata": metadata,
            "spec": {"supportedModelFormats": [entry], **spec}}  # fmt: skip


def _explanation(
    *runtimes: dict[str, Any], size: str | None = "3B", framework: str | None = None
) -> Explanation:
    model_body: dict[str, Any] = {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterBaseModel",
        "metadata": {"name": "m"},
        "spec": {"modelFormat": {"name": "safetensors"}, "modelParameterSize": size},
    }
    if framework is not None:
        model_body["spec"]["modelFramework"] = {"name": framework}
    resources = [load_resource(body, default_namespace="ns") for body in (model_body, *runtimes)]
    catalog = Catalog.from_resources(r for r in resources if r is not None)
    model = catalog.resolve_model("ns", "m")
    assert isinstance(model, Model)
    return explain(catalog, model, "ns")


def test_columns_are_aligned_three_spaces_apart_and_the_last_is_not_padded() -> None:
    text = render_table(("A", "BBBB", "C"), [("xxxxxx", "y", "z z"), ("-", "-", "-")])
    assert text == "A        BBBB   C\nxxxxxx   y      z z\n-        -      -\n"


def test_rows_use_dash_and_yes_no() -> None:
    """Entries without a framework score weight x priority = 1 (SPEC §4); the namespaced one ranks first."""
    explanation = _explanation(
        _runtime("ranged", modelSizeRange={"min": "2B"}),
        _runtime("off", disabled=True),
        _runtime("local", namespace="ns"),
    )
    assert table_rows(explanation, wide=True) == [
        ("local", "Namespaced", "Yes", "1", "1", "1", "Yes", "1", "-", "-"),
        ("ranged", "Cluster", "Yes", "1", "1", "1", "Yes", "2", "[2B, inf)", "-"),
        ("off", "Cluster", "No", "1", "1", "1", "No", "-", "-", "runtime is disabled"),
    ]
    assert table_rows(explanation) == [
        ("local", "Namespaced", "Yes", "1", "1", "-"),
        ("ranged", "Cluster", "Yes", "1", "1", "-"),
        ("off", "Cluster", "No", "1", "1", "runtime is disabled"),
    ]


def test_a_runtime_without_matching_entry_has_no_priority() -> None:
    other = _runtime("onnx-only")
    other["spec"]["supportedModelFormats"][0]["modelFormat"]["name"] = "onnx"
    [row] = table_rows(_explanation(other))
    assert row[3:5] == ("-", "0")
    [wide] = table_rows(_explanation(other), wide=True)
    assert wide[3:6] == ("-", "0", "-")  # no matching entry: no WEIGHT either


# SPEC §6: WEIGHT is OME's explain column — the matching entry's modelFormat.weight if above 0, plus its
# modelFramework.weight if above 0, times the priority; no 10/5 fallback, so it is not the SCORE (§4).
WEIGHT_CASES = [
    pytest.param({"weight": 3}, None, 2, None, ("2", "6", "6"), id="format-weight-times-priority"),
    pytest.param({"weight": 0}, None, 1, None, ("1", "10", "0"), id="zero-weight-no-fallback"),
    pytest.param({"weight": -2}, None, 3, None, ("3", "-6", "0"), id="negative-weight-not-counted"),
    pytest.param(
        {"weight": 0}, {"name": "transformers", "weight": 4}, 2, "transformers", ("2", "28", "8"),
        id="zero-format-weight-with-a-framework-weight",
    ),
    pytest.param(
        {"weight": 2}, {"name": "transformers", "weight": 4}, 2, "transformers", ("2", "12", "12"),
        id="both-weights-and-a-model-framework",
    ),
    pytest.param(
        {}, {"name": "transformers", "weight": 0}, 1, "transformers", ("1", "6", "1"),
        id="default-format-weight-1-zero-framework-weight",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("fmt", "framework", "priority", "model_framework", "cells"), WEIGHT_CASES)
def test_weight_column(
    fmt: dict[str, Any],
    framework: dict[str, Any] | None,
    priority: int,
    model_framework: str | None,
    cells: tuple[str, str, str],
) -> None:
    body = _runtime("w")
    entry = body["spec"]["supportedModelFormats"][0]
    entry["modelFormat"].update(fmt)
    entry["priority"] = priority
    if framework is not None:
        entry["modelFramework"] = framework
    explanation = _explanation(body, framework=model_framework)
    [row] = table_rows(explanation, wide=True)
    assert row[3:6] == cells  # PRIORITY, SCORE, WEIGHT
    document = json.loads(render(explanation, "json"))
    assert document["runtimes"][0]["weight"] == int(cells[2])


@pytest.mark.parametrize(("output", "header"), [("table", COLUMNS), ("wide", WIDE_COLUMNS)])
def test_header(output: str, header: tuple[str, ...]) -> None:
    first_line = render(_explanation(_runtime("r")), output).splitlines()[0]
    assert first_line.split() == list(header)


def test_wide_adds_weight_after_score_then_supports_rank_and_range_and_keeps_reason_last() -> None:
    assert [c for c in WIDE_COLUMNS if c not in COLUMNS] == ["WEIGHT", "SUPPORTS", "RANK", "RANGE"]
    assert WIDE_COLUMNS[WIDE_COLUMNS.index("SCORE") + 1] == "WEIGHT"
    assert WIDE_COLUMNS[-1] == COLUMNS[-1] == "REASON"


def test_no_runtimes_gives_no_table_but_a_document() -> None:
    explanation = _explanation(size=None)
    assert render(explanation, "table") == ""
    assert render(explanation, "wide") == ""
    expected: dict[str, Any] = {
        "model": {"kind": "ClusterBaseModel", "name": "m", "namespace": None, "modelParameterSize": None},
        "selected": None,
        "runtimes": [],
    }
    assert json.loads(render(explanation, "json")) == expected
    assert yaml.safe_load(render(explanation, "yaml")) == expected


def test_empty_size_is_null_in_the_document() -> None:
    document = json.loads(render(_explanation(size=""), "json"))
    assert document["model"]["modelParameterSize"] is None


def test_yaml_keeps_the_key_order_and_does_not_wrap() -> None:
    long_name = "r" * 150
    text = render(_explanation(_runtime(long_name)), "yaml")
    assert text.splitlines()[:3] == ["model:", "  kind: ClusterBaseModel", "  name: m"]
    assert f"  name: {long_name}" in text
