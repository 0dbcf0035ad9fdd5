"""Reading objects from files for `kubectl ome-selector runtime explain -f` (SPEC §6, §1 "Loading from
files").

Table-driven: each case writes a small file tree, reads it as `-f` would, and checks the objects that end up
in the catalog, or the exact error message (which must name the file, and the field path for invalid objects).
"""

from __future__ import annotations

import io
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ome_selector.api.resources import Kind, ObjectKey, Runtime
from ome_selector.cli.sources import (
    FileSource,
    RawObject,
    SourceError,
    build_kustomization,
    load_catalog,
    parse_documents,
    read_catalog,
    redefinition_warnings,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
MALFORMED = REPO_ROOT / "tests" / "data" / "cli" / "malformed"


def cbm(name: str, extra: str = "") -> str:
    return (
        f"apiVersion: ome.io/v1beta1\nkind: ClusterBaseModel\nmetadata:\n  name: {name}\n"
        f"spec:\n  modelFormat:\n    name: safetensors\n{extra}"
    )


def csr(name: str) -> str:
    return (
        f"apiVersion: ome.io/v1beta1\nkind: ClusterServingRuntime\nmetadata:\n  name: {name}\n"
        "spec:\n  supportedModelFormats:\n    - modelFormat:\n        name: safetensors\n"
        "      autoSelect: true\n"
    )


def bm(name: str, namespace: str | None = None) -> str:
    ns = f"  namespace: {namespace}\n" if namespace else ""
    return f"apiVersion: ome.io/v1beta1\nkind: BaseModel\nmetadata:\n  name: {name}\n{ns}"


def key(kind: Kind, name: str, namespace: str | None = None) -> ObjectKey:
    return ObjectKey(kind, namespace, name)


CBM, CSR, BM, SR, ISVC = (
    Kind.CLUSTER_BASE_MODEL,
    Kind.CLUSTER_SERVING_RUNTIME,
    Kind.BASE_MODEL,
    Kind.SERVING_RUNTIME,
    Kind.INFERENCE_SERVICE,
)


@dataclass
class Case:
    id: str
    files: dict[str, str]
    paths: list[str]
    keys: set[ObjectKey] = field(default_factory=set)
    error: str | None = None
    namespace: str = "default"
    #: The warnings about objects defined more than once (SPEC §6), and which models the kept ones disable.
    warnings: list[str] = field(default_factory=list)
    disabled: set[ObjectKey] = field(default_factory=set)


CASES = [
    Case(
        "multi-document YAML, empty documents and comments dropped",
        {"a.yaml": f"# header\n---\n{cbm('m1')}---\n---\n{csr('r1')}\n---\n# trailing comment only\n"},
        ["a.yaml"],
        {key(CBM, "m1"), key(CSR, "r1")},
    ),
    Case(
        "kind: List is expanded, also nested, and null items are skipped",
        {
            "list.yaml": "apiVersion: v1\nkind: List\nitems:\n"
            "  - apiVersion: ome.io/v1beta1\n    kind: ClusterBaseModel\n    metadata: {name: m1}\n"
            "  - null\n"
            "  - apiVersion: v1\n    kind: List\n    items:\n"
            "      - apiVersion: ome.io/v1beta1\n        kind: ClusterServingRuntime\n"
            "        metadata: {name: r1}\n"
        },
        ["list.yaml"],
        {key(CBM, "m1"), key(CSR, "r1")},
    ),
    Case(
        "a List with items: null holds nothing",
        {"l.yaml": "apiVersion: v1\nkind: List\nitems: null\n"},
        ["l.yaml"],
    ),
    Case(
        "directories are read recursively: *.yaml, *.yml, *.json only",
        {
            "cat/a.yaml": cbm("m1"),
            "cat/sub/deeper/b.yml": csr("r1"),
            "cat/sub/c.json": '{"apiVersion": "ome.io/v1beta1", "kind": "ClusterBaseModel", '
            '"metadata": {"name": "m2"}}',
            "cat/sub/notes.txt": "not: [read",
            "cat/README.md": "# not read",
            "cat/d.yaml.bak": "not: [read",
        },
        ["cat"],
        {key(CBM, "m1"), key(CSR, "r1"), key(CBM, "m2")},
    ),
    Case(
        "a file named explicitly is read whatever its name",
        {"objects.txt": cbm("m1")},
        ["objects.txt"],
        {key(CBM, "m1")},
    ),
    Case(
        "a JSON file may hold several concatenated objects",
        {
            "s.json": '{"apiVersion": "ome.io/v1beta1", "kind": "ClusterBaseModel",\n'
            ' "metadata": {"name": "m1"}}\n'
            '{"apiVersion": "ome.io/v1beta1", "kind": "ClusterBaseModel", "metadata": {"name": "m2"}}\n'
        },
        ["s.json"],
        {key(CBM, "m1"), key(CBM, "m2")},
    ),
    Case("a file named twice is read once", {"a.yaml": cbm("m1")}, ["a.yaml", "a.yaml"], {key(CBM, "m1")}),
    Case(
        "a file named and also inside a named directory is read once",
        {"cat/a.yaml": cbm("m1")},
        ["cat/a.yaml", "cat", "./cat/"],
        {key(CBM, "m1")},
    ),
    Case(
        "two objects with one kind and name in two files: the later one is kept, with a warning naming both",
        {"one/a.yaml": cbm("m1"), "two/b.yaml": cbm("m1", "  disabled: true\n")},
        ["one", "two"],
        {key(CBM, "m1")},
        warnings=[
            "Warning: ClusterBaseModel m1 is defined twice: in one/a.yaml and in two/b.yaml; the last one is "
            "used, as kubectl apply leaves it"
        ],
        disabled={key(CBM, "m1")},
    ),
    Case(
        "the order of the -f arguments decides, not the names",
        {"one/a.yaml": cbm("m1"), "two/b.yaml": cbm("m1", "  disabled: true\n")},
        ["two", "one"],
        {key(CBM, "m1")},
        warnings=[
            "Warning: ClusterBaseModel m1 is defined twice: in two/b.yaml and in one/a.yaml; the last one is "
            "used, as kubectl apply leaves it"
        ],
    ),
    Case(
        "two objects with one kind and name in one file: each place names its document",
        {"a.yaml": f"{csr('r1')}---\n{cbm('m1')}---\n{csr('r1')}"},
        ["a.yaml"],
        {key(CSR, "r1"), key(CBM, "m1")},
        warnings=[
            "Warning: ClusterServingRuntime r1 is defined twice: in a.yaml (document 1) and in a.yaml "
            "(document 3); the last one is used, as kubectl apply leaves it"
        ],
    ),
    Case(
        "three definitions: one warning naming the three places, the last one kept",
        {"a.yaml": cbm("m1", "  disabled: true\n"), "b.yaml": cbm("m1"), "c.yaml": cbm("m1")},
        ["."],
        {key(CBM, "m1")},
        warnings=[
            "Warning: ClusterBaseModel m1 is defined 3 times: in ./a.yaml, in ./b.yaml and in ./c.yaml; the "
            "last one is used, as kubectl apply leaves it"
        ],
    ),
    Case(
        "many definitions: the warning names the first three and the last",
        {f"{index}.yaml": cbm("m1") for index in range(7)},
        ["."],
        {key(CBM, "m1")},
        warnings=[
            "Warning: ClusterBaseModel m1 is defined 7 times: in ./0.yaml, in ./1.yaml, in ./2.yaml, … "
            "and in ./6.yaml; the last one is used, as kubectl apply leaves it"
        ],
    ),
    Case(
        "kubectl's order: a subdirectory is walked where its name sorts, so a.yaml comes after a/",
        {"a/z.yaml": cbm("m1", "  disabled: true\n"), "a.yaml": cbm("m1"), "a-b.yaml": cbm("m2")},
        ["."],
        {key(CBM, "m1"), key(CBM, "m2")},
        warnings=[
            "Warning: ClusterBaseModel m1 is defined twice: in ./a/z.yaml and in ./a.yaml; the last one is "
            "used, as kubectl apply leaves it"
        ],
    ),
    Case(
        "one warning per object, in the order of their first definitions",
        {"a.yaml": f"{csr('r1')}---\n{cbm('m1')}", "b.yaml": f"{cbm('m1')}---\n{csr('r1')}"},
        ["a.yaml", "b.yaml"],
        {key(CSR, "r1"), key(CBM, "m1")},
        warnings=[
            "Warning: ClusterServingRuntime r1 is defined twice: in a.yaml (document 1) and in b.yaml "
            "(document 2); the last one is used, as kubectl apply leaves it",
            "Warning: ClusterBaseModel m1 is defined twice: in a.yaml (document 2) and in b.yaml "
            "(document 1); the last one is used, as kubectl apply leaves it",
        ],
    ),
    Case(
        "an invalid earlier definition is still an error (kubectl apply fails on it too)",
        {"a.yaml": cbm("m1", "  disabled: 'yes'\n"), "b.yaml": cbm("m1")},
        ["a.yaml", "b.yaml"],
        error="a.yaml: ClusterBaseModel m1: spec.disabled: must be a boolean, not 'yes' (str)",
    ),
    Case(
        "a namespaced object without metadata.namespace is in the -n namespace (so it can clash)",
        {"a.yaml": bm("m1"), "b.yaml": bm("m1", "team-a")},
        ["a.yaml", "b.yaml"],
        {key(BM, "m1", "team-a")},
        namespace="team-a",
        warnings=[
            "Warning: BaseModel team-a/m1 is defined twice: in a.yaml and in b.yaml; the last one is used, "
            "as kubectl apply leaves it"
        ],
    ),
    Case(
        "the same name in two namespaces, or as BaseModel and ClusterBaseModel, is no clash",
        {"a.yaml": bm("m1"), "b.yaml": bm("m1", "team-a"), "c.yaml": cbm("m1")},
        ["a.yaml", "b.yaml", "c.yaml"],
        {key(BM, "m1", "default"), key(BM, "m1", "team-a"), key(CBM, "m1")},
    ),
    Case(
        "metadata.namespace on a cluster-scoped object is ignored",
        {"a.yaml": cbm("m1").replace("  name: m1\n", "  name: m1\n  namespace: elsewhere\n")},
        ["a.yaml"],
        {key(CBM, "m1")},
    ),
    Case(
        "other kinds and apiVersions are skipped, also without a kind",
        {
            "mixed.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: ome-demo}\n---\n"
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: nope}\n---\n"
            "apiVersion: ome.io/v1alpha1\nkind: ClusterBaseModel\nmetadata: {name: old-version}\n---\n"
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [a.yaml]\n---\n"
            "apiVersion: ome.io/v1beta1\nkind: FineTunedWeight\nmetadata: {name: w}\n---\n"
            "just: a mapping\n---\n" + cbm("kept")
        },
        ["mixed.yaml"],
        {key(CBM, "kept")},
    ),
    Case(
        "null fields count as absent",
        {
            "nulls.yaml": "apiVersion: ome.io/v1beta1\nkind: ServingRuntime\n"
            "metadata: {name: r1, namespace: null, labels: null}\n"
            "spec:\n  disabled: null\n  modelSizeRange: null\n  acceleratorRequirements: null\n"
            "  supportedModelFormats:\n    - modelFormat: {name: safetensors, version: null, weight: null}\n"
            "      modelFramework: null\n      priority: null\n      autoSelect: null\n---\n"
            "apiVersion: ome.io/v1beta1\nkind: ClusterBaseModel\nmetadata: {name: m1}\nspec: null\n---\n"
            "apiVersion: ome.io/v1beta1\nkind: InferenceService\nmetadata: {name: i1, annotations: null}\n"
            "spec: {model: {name: m1}, runtime: null, engine: null}\n"
        },
        ["nulls.yaml"],
        {key(SR, "r1", "ns1"), key(CBM, "m1"), key(ISVC, "i1", "ns1")},
        namespace="ns1",
    ),
    Case(
        "unquoted dates stay strings (as the API server keeps them)",
        {
            "d.yaml": "apiVersion: ome.io/v1beta1\nkind: InferenceService\n"
            "metadata: {name: i1, deletionTimestamp: 2026-01-02T03:04:05Z}\nspec: {model: {name: m}}\n"
        },
        ["d.yaml"],
        {key(ISVC, "i1", "default")},
    ),
    Case(
        "a key given twice in a YAML mapping is an error (kubectl refuses it too)",
        {"a.yaml": cbm("m1").replace("  name: m1\n", "  name: m1\n  name: m2\n")},
        ["a.yaml"],
        error='a.yaml: invalid YAML: mapping key "name" already defined (line 5, column 3)',
    ),
    Case(
        "YAML merge keys may be overridden",
        {
            "a.yaml": "x: &base {name: m0}\n---\n"
            + cbm("m1").replace("metadata:\n", "metadata:\n  <<: {name: m0}\n")
        },
        ["a.yaml"],
        {key(CBM, "m1")},
    ),
    Case(
        "a key given twice in a JSON object is an error",
        {"a.json": '{"apiVersion": "ome.io/v1beta1", "kind": "ClusterBaseModel", "kind": "BaseModel"}'},
        ["a.json"],
        error='a.json: invalid JSON: mapping key "kind" already defined',
    ),
    Case("a path that does not exist", {}, ["missing.yaml"], error='the path "missing.yaml" does not exist'),
    Case(
        "an object whose items are not an array",
        {"l.yaml": "apiVersion: v1\nkind: List\nitems: {a: b}\n"},
        ["l.yaml"],
        error="l.yaml: items: must be an array, not an object",
    ),
    Case(
        "a List item that is not an object",
        {"l.yaml": "apiVersion: v1\nkind: List\nitems:\n  - just text\n"},
        ["l.yaml"],
        error="l.yaml: items[0]: must be an object, not 'just text' (str)",
    ),
    Case(
        "a scalar document among others names the document",
        {"a.yaml": f"{cbm('m1')}---\n42\n"},
        ["a.yaml"],
        error="a.yaml: document 2: must be an object, not 42 (int)",
    ),
    Case(
        "invalid objects name the file, the object and the field path",
        {"a.yaml": cbm("m1", "  modelParameterSize: 7\n")},
        ["a.yaml"],
        error="a.yaml: ClusterBaseModel m1: spec.modelParameterSize: must be a string, not 7 (int)",
    ),
    Case(
        "a file that is not UTF-8",
        {"a.yaml": "kind: \udcff"},
        ["a.yaml"],
        error="a.yaml: not UTF-8 text (byte 6)",
    ),
]


