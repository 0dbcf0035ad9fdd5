"""The one manifest reader (SPEC §1 "Loading from files", §6): YAML and JSON streams, ``kind: List``, strict
keys, and hostile text (deep nesting, huge numbers, alias bombs) refused clearly at bounded cost."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ome_selector.api.loading import LoadError
from ome_selector.api.manifests import MAX_DEPTH, load_manifest, read_manifest
from ome_selector.api.resources import InferenceService, Kind

CBM = "apiVersion: ome.io/v1beta1\nkind: ClusterBaseModel\nmetadata: {name: %s}\n"


@dataclass
class Case:
    id: str
    text: str
    located: list[tuple[int | None, str]] | None = None  # (document, path) of each object
    error: str | None = None
    json: bool = False


CASES = [
    Case("one document", CBM % "a", [(None, "")]),
    Case(
        "empty documents and comments are dropped; documents are counted without them",
        f"# head\n---\n{CBM % 'a'}---\n---\n{CBM % 'b'}---\n# only a comment\n",
        [(1, ""), (2, "")],
    ),
    Case(
        "kind: List is expanded, nested Lists too, null items skipped",
        "kind: List\nitems:\n  - {kind: A}\n  - null\n  - kind: List\n    items: [{kind: B}, {kind: C}]\n",
        [(None, "items[0]"), (None, "items[2].items[0]"), (None, "items[2].items[1]")],
    ),
    Case("a List with items: null holds nothing", "kind: List\nitems: null\n", []),
    Case(
        "a List among other documents",
        f"{CBM % 'a'}---\nkind: List\nitems: [{{kind: A}}]\n",
        [(1, ""), (2, "items[0]")],
    ),
    Case(
        "a List's items must be an array",
        "kind: List\nitems: {a: b}\n",
        error="items: must be an array, not an object",
    ),
    Case(
        "a List item must be an object",
        "kind: List\nitems:\n  - just text\n",
        error="items[0]: must be an object, not 'just text' (str)",
    ),
    Case(
        "a document must be an object; several documents are numbered",
        f"{CBM % 'a'}---\n42\n",
        error="document 2: must be an object, not 42 (int)",
    ),
    Case("an array document", "- a\n- b\n", error="must be an object, not an array"),
    Case(
        "a key given twice is an error",
        "kind: A\nmetadata:\n  name: a\n  name: b\n",
        error='invalid YAML: mapping key "name" already defined (line 4, column 3)',
    ),
    Case(
        "merge keys may be overridden",
        "base: &base {name: m0, x: 1}\nmetadata:\n  <<: *base\n  name: m1\n",
        [(None, "")],
    ),
    Case("invalid YAML", "a: [", error="invalid YAML: did not find expected node content (line 2, column 1)"),
    Case(
        "a JSON stream of several values",
        '{"kind": "A"}\n{"kind": "B"}  [{"kind": "C"}]',
        error="document 3: must be an object, not an array",
        json=True,
    ),
    Case("JSON values", '{"kind": "A"}\n\n{"kind": "B"}\n', [(1, ""), (2, "")], json=True),
    Case(
        "a key given twice in JSON",
        '{"kind": "A", "kind": "B"}',
        error='invalid JSON: mapping key "kind" already defined',
        json=True,
    ),
    Case(
        "invalid JSON",
        '{"kind": "A",\n "x": }',
        error="invalid JSON: Expecting value (line 2, column 7)",
        json=True,
    ),
    Case(
        "a number longer than Python reads",
        "kind: A\nx: " + "9" * 5000 + "\n",
        error="invalid YAML: a number is too long to read",
    ),
    Case(
        "a JSON number longer than Python reads",
        '{"kind": "A", "x": ' + "9" * 5000 + "}",
        error="invalid JSON: a number is too long to read",
        json=True,
    ),
    Case(
        "a List repeated through an alias",
        "kind: List\nitems:\n  - &l {kind: List, items: [{kind: A}]}\n  - *l\n",
        error="items[1]: a List may appear only once (this one is repeated through a YAML alias)",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_reading(case: Case) -> None:
    if case.error is not None:
        with pytest.raises(LoadError) as caught:
            read_manifest(case.text, json_stream=case.json)
        assert str(caught.value) == case.error
        return
    objects = read_manifest(case.text, json_stream=case.json)
    assert [(item.document, item.path) for item in objects] == case.located


def test_merge_keys_are_merged() -> None:
    (item,) = read_manifest("base: &base {name: m0, x: 1}\nmetadata:\n  <<: *base\n  name: m1\n")
    assert item.body["metadata"] == {"name": "m1", "x": 1}


def test_dates_stay_strings() -> None:
    (item,) = read_manifest("metadata: {deletionTimestamp: 2026-01-02T03:04:05Z}\nday: 2026-01-02\n")
    assert item.body["metadata"]["deletionTimestamp"] == "2026-01-02T03:04:05Z"
    assert item.body["day"] == "2026-01-02"


# --- loading the five kinds from a manifest -----------------------------------------------------------------


def test_load_manifest_expands_lists_and_skips_other_kinds() -> None:
    text = """
apiVersion: v1
kind: List
items:
  - apiVersion: ome.io/v1beta1
    kind: ClusterServingRuntime
    metadata: {name: a}
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: c}
---
---
apiVersion: ome.io/v1beta1
kind: BaseModel
metadata: {name: m}
spec:
  modelFormat: {name: safetensors, version: "1.0.0"}
  modelParameterSize: 3.21B
