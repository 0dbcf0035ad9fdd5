"""Reporting lint's findings (SPEC §11): codes switched off, DEAD001 summarised, and where a finding is when
its object was read from the cluster (no file): JSON, SARIF 2.1.0 (schema-valid) and GitHub annotations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from ome_selector.api.resources import Kind, ObjectKey
from ome_selector.review.lint import Code, Finding, field_findings
from ome_selector.review.report import (
    LINT_DISABLE_ANNOTATION,
    Location,
    Summary,
    annotation_codes,
    github_annotations,
    json_document,
    parse_codes,
    sarif_log,
    summarise,
    suppress,
)

SCHEMA = Path(__file__).resolve().parents[2] / "data" / "sarif" / "sarif-schema-2.1.0.json"
A = ObjectKey(Kind.CLUSTER_SERVING_RUNTIME, None, "a")
B = ObjectKey(Kind.SERVING_RUNTIME, "ns", "b")
M = ObjectKey(Kind.CLUSTER_BASE_MODEL, None, "m")

TIE = Finding(Code.RANK001, (M, A, B), "tie", M)
DEAD_A = Finding(Code.DEAD001, (A,), "dead a", A)
DEAD_B = Finding(Code.DEAD001, (B,), "dead b", B)
SIZE = Finding(Code.SIZE001, (A,), "size", A, ("spec", "modelSizeRange", "min"))


@pytest.mark.parametrize(
    ("text", "known", "unknown"),
    [
        ("DEAD001", {Code.DEAD001}, ()),
        (" dead001 , SIZE002,,", {Code.DEAD001, Code.SIZE002}, ()),
        ("DEAD01,SIZE002,x", {Code.SIZE002}, ("DEAD01", "x")),
        ("", set(), ()),
    ],
)
def test_parse_codes(text: str, known: set[Code], unknown: tuple[str, ...]) -> None:
    assert parse_codes(text) == (frozenset(known), unknown)


@pytest.mark.parametrize(
    ("body", "codes"),
    [
        ({"metadata": {"annotations": {LINT_DISABLE_ANNOTATION: "RANK001"}}}, {Code.RANK001}),
        ({"metadata": {"annotations": {LINT_DISABLE_ANNOTATION: 7}}}, set()),
        ({"metadata": {"annotations": "nope"}}, set()),
        ({"metadata": None}, set()),
        ({}, set()),
    ],
)
def test_annotation_codes(body: dict[str, Any], codes: set[Code]) -> None:
    assert annotation_codes(body)[0] == codes


def test_suppress() -> None:
    findings = [TIE, DEAD_A, DEAD_B, SIZE]
    assert suppress(findings, {Code.DEAD001}) == (TIE, SIZE)
    # An object switches a code off for every finding it is part of, and only that code.
    assert suppress(findings, (), {B: {Code.RANK001}}) == (DEAD_A, DEAD_B, SIZE)
    assert suppress(findings, (), {A: {Code.DEAD001}}) == (TIE, DEAD_B, SIZE)


def test_summarise() -> None:
    listed, summaries = summarise([TIE, DEAD_A, DEAD_B, SIZE])
    assert listed == (TIE, SIZE)
    assert summaries == (Summary(Code.DEAD001, 2),)
    assert summaries[0].message == (
        "2 runtimes are rank 1 for no model and no InferenceService uses them (--show DEAD001 lists them)"
    )
    assert Summary(Code.DEAD001, 1).message == (
        "1 runtime is rank 1 for no model and no InferenceService uses it (--show DEAD001 lists it)"
    )
    assert summarise([TIE, DEAD_A], {Code.DEAD001}) == ((TIE, DEAD_A), ())
    assert summarise([TIE]) == ((TIE,), ())


def cluster(_: object) -> Location:
    return Location(None)


def test_objects_from_the_cluster_have_no_file() -> None:
    findings = [TIE, SIZE]
    summaries = [Summary(Code.DEAD001, 2)]
    document = json_document(findings, summaries, cluster)
    assert [f["location"] for f in document["findings"]] == [None, None]
    assert github_annotations(findings, summaries, cluster) == [
        "::warning title=RANK001::tie",
        "::error title=SIZE001::size",
        "::warning title=DEAD001::2 runtimes are rank 1 for no model and no InferenceService uses them "
        "(--show DEAD001 lists them)",
    ]
    log = sarif_log(findings, summaries, cluster, cluster, version="0.1.0")
    schema = json.loads(SCHEMA.read_text())
    jsonschema.validators.validator_for(schema)(schema).validate(log)
    results = log["runs"][0]["results"]
    assert results[0]["locations"] == [
        {"logicalLocations": [{"fullyQualifiedName": "ClusterBaseModel/m", "kind": "object"}]}
    ]
    assert [r["logicalLocations"][0]["fullyQualifiedName"] for r in results[0]["relatedLocations"]] == [
        "ClusterServingRuntime/a",
        "ServingRuntime/ns/b",
    ]


def test_a_schema_invalid_log_is_caught() -> None:
    """The validation the format tests rely on does reject a log SARIF 2.1.0 forbids."""
    log = sarif_log([SIZE], [], cluster, cluster, version="0.1.0")
    log["runs"][0]["results"][0]["level"] = "fatal"
    schema = json.loads(SCHEMA.read_text())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validators.validator_for(schema)(schema).validate(log)


def test_field_findings_carry_the_field() -> None:
    body = {"kind": "ClusterServingRuntime", "metadata": {"name": "a"}, "spec": {"modelSizeRang": {}}}
    (finding,) = field_findings(A, body)
    assert (finding.code, finding.subject, finding.field) == (Code.SCHM001, A, ("spec", "modelSizeRang"))
    assert finding.message == (
        "ClusterServingRuntime a: unknown field spec.modelSizeRang: no CRD declares it, so it is dropped or "
        "rejected and never read; did you mean modelSizeRange?"
    )
    long = {"kind": "ClusterServingRuntime", "spec": {"x" * 100: 1}}
    (cut,) = field_findings(A, long)
    assert f"unknown field spec.{'x' * 64}…: " in cut.message
    assert cut.message.endswith("; remove it or correct its name")
    in_a_map = {
        "kind": "ClusterServingRuntime",
        "spec": {
            "supportedModelFormats": [
                {"diffusionPipeline": {"additionalComponents": {"k" * 100: {"libary": "x"}}}}
            ]
        },
    }
    (deep,) = field_findings(A, in_a_map)
    assert deep.message.startswith(
        "ClusterServingRuntime a: unknown field spec.supportedModelFormats[0].diffusionPipeline."
        f"additionalComponents.{'k' * 64}….libary: "
    )
    assert deep.message.endswith("did you mean library?")