def _write(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8", "surrogateescape"))


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_reading_files(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, case.files)
    monkeypatch.chdir(tmp_path)
    source = FileSource(case.paths, case.namespace)
    if case.error is not None:
        with pytest.raises(SourceError) as caught:
            load_catalog(source.read(), source.namespace)
        assert str(caught.value) == case.error
        return
    catalog, redefined = read_catalog(source.read(), source.namespace)
    assert set(catalog.keys()) == case.keys
    assert redefinition_warnings(redefined) == case.warnings
    disabled = {m.key for m in catalog.models() if m.spec.disabled}
    assert disabled == case.disabled
    assert set(load_catalog(source.read(), source.namespace).keys()) == case.keys


MALFORMED_CASES = {
    "priority-zero.yaml": "ClusterServingRuntime bad-priority: spec.supportedModelFormats[0].priority: "
    "must be greater than or equal to 1, not 0 (int)",
    "size-not-a-string.yaml": "ClusterBaseModel bad-size: spec.modelParameterSize: "
    "must be a string, not 3.21 (float)",
    "missing-format-name.yaml": "ServingRuntime no-format-name: "
    "spec.supportedModelFormats[1].modelFormat.name: required value",
    "isvc-missing-model-name.yaml": "InferenceService no-model-name: spec.model.name: required value",
    "missing-name.yaml": "metadata.name: required value",
    "invalid-yaml.yaml": "invalid YAML: did not find expected key (line 5, column 2)",
    "invalid-json.json": "invalid JSON: "
    "Expecting property name enclosed in double quotes (line 2, column 33)",
    "not-an-object.yaml": "must be an object, not an array",
    "list-bad-item.yaml": "ClusterServingRuntime bad-disabled: items[1].spec.disabled: must be a boolean, "
    "not 'yes' (str)",
    "second-document-bad.yaml": "document 2: ClusterServingRuntime weight-as-text: "
    "spec.supportedModelFormats[0].modelFormat.weight: must be an integer, not '2' (str)",
    "list-items-not-a-list.yaml": "items: must be an array, not an object",
}


@pytest.mark.parametrize("name", sorted(MALFORMED_CASES))
def test_malformed_fixtures_name_the_file_and_the_field(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO_ROOT)
    relative = f"tests/data/cli/malformed/{name}"
    source = FileSource([relative])
    with pytest.raises(SourceError) as caught:
        load_catalog(source.read(), source.namespace)
    assert str(caught.value) == f"{relative}: {MALFORMED_CASES[name]}"


def test_every_malformed_fixture_has_a_case() -> None:
    assert sorted(path.name for path in MALFORMED.iterdir()) == sorted(MALFORMED_CASES)


def test_a_linked_file_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, {"real/a.yaml": cbm("m1")})
    (tmp_path / "link.yaml").symlink_to(tmp_path / "real" / "a.yaml")
    monkeypatch.chdir(tmp_path)
    source = FileSource(["real", "link.yaml"])
    assert source.files() == ["real/a.yaml"]
    assert set(load_catalog(source.read(), "default").keys()) == {key(CBM, "m1")}


