"""`kubectl ome-selector runtime lint` as a pull-request gate (SPEC §11): ``file:line`` on every finding,
``-o sarif`` (validated against the SARIF 2.1.0 schema) and ``-o github``, ``--disable`` and the
``ome-selector.ome.io/lint-disable`` annotation, unknown fields with a suggestion, DEAD001 summarised."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from cli_runner import REPO_ROOT, Run

from harness.ome_data import duplicate_warnings

SARIF_SCHEMA = REPO_ROOT / "tests" / "data" / "sarif" / "sarif-schema-2.1.0.json"
OME_CATALOG = REPO_ROOT / "tests" / "data" / "ome-catalog"
GOLDEN = REPO_ROOT / "tests" / "data" / "cli" / "golden"

TYPO = """\
apiVersion: ome.io/v1beta1
kind: ClusterBaseModel
metadata: {name: m}
spec:
  modelFormat: {name: safetensors}
  modelParameterSize: 4B
---
apiVersion: ome.io/v1beta1
kind: ClusterServingRuntime
metadata:
  name: rt
spec:
  supportedModelFormat:
    - modelFormat: {name: safetensors}
      autoSelect: true
  modelSizeRange: {min: 1B, max: 8B}
"""

UNKNOWN_FIELD = (
    "ClusterServingRuntime rt: unknown field spec.supportedModelFormat: no CRD declares it, so it is dropped "
    "or rejected and never read; did you mean supportedModelFormats?"
)
SERV001_M = (
    "ClusterBaseModel m (mt:safetensors, 4B): no runtime supports it; add or fix a runtime for it "
    "(kubectl ome-selector runtime explain --model m shows each runtime's reason)"
)
DEAD_RT = (
    "ClusterServingRuntime rt has no supportedModelFormats entry with autoSelect: true and no "
    "InferenceService names it; set autoSelect: true on the entry for the models it should serve, or delete "
    "it"
)
ONE_DEAD = "1 runtime is rank 1 for no model and no InferenceService uses it (--show DEAD001 lists it)"

# Two runtimes that tie on a model and overlap (SIZE003, RANK001), one with a bad operator (OPER001), a model
# whose size does not parse (SIZE001), all in a List, and an annotation that switches one code off.
MIXED = """\
apiVersion: v1
kind: List
items:
  - apiVersion: ome.io/v1beta1
    kind: ClusterBaseModel
    metadata: {name: llama}
    spec:
      modelFormat: {name: safetensors}
      modelParameterSize: 3B
  - apiVersion: ome.io/v1beta1
    kind: ClusterBaseModel
    metadata: {name: pending}
    spec:
      modelParameterSize: 7 b
  - apiVersion: ome.io/v1beta1
    kind: ClusterServingRuntime
    metadata:
      name: a
    spec:
      supportedModelFormats:
        - modelFormat: {name: safetensors}
          autoSelect: true
        - modelFormat: {name: onnx, version: "1", operator: Above}
      modelSizeRange: {min: 1B, max: 8B}
  - apiVersion: ome.io/v1beta1
    kind: ClusterServingRuntime
    metadata:
      name: b
      annotations:
        ome-selector.ome.io/lint-disable: "rank001, NOPE01"
    spec:
      supportedModelFormats:
        - modelFormat: {name: safetensors}
          autoSelect: true
      modelSizeRange:
        min: 1B
        max: 8B
"""


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@cache
def sarif_validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SARIF_SCHEMA.read_text())
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema)


def validate_sarif(text: str) -> dict[str, Any]:
    log: dict[str, Any] = json.loads(text)
    sarif_validator().validate(log)
    return log


def test_unknown_field_with_a_suggestion_at_its_line(kubectl_ome: Run, tmp_path: Path) -> None:
    """A typo of supportedModelFormats: an error at the typo's line, not only a misleading DEAD001."""
    path = write(tmp_path, "typo.yaml", TYPO)
    result = kubectl_ome("runtime", "lint", "-f", path, "--show", "DEAD001")
    assert result.code == 1
    width = len(path) + 3
    assert result.out == (
        f"CODE      SEVERITY   {'LOCATION'.ljust(width)}   MESSAGE\n"
        f"DEAD001   warning    {(path + ':8').ljust(width)}   {DEAD_RT}\n"
        f"SCHM001   error      {(path + ':13').ljust(width)}   {UNKNOWN_FIELD}\n"
        f"SERV001   warning    {(path + ':1').ljust(width)}   {SERV001_M}\n"
    )
    assert result.err == "1 error, 2 warnings (namespace default and cluster scope)\n"


def test_dead001_is_summarised_unless_shown(kubectl_ome: Run, tmp_path: Path) -> None:
    path = write(tmp_path, "typo.yaml", TYPO)
    result = kubectl_ome("runtime", "lint", "-f", path, "--disable", "SCHM001,SERV001")
    assert result.out == (
        f"CODE      SEVERITY   LOCATION   MESSAGE\nDEAD001   warning    -          {ONE_DEAD}\n"
    )
    # Summarised findings still count, and still fail --strict.
    assert (result.code, result.err) == (0, "0 errors, 1 warning (namespace default and cluster scope)\n")
    assert kubectl_ome("runtime", "lint", "-f", path, "--disable", "SCHM001,SERV001", "--strict").code == 1
    document = json.loads(kubectl_ome("runtime", "lint", "-f", path, "-o", "json").out)
    assert [f["code"] for f in document["findings"]] == ["SCHM001", "SERV001"]
    assert document["summarised"] == [
        {"code": "DEAD001", "severity": "warning", "count": 1, "message": ONE_DEAD}
    ]


