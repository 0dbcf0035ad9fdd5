"""`kubectl ome status` from files: rows, the runtime column, outputs, bad input (live: tests/integration)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from cli_runner import Run
from hypothesis import given
from hypothesis import strategies as st

from ome_selector.cli.status import StatusRow, status_row
from ome_selector.selection.messages import runtime_selected, runtime_specified, selected_runtime


def _isvc(spec: Any = None, conditions: Any = None, **metadata: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "chat", "namespace": "team-a", **metadata},
        "spec": spec if spec is not None else {"model": {"name": "llama"}},
    }
    if conditions is not None:
        body["status"] = {"conditions": conditions}
    return body


def _ready(status: str, reason: str, message: str | None = None) -> dict[str, Any]:
    condition = {"type": "RuntimeReady", "status": status, "reason": reason}
    return condition | ({"message": message} if message is not None else {})


EMPTY = json.dumps({"apiVersion": "v1", "kind": "List", "items": []})
SELECTED = "selected ClusterServingRuntime rt (score 4)"
NAMESPACED = "selected ServingRuntime team-rt (score 2)"
NONE = "no runtime supports model llama"
READY = {"type": "Ready", "status": "True", "reason": "Up", "message": "selected ServingRuntime x (score 9)"}


@pytest.mark.parametrize(
    ("body", "runtime", "source", "kind", "status", "reason", "message"),
    [
        # auto-selected: the runtime comes from the condition ome-selector wrote (SPEC §5)
        (
            _isvc(conditions=[READY, _ready("True", "RuntimeSelected", SELECTED)]),
            "rt", "selected", "ClusterServingRuntime", "True", "RuntimeSelected",
            "selected ClusterServingRuntime rt (score 4)",
        ),
        (
            _isvc(conditions=[_ready("True", "RuntimeSelected", NAMESPACED)]),
            "team-rt", "selected", "ServingRuntime", "True", "RuntimeSelected",
            "selected ServingRuntime team-rt (score 2)",
        ),
        # named: spec.runtime wins; OME v1.3 writes RuntimeResolved without a message
        (
            _isvc({"model": {"name": "llama"}, "runtime": {"name": "srt", "kind": "ServingRuntime"}},
                  [_ready("True", "RuntimeResolved")]),
            "srt", "named", "ServingRuntime", "True", "RuntimeResolved", None,
        ),
        (
            _isvc({"runtime": {"name": "srt"}}, [_ready("False", "RuntimeNotFound", "srt not found")]),
            "srt", "named", None, "False", "RuntimeNotFound", "srt not found",
        ),
        # no runtime: none named, none selected (another condition's message is never read)
        (
            _isvc(conditions=[READY, _ready("False", "RuntimeNotFound", NONE)]),
            None, None, None, "False", "RuntimeNotFound", NONE,
        ),
        (_isvc(), None, None, None, None, None, None),
        # anything malformed reads as absent
        (_isvc({"model": "m", "runtime": {"name": 7}}, "conditions"), None, None, None, None, None, None),
        (
            _isvc(conditions=["x", {"type": "RuntimeReady", "status": 1, "message": "selected x (score 1)"}]),
            None, None, None, None, None, "selected x (score 1)",
        ),
    ],
)  # fmt: skip
def test_a_row_per_inference_service(
    body: dict[str, Any],
    runtime: str | None,
    source: str | None,
    kind: str | None,
    status: str | None,
    reason: str | None,
    message: str | None,
) -> None:
    model = body["spec"]["model"].get("name") if isinstance(body["spec"].get("model"), dict) else None
    assert status_row(body) == StatusRow(
        "team-a", "chat", model, runtime, source, kind, status, reason, message
    )


LISTING = {
    "apiVersion": "v1",
    "kind": "List",
    "items": [
        _isvc(conditions=[_ready("True", "RuntimeSelected", SELECTED)]),
        _isvc(
            {"model": {"name": "qwen"}, "runtime": {"name": "gone"}},
            [
                _ready(
                    "False",
                    "RuntimeNotFound",
                    "runtime gone not found in namespace ome-demo or at cluster scope",
                )
            ],
            name="pinned",
            namespace="ome-demo",
        ),
        {"apiVersion": "ome.io/v1beta1", "kind": "ClusterServingRuntime", "metadata": {"name": "rt"}},
    ],
}


def test_table_wide_and_json_from_a_saved_listing(kubectl_ome: Run) -> None:
    text = json.dumps(LISTING)
    table = kubectl_ome("status", "-f", "-", stdin=text)
    assert (table.code, table.err) == (0, "")
    assert table.out == (
        "NAMESPACE   NAME     MODEL   RUNTIME   RUNTIMEREADY   REASON\n"
        "ome-demo    pinned   qwen    gone      False          RuntimeNotFound\n"
        "team-a      chat     llama   rt        True           RuntimeSelected\n"
    )
    wide = kubectl_ome("status", "-f", "-", "-n", "team-a", "-o", "wide", stdin=text)
    assert wide.out == (
        "NAME   MODEL   RUNTIME   RUNTIMEREADY   REASON            MESSAGE\n"
        f"chat   llama   rt        True           RuntimeSelected   {SELECTED}\n"
    )
    document = json.loads(kubectl_ome("status", "-f", "-", "-o", "json", stdin=text).out)
    assert document["items"][0] == {
        "namespace": "ome-demo",
        "name": "pinned",
        "model": "qwen",
        "runtime": "gone",
        "runtime_source": "named",
        "runtime_kind": None,
        "status": "False",
        "reason": "RuntimeNotFound",
        "message": "runtime gone not found in namespace ome-demo or at cluster scope",
    }
    assert [item["name"] for item in document["items"]] == ["pinned", "chat"]


def test_nothing_found_and_bad_input(kubectl_ome: Run) -> None:
    empty = kubectl_ome("status", "-f", "-", "-n", "nowhere", stdin=json.dumps(LISTING))
    assert (empty.code, empty.out, empty.err) == (0, "", "No InferenceServices found in namespace nowhere.\n")
    assert (
        kubectl_ome("status", "-f", "-", "-o", "json", "-n", "x", stdin=EMPTY).out == '{\n  "items": []\n}\n'
    )
    both = kubectl_ome("status", "-f", "-", "-l", "app=chat", stdin="")
    assert (both.code, both.out) == (1, "")
    assert both.err == "error: -l selects from the cluster; it cannot be combined with -f\n"
    broken = kubectl_ome("status", "-f", "-", stdin="{{{")
    assert broken.code == 1
    assert broken.err.startswith("error: <stdin>")
    usage = kubectl_ome("status", "-n", "a", "-A")
    assert usage.code == 1


@given(
    kind=st.sampled_from(["ServingRuntime", "ClusterServingRuntime"]),
    name=st.from_regex(r"[a-z0-9]([a-z0-9.-]{0,60}[a-z0-9])?", fullmatch=True),
    score=st.integers(min_value=0, max_value=10**6),
)
def test_the_selected_runtime_is_read_back_from_its_message(kind: str, name: str, score: int) -> None:
    assert selected_runtime(runtime_selected(kind, name, score)) == (kind, name)
    assert selected_runtime(runtime_specified(kind, name)) is None