def test_directories_are_walked_in_kubectls_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Go's filepath.Walk, as `kubectl apply -R -f` walks: each directory's entries by the bytes of their
    names, a subdirectory where its name sorts ("a" before "a-b.yaml" before "a.yaml"), upper case before
    lower case; only *.yaml, *.yml and *.json, by their exact suffix; a link to a directory not followed."""
    names = ["b.yaml", "a/z.yaml", "a/y/x.json", "a.yaml", "a-b.yaml", "B.yml", "a/c.YAML", "a/notes.txt"]
    _write(tmp_path, {name: cbm("m") for name in names})
    (tmp_path / "linked").symlink_to(tmp_path / "a")
    monkeypatch.chdir(tmp_path)
    assert FileSource(["."]).files() == [
        "./B.yml",
        "./a/y/x.json",
        "./a/z.yaml",
        "./a-b.yaml",
        "./a.yaml",
        "./b.yaml",
    ]


def test_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{cbm('m1')}---\n{csr('r1')}"))
    objects = FileSource(["-", "-"]).read()
    assert [raw.origin for raw in objects] == ["<stdin>", "<stdin>"]
    assert set(load_catalog(objects, "default").keys()) == {key(CBM, "m1"), key(CSR, "r1")}


def test_parse_documents_locates_list_items() -> None:
    text = f"{cbm('m0')}---\napiVersion: v1\nkind: List\nitems:\n  - {{kind: X}}\n  - {{kind: Y}}\n"
    located = [(raw.document, raw.path) for raw in parse_documents(text, "f.yaml")]
    assert located == [(1, ""), (2, "items[0]"), (2, "items[1]")]


def test_defaults_are_applied_as_the_crds_do() -> None:
    raw = RawObject(
        {
            "apiVersion": "ome.io/v1beta1",
            "kind": "ServingRuntime",
            "metadata": {"name": "r"},
            "spec": {
                "supportedModelFormats": [{"modelFormat": {"name": "onnx"}, "modelFramework": {"name": "t"}}]
            },
        },
        "r.yaml",
    )
    runtime = load_catalog([raw], "ns").get(key(SR, "r", "ns"))
    assert isinstance(runtime, Runtime)
    entry = runtime.spec.supported_model_formats[0]
    assert entry.priority == 1
    assert entry.auto_select is False
    assert entry.model_format is not None
    assert (entry.model_format.operator, entry.model_format.weight) == ("Equal", 1)


def _fake_kubectl(tmp_path: Path, script: str) -> Path:
    """A directory holding an executable ``kubectl`` running ``script`` (sh): stands in for kubectl where a
    test is about the bounds, not about kustomize (tests/integration/test_kubectl_files.py runs the real
    one)."""
    directory = tmp_path / "bin"
    directory.mkdir()
    kubectl = directory / "kubectl"
    kubectl.write_text(f"#!/bin/sh\n{script}\n")
    kubectl.chmod(0o755)
    return directory


@pytest.mark.parametrize(
    ("script", "limits", "error"),
    [
        (
            f"exec {shutil.which('sleep')} 30",
            {"timeout": 0.5},
            "kubectl kustomize {dir}: no result within 0.5 s",
        ),
        (
            f"exec {shutil.which('yes')} 'apiVersion: v1'",
            {"limit": 1 << 20},
            "kubectl kustomize {dir}: more than 1048576 bytes of output",
        ),
        (
            "echo 'error: accumulating resources: boom' >&2; exit 1",
            {},
            "kubectl kustomize {dir}: accumulating resources: boom",
        ),
        ("exit 3", {}, "kubectl kustomize {dir}: exit status 3"),
        ("printf '\\377'", {}, "kubectl kustomize {dir}: not UTF-8 text (byte 0)"),
    ],
    ids=["timeout", "too-much-output", "kustomize-error", "silent-failure", "not-utf8"],
)
def test_a_kustomization_build_is_bounded(
    script: str, limits: dict[str, float], error: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(_fake_kubectl(tmp_path, script)))
    with pytest.raises(SourceError) as caught:
        build_kustomization(str(tmp_path), **limits)  # type: ignore[arg-type]
    assert str(caught.value) == error.format(dir=tmp_path)


def test_a_kustomization_build_runs_kubectl_kustomize_without_a_kubeconfig(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", "/somewhere/secret")
    monkeypatch.setenv("PATH", str(_fake_kubectl(tmp_path, 'echo "args=$* kubeconfig=$KUBECONFIG"')))
    assert build_kustomization(str(tmp_path)) == f"args=kustomize {tmp_path} kubeconfig={os.devnull}\n"