def test_github_annotations(kubectl_ome: Run, tmp_path: Path) -> None:
    path = write(tmp_path, "typo.yaml", TYPO)
    result = kubectl_ome("runtime", "lint", "-f", path, "-o", "github")
    assert (result.code, result.err) == (1, "")
    assert result.out == (
        f"::error file={path},line=13,title=SCHM001::{UNKNOWN_FIELD}\n"
        f"::warning file={path},line=1,title=SERV001::{SERV001_M}\n"
        f"::warning title=DEAD001::{ONE_DEAD}\n"
    )


def test_github_annotations_escape_what_the_runner_reads(kubectl_ome: Run, tmp_path: Path) -> None:
    """A file name with a comma or a colon, and a message with a percent sign, stay one annotation each."""
    path = write(tmp_path, "a,b:c.yaml", TYPO.replace("name: rt", "name: rt%x"))
    result = kubectl_ome("runtime", "lint", "-f", path, "-o", "github", "--disable", "SERV001,DEAD001")
    escaped = path.replace(",", "%2C").replace(":", "%3A")
    assert result.out == (
        f"::error file={escaped},line=13,title=SCHM001::" + UNKNOWN_FIELD.replace("rt:", "rt%25x:", 1) + "\n"
    )


def test_locations_in_lists_and_of_fields(kubectl_ome: Run, tmp_path: Path) -> None:
    """Each finding at the line of its field: an operator in a List item, a size bound, and the model of a
    tie; --disable and the annotation switch findings off (the annotation for the findings its object is
    in: b's RANK001 with a, and nothing of a's alone)."""
    path = write(tmp_path, "mixed.yaml", MIXED)
    everything = kubectl_ome("runtime", "lint", "-f", path, "-o", "json")
    located = [(f["code"], f["location"]["line"]) for f in json.loads(everything.out)["findings"]]
    assert located == [("OPER001", 23), ("SIZE001", 14), ("SIZE003", 24)]
    assert everything.err == (
        f"warning: {path}:30: ClusterServingRuntime b: ome-selector.ome.io/lint-disable: "
        '"NOPE01" is not a lint code\n'
    )
    annotated = MIXED.replace('"rank001, NOPE01"', '""')
    unannotated = kubectl_ome("runtime", "lint", "-f", write(tmp_path, "plain.yaml", annotated), "-o", "json")
    assert [(f["code"], f["location"]["line"]) for f in json.loads(unannotated.out)["findings"]] == [
        ("OPER001", 23),
        ("RANK001", 4),
        ("SIZE001", 14),
        ("SIZE003", 24),
    ]
    assert unannotated.err == ""
    disabled = kubectl_ome(
        "runtime", "lint", "-f", path, "-o", "json", "--disable", "OPER001", "--disable", "size001"
    )
    assert [f["code"] for f in json.loads(disabled.out)["findings"]] == ["SIZE003"]
    assert disabled.code == 0


def test_a_json_file_locates_its_objects(kubectl_ome: Run, tmp_path: Path) -> None:
    objects = [
        {
            "apiVersion": "ome.io/v1beta1",
            "kind": "ClusterServingRuntime",
            "metadata": {"name": f"r{index}"},
            "spec": {"modelSizeRange": {"min": "4b"}},
        }
        for index in range(2)
    ]
    text = json.dumps(objects[0]) + "\n\n" + json.dumps(objects[1], indent=1) + "\n"
    path = write(tmp_path, "runtimes.json", text)
    result = kubectl_ome("runtime", "lint", "-f", path, "-o", "json", "--disable", "DEAD001")
    assert [(f["code"], f["location"]) for f in json.loads(result.out)["findings"]] == [
        ("SIZE001", {"file": path, "line": 1}),
        ("SIZE001", {"file": path, "line": 3}),
    ]


def test_unknown_codes_are_usage_errors(kubectl_ome: Run) -> None:
    for flag in ("--disable", "--show"):
        result = kubectl_ome("runtime", "lint", "-f", "samples/", flag, "DEAD001,DEAD01")
        assert (result.code, result.out) == (1, "")
        assert f'error: argument {flag}: unknown code "DEAD01" (the codes: DEAD001, ' in result.err