"""
    resources = load_manifest(text, default_namespace="team")
    assert [r.key for r in resources] == [
        (Kind.CLUSTER_SERVING_RUNTIME, None, "a"),
        (Kind.BASE_MODEL, "team", "m"),
    ]


def test_load_manifest_errors_name_the_document_and_the_field() -> None:
    text = """
apiVersion: ome.io/v1beta1
kind: ClusterBaseModel
metadata: {name: ok}
---
apiVersion: ome.io/v1beta1
kind: ClusterServingRuntime
metadata: {name: rt}
spec:
  supportedModelFormats:
    - modelFormat: {name: x, version: 1.0}
"""
    with pytest.raises(LoadError) as caught:
        load_manifest(text)
    error = caught.value
    assert (error.document, error.path) == (2, "spec.supportedModelFormats[0].modelFormat.version")
    assert str(error) == (
        "document 2: spec.supportedModelFormats[0].modelFormat.version: must be a string, not 1.0 (float)"
    )


def test_load_manifest_list_item_errors() -> None:
    text = """
kind: List
items:
  - {apiVersion: ome.io/v1beta1, kind: ClusterBaseModel, metadata: {name: a}, spec: {disabled: 1}}
"""
    with pytest.raises(LoadError) as caught:
        load_manifest(text)
    assert caught.value.path == "items[0].spec.disabled"


def test_load_manifest_reads_json_streams() -> None:
    text = (
        '{"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": {"name": "s"},'
        ' "spec": {"model": {"name": "m"}}}'
        '{"apiVersion": "ome.io/v1beta1", "kind": "ClusterBaseModel", "metadata": {"name": "m"}}'
    )
    isvc, model = load_manifest(text, json_stream=True, default_namespace="ns")
    assert isinstance(isvc, InferenceService)
    assert (isvc.key, model.key) == (
        (Kind.INFERENCE_SERVICE, "ns", "s"),
        (Kind.CLUSTER_BASE_MODEL, None, "m"),
    )


# --- hostile text -------------------------------------------------------------------------------------------


def nested(depth: int, *, json: bool = False) -> str:
    """A document ``depth`` levels deep: the top mapping, then ``depth - 1`` nested arrays."""
    inner = "[" * (depth - 1) + "]" * (depth - 1)
    return f'{{"kind": {inner}}}' if json else f"kind: {inner}\n"


@pytest.mark.parametrize("json", [False, True])
def test_nesting_up_to_the_limit_is_read(json: bool) -> None:
    assert len(read_manifest(nested(MAX_DEPTH, json=json), json_stream=json)) == 1


@pytest.mark.parametrize("json", [False, True])
@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 5_000, 200_000])
def test_deeper_nesting_is_refused(json: bool, depth: int) -> None:
    with pytest.raises(LoadError, match=r"nest|nesting depth"):
        read_manifest(nested(depth, json=json), json_stream=json)


def test_block_nesting_is_refused() -> None:
    text = "".join("  " * level + "a:\n" for level in range(MAX_DEPTH + 1)) + "  " * (MAX_DEPTH + 1) + "x\n"
    with pytest.raises(LoadError, match=f"nested deeper than {MAX_DEPTH} levels"):
        read_manifest(text)


def test_an_alias_bomb_is_read_in_linear_time() -> None:
    # 40 levels that each repeat the one below twice: 2**40 leaves if the sharing were expanded. The depth
    # check visits each shared container once, so this reads at once (an exponential walk would never end).
    lines = ["l0: &l0 [x, x]"] + [f"l{i}: &l{i} [*l{i - 1}, *l{i - 1}]" for i in range(1, 40)]
    (item,) = read_manifest("\n".join(lines) + "\nkind: Bomb\n")
    assert item.body["kind"] == "Bomb"


@given(st.text(max_size=200))
def test_any_text_reads_or_fails_with_a_load_error(text: str) -> None:
    for json in (False, True):
        with contextlib.suppress(LoadError):  # anything else fails the test
            read_manifest(text, json_stream=json)


def test_positions_of_objects_and_fields() -> None:
    """1-based lines, read from the parser's marks (SPEC §11 file:line): each document's object, each item of
    a List, a field, an array item, a merged key where it is written, and the deepest key found for a field
    that is not in the text."""
    text = (
        "kind: List\n"  # 1
        "items:\n"
        "  - kind: A\n"  # 3
        "    spec:\n"
        "      sizes: [1,\n"  # 5
        "        2]\n"  # 6
        "---\n"
        "# a comment\n"
        "base: &base {merged: 1}\n"  # 9
        "spec:\n"  # 10
        "  <<: *base\n"
        "  own: 2\n"  # 12
    )
    first, second = read_manifest(text)
    assert first.positions is not None
    assert second.positions is not None
    assert (first.path, first.positions.line, second.positions.line) == ("items[0]", 3, 9)
    assert first.positions.line_of(("spec", "sizes", 1)) == 6
    assert first.positions.line_of(("spec", "missing", "deeper")) == 4
    assert second.positions.line_of(("spec", "own")) == 12
    assert second.positions.line_of(("spec", "merged")) == 9
    assert second.positions.line_of(()) == 9


def test_positions_of_json_values() -> None:
    objects = read_manifest('{"kind": "A"}\n\n  {"kind":\n "B"}\n{"kind": "C"}', json_stream=True)
    assert [item.positions.line for item in objects if item.positions is not None] == [1, 3, 5]
    # JSON has no field positions: a field is at its object's line.
    assert objects[1].positions is not None
    assert objects[1].positions.line_of(("kind",)) == 3