def test_sarif_is_valid_and_says_where(kubectl_ome: Run, tmp_path: Path) -> None:
    path = write(tmp_path, "mixed.yaml", MIXED.replace('"rank001, NOPE01"', '""'))
    result = kubectl_ome("runtime", "lint", "-f", path, "-o", "sarif")
    assert (result.code, result.err) == (1, "")
    log = validate_sarif(result.out)
    (run,) = log["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == sorted(rule["id"] for rule in rules)
    assert {rule["id"]: rule["defaultConfiguration"]["level"] for rule in rules}["SCHM001"] == "error"
    uri = Path(path).as_uri()
    tie = next(result for result in run["results"] if result["ruleId"] == "RANK001")
    assert tie["level"] == "warning"
    assert rules[tie["ruleIndex"]]["id"] == "RANK001"
    assert tie["locations"] == [
        {
            "physicalLocation": {"artifactLocation": {"uri": uri}, "region": {"startLine": 4}},
            "logicalLocations": [{"fullyQualifiedName": "ClusterBaseModel/llama", "kind": "object"}],
        }
    ]
    assert [related["logicalLocations"][0]["fullyQualifiedName"] for related in tie["relatedLocations"]] == [
        "ClusterServingRuntime/a",
        "ClusterServingRuntime/b",
    ]
    assert [related["physicalLocation"]["region"]["startLine"] for related in tie["relatedLocations"]] == [
        15,
        25,
    ]
    # b is rank 2 for the model: DEAD001, counted in a result without a location.
    assert [r["ruleId"] for r in run["results"]] == ["OPER001", "RANK001", "SIZE001", "SIZE003", "DEAD001"]
    assert "locations" not in run["results"][-1]


def test_sarif_of_a_relative_path_is_a_relative_reference(kubectl_ome: Run) -> None:
    result = kubectl_ome("runtime", "lint", "-f", "samples/", "-o", "sarif")
    log = validate_sarif(result.out)
    results = log["runs"][0]["results"]
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results if "locations" in r
    }
    assert uris == {
        "samples/10-cluster-base-models.yaml",
        "samples/21-cluster-serving-runtimes.yaml",
        "samples/22-serving-runtimes.yaml",
        "samples/40-demo-v13.yaml",
    }
    # The summary is a result without a location.
    (summary,) = [r for r in results if "locations" not in r]
    assert summary["ruleId"] == "DEAD001"
    assert summary["properties"] == {"count": 2}


def test_stdin_has_no_artifact_in_sarif(kubectl_ome: Run) -> None:
    result = kubectl_ome("runtime", "lint", "-f", "-", "-o", "sarif", stdin=TYPO)
    log = validate_sarif(result.out)
    located = [r for r in log["runs"][0]["results"] if r["ruleId"] == "SCHM001"]
    assert located[0]["locations"] == [
        {"logicalLocations": [{"fullyQualifiedName": "ClusterServingRuntime/rt", "kind": "object"}]}
    ]
    assert kubectl_ome("runtime", "lint", "-f", "-", "-o", "github", stdin=TYPO).out.startswith(
        "::error file=<stdin>,line=13,title=SCHM001::"
    )


# --- OME's published catalog --------------------------------------------------------------------------------


#: The four runtimes OME's published catalog defines in two files each, read as kubectl apply reads them.
REDEFINED = "".join(line + "\n" for line in duplicate_warnings("tests/data/ome-catalog"))


@pytest.fixture
def ome_catalog(monkeypatch: pytest.MonkeyPatch) -> str:
    """``tests/data/ome-catalog`` as vendored, read from the repository root."""
    monkeypatch.chdir(REPO_ROOT)
    return "tests/data/ome-catalog"


def test_ome_catalog_is_clean_and_dead_runtimes_take_one_line(kubectl_ome: Run, ome_catalog: str) -> None:
    result = kubectl_ome("runtime", "lint", "-f", ome_catalog)
    assert result.code == 0
    assert result.err == REDEFINED + "0 errors, 214 warnings (namespace default and cluster scope)\n"
    assert result.out == (GOLDEN / "lint-ome-catalog.table.txt").read_text()
    assert result.out.splitlines()[-1] == (
        "DEAD001    warning    -"
        + " " * 90
        + "178 runtimes are rank 1 for no model and no InferenceService uses "
        "them (--show DEAD001 lists them)"
    )
    assert result.out.count("\n") == 1 + 36 + 1
    # With the dead runtimes switched off, --strict fails on the 36 real warnings only.
    strict = kubectl_ome("runtime", "lint", "-f", ome_catalog, "--strict", "--disable", "DEAD001")
    assert strict.code == 1
    assert strict.err == REDEFINED + "0 errors, 36 warnings (namespace default and cluster scope)\n"
    shown = kubectl_ome("runtime", "lint", "-f", ome_catalog, "--show", "DEAD001", "-o", "json")
    document = json.loads(shown.out)
    assert sum(f["code"] == "DEAD001" for f in document["findings"]) == 178
    assert document["summarised"] == []


def test_ome_catalog_as_sarif(kubectl_ome: Run, ome_catalog: str) -> None:
    result = kubectl_ome("runtime", "lint", "-f", ome_catalog, "-o", "sarif")
    assert result.code == 0
    log = validate_sarif(result.out)
    results = log["runs"][0]["results"]
    assert len(results) == 36 + 1
    assert all(r["level"] == "warning" for r in results)
    assert all(
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].startswith("tests/data/ome-catalog/")
        for r in results[:-1]
    )
